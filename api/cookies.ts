import type { Context } from 'koa';

/**
 * The session cookie of people signed in (issue 27). `HttpOnly`: no script reads it (an XSS cannot steal it);
 * `SameSite=Lax`: a cross-site POST does not carry it (and the Origin check refuses one that does:
 * api/middleware/auth.ts); `Secure` whenever PUBLIC_URL is https; `Path=/`: the console and the API share it.
 * Written by hand rather than with Koa's ctx.cookies.set, which refuses `Secure` on a plain-HTTP hop behind a TLS
 * proxy unless the proxy is trusted.
 */
export const SESSION_COOKIE = 'herald_session';

const attributes = (secure: boolean) => `Path=/; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;

export function sessionCookie(token: string, maxAgeSeconds: number, secure: boolean): string {
  return `${SESSION_COOKIE}=${token}; Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}; ${attributes(secure)}`;
}

export function clearedSessionCookie(secure: boolean): string {
  return `${SESSION_COOKIE}=; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; ${attributes(secure)}`;
}

export const sessionTokenOf = (ctx: Context): string | undefined => ctx.cookies.get(SESSION_COOKIE) || undefined;

/**
 * Whether a request comes from Herald's own origin (cross-site request forgery): its `Origin` is PUBLIC_URL's origin
 * or the address it was sent to; without `Origin`, `Sec-Fetch-Site: same-origin`. Neither header: refused, as a
 * browser sends one of them on every request that changes something (an old client or a script sends keys instead).
 */
export function fromOwnOrigin(ctx: Context, publicOrigin: string): boolean {
  const origin = ctx.get('origin');
  // The address the request was sent to, from Host; not ctx.origin, which Koa 3 takes from the Origin header itself.
  if (origin) return origin === publicOrigin || origin === `${ctx.protocol}://${ctx.host}`;
  return ctx.get('sec-fetch-site') === 'same-origin';
}

/** The origin of PUBLIC_URL (`https://mail.example.com`), as browsers write `Origin`. */
export const originOf = (url: string): string => new URL(url).origin;

/**
 * The single sign-on flow's cookie (people/oidc.ts: the sealed PKCE verifier, state and nonce), from the redirect to
 * the provider until its callback. `Path=/auth/oidc`: sent to the callback only; `SameSite=Lax`: the callback is a
 * top-level GET navigation from the provider's site, which Lax lets through and Strict would not; `HttpOnly`; ten
 * minutes at most, and cleared by the callback whatever its outcome (one flow, one callback).
 */
export const OIDC_FLOW_COOKIE = 'herald_oidc';

export function oidcFlowCookie(value: string, maxAgeSeconds: number, secure: boolean): string {
  return `${OIDC_FLOW_COOKIE}=${value}; Max-Age=${maxAgeSeconds}; Path=/auth/oidc; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

export function clearedOidcFlowCookie(secure: boolean): string {
  return `${OIDC_FLOW_COOKIE}=; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Path=/auth/oidc; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}
