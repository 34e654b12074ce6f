import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { createApp } from '../../api/app';
import type { OidcConfig } from '../../config';
import { testAppDeps } from '../support/app';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startTestProvider, type TestProvider } from '../support/oidcProvider';
import { person, signIn } from './support';

/**
 * Single sign-on with OpenID Connect (issue 27) against a real provider (oidc-provider on 127.0.0.1, in this process):
 * Herald's redirect, the provider's login and consent, the callback, the code exchange with PKCE, and the session it
 * opens, all over real HTTP with a cookie jar per site, as a browser would.
 */

/** A browser: cookies per origin (name → value; paths are ignored, which only lets more through), redirects followed by hand. */
class Browser {
  jar = new Map<string, Map<string, string>>();

  async get(url: string): Promise<Response> {
    const { origin } = new URL(url);
    const cookies = [...(this.jar.get(origin) ?? new Map()).entries()].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(url, { redirect: 'manual', headers: cookies ? { cookie: cookies } : {} });
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';');
      const [name, ...rest] = pair!.split('=');
      const jar = this.jar.get(origin) ?? new Map<string, string>();
      const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a));
      if (expired) jar.delete(name!.trim()); else jar.set(name!.trim(), rest.join('='));
      this.jar.set(origin, jar);
    }
    return res;
  }

  /** Follows redirects from `url` until one leaves for a page of Herald's console (`/app/…`), and answers it. */
  async follow(url: string, stopAt: (url: URL) => boolean = (u) => u.pathname.startsWith('/app/')): Promise<{ location: URL; chain: string[] }> {
    const chain: string[] = [];
    let next = new URL(url);
    for (let hops = 0; hops < 20; hops++) {
      chain.push(next.href);
      const res = await this.get(next.href);
      const location = res.headers.get('location');
      if (res.status < 300 || res.status >= 400 || !location) throw new Error(`${next.href} answered ${res.status} ${await res.text()} after ${chain.join(' → ')}`);
      next = new URL(location, next);
      if (stopAt(next)) return { location: next, chain };
    }
    throw new Error(`too many redirects: ${chain.join(' → ')}`);
  }

  cookie(origin: string, name: string): string | undefined {
    return this.jar.get(origin)?.get(name);
  }
}

/** A Herald API listening on 127.0.0.1, its PUBLIC_URL its own address (the provider redirects the browser there). */
async function startHerald(db: TestDatabase, oidc: (publicUrl: string) => OidcConfig | false, log = pino({ level: 'silent' })) {
  const server: Server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  server.on('request', createApp(testAppDeps(db.knex, { publicUrl: url, oidc: oidc(url), log })).callback());
  return { url, server, close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) };
}

let db: TestDatabase;
let op: TestProvider;
let herald: Awaited<ReturnType<typeof startHerald>>;
let open: Awaited<ReturnType<typeof startHerald>>;
let off: Awaited<ReturnType<typeof startHerald>>;
const logged: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  op = await startTestProvider();
  const log = pino({ level: 'info' }, new Writable({ write(chunk, _enc, done) { logged.push(String(chunk)); done(); } }));
  // A confidential client (secret) without sign-up, and a public one (PKCE alone) with sign-up.
  herald = await startHerald(db, (url) => {
    op.addClient({ id: 'herald', secret: 'herald-client-secret', redirectUri: `${url}/auth/oidc/callback` });
    return { issuer: op.issuer, clientId: 'herald', clientSecret: 'herald-client-secret', scopes: 'openid email profile', allowSignup: false };
  }, log);
  open = await startHerald(db, (url) => {
    op.addClient({ id: 'herald-public', redirectUri: `${url}/auth/oidc/callback` });
    return { issuer: op.issuer, clientId: 'herald-public', scopes: 'openid email profile', allowSignup: true };
  });
  off = await startHerald(db, () => false);
});
afterAll(async () => {
  await Promise.all([herald?.close(), open?.close(), off?.close()]);
  await op?.close();
  await db?.close();
});

let n = 0;
/** A person the provider knows (sub → claims); with an account at Herald when `account` is true. */
async function providerPerson(opts: { verified?: boolean; account?: boolean } = {}) {
  const email = `sso${++n}-${Date.now()}@example.org`;
  const sub = `sub-${n}`;
  op.accounts.set(sub, { email: email.toUpperCase(), email_verified: opts.verified ?? true, name: `SSO Person ${n}` });
  const user = opts.account === false ? undefined : await person(db.knex, {}, { email });
  return { sub, email, user };
}

async function sessionOf(base: string, browser: Browser) {
  const cookie = browser.cookie(base, 'herald_session');
  const res = await fetch(`${base}/auth/session`, { headers: cookie ? { cookie: `herald_session=${cookie}` } : {} });
  return { status: res.status, body: (await res.json()) as { data: { user: { email: string; name: string }; projects: unknown[] } } };
}

test('the whole flow: Herald → provider (login, consent) → callback → a session that GET /auth/session accepts', async () => {
  const p = await providerPerson();
  op.nextLogin = p.sub;
  const browser = new Browser();

  const start = await browser.get(`${herald.url}/auth/oidc/login`);
  expect(start.status).toBe(302);
  const authorize = new URL(start.headers.get('location')!);
  expect(authorize.origin).toBe(op.issuer);
  expect(Object.fromEntries(authorize.searchParams)).toMatchObject({
    response_type: 'code', client_id: 'herald', redirect_uri: `${herald.url}/auth/oidc/callback`, scope: 'openid email profile',
    code_challenge_method: 'S256', code_challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), state: expect.any(String), nonce: expect.any(String),
  });
  expect(authorize.searchParams.has('code_verifier')).toBe(false);
  const flowCookie = start.headers.getSetCookie().find((c) => c.startsWith('herald_oidc='))!;
  expect(flowCookie).toMatch(/^herald_oidc=[A-Za-z0-9_.-]+; Max-Age=600; Path=\/auth\/oidc; HttpOnly; SameSite=Lax$/);

  const { location, chain } = await browser.follow(authorize.href);
  expect(location.href).toBe(`${herald.url}/app/`);
  expect(chain.at(-1)).toMatch(new RegExp(`^${herald.url}/auth/oidc/callback\\?code=`));
  expect(browser.cookie(herald.url, 'herald_oidc')).toBeUndefined(); // one flow, one callback
  const who = await sessionOf(herald.url, browser);
  expect(who.status).toBe(200);
  expect(who.body.data.user.email).toBe(p.email);

  // Replaying the callback (the same code and state, the flow cookie gone) opens nothing.
  const replay = await new Browser().follow(chain.at(-1)!, (u) => u.pathname.startsWith('/app/'));
  expect(replay.location.pathname + replay.location.search).toBe('/app/login?error=state');
  // Nothing the provider issued reaches the logs.
  const code = new URL(chain.at(-1)!).searchParams.get('code')!;
  expect(logged.join('')).not.toContain(code);
});

test('a tampered state is refused, and so is a callback without the flow cookie', async () => {
  const p = await providerPerson();
  op.nextLogin = p.sub;
  const browser = new Browser();
  const start = await browser.get(`${herald.url}/auth/oidc/login`);
  const authorize = new URL(start.headers.get('location')!);
  authorize.searchParams.set('state', `${authorize.searchParams.get('state')}x`);
  // The provider hands the tampered state back; Herald's cookie holds the real one.
  const { location } = await browser.follow(authorize.href);
  expect(location.pathname + location.search).toBe('/app/login?error=state');
  expect(browser.cookie(herald.url, 'herald_session')).toBeUndefined();

  // A forged flow cookie (not sealed by Herald) is no better than none.
  const forged = await fetch(`${herald.url}/auth/oidc/callback?code=abc&state=s`, { redirect: 'manual', headers: { cookie: 'herald_oidc=eyJzdGF0ZSI6InMifQ.AAAA' } });
  expect(forged.headers.get('location')).toBe('/app/login?error=state');
  const bare = await fetch(`${herald.url}/auth/oidc/callback`, { redirect: 'manual' });
  expect(bare.status).toBe(302);
  expect(bare.headers.get('location')).toBe('/app/login?error=state');
});

test('a flow cookie older than ten minutes opens nothing, even with the right state and a fresh code', async () => {
  const p = await providerPerson();
  op.nextLogin = p.sub;
  const browser = new Browser();
  const { location } = await browser.follow(`${herald.url}/auth/oidc/login`, (u) => u.pathname === '/auth/oidc/callback');
  const now = Date.now();
  const clock = jest.spyOn(Date, 'now').mockReturnValue(now + 11 * 60_000); // Herald reads the cookie's expiry before anything else
  try {
    const late = await browser.get(location.href);
    expect(late.headers.get('location')).toBe('/app/login?error=state');
  } finally {
    clock.mockRestore();
  }
  expect(browser.cookie(herald.url, 'herald_session')).toBeUndefined();
});

test('an address the provider did not verify is refused', async () => {
  const p = await providerPerson({ verified: false });
  op.nextLogin = p.sub;
  const browser = new Browser();
  const { location } = await browser.follow(`${herald.url}/auth/oidc/login`);
  expect(location.pathname + location.search).toBe('/app/login?error=email_unverified');
  expect(browser.cookie(herald.url, 'herald_session')).toBeUndefined();
});

test('an unknown address is refused unless sign-up is allowed; then a first login creates an account without projects', async () => {
  const p = await providerPerson({ account: false });
  op.nextLogin = p.sub;
  const refused = await new Browser().follow(`${herald.url}/auth/oidc/login`);
  expect(refused.location.pathname + refused.location.search).toBe('/app/login?error=no_account');
  expect(await db.knex('users').where({ email: p.email }).first()).toBeUndefined();

  const browser = new Browser();
  const { location } = await browser.follow(`${open.url}/auth/oidc/login`);
  expect(location.href).toBe(`${open.url}/app/`);
  const who = await sessionOf(open.url, browser);
  expect(who.status).toBe(200);
  expect(who.body.data.user).toMatchObject({ email: p.email, name: expect.stringMatching(/^SSO Person/) });
  expect(who.body.data.projects).toEqual([]);
  const row = await db.knex('users').where({ email: p.email }).first();
  expect(row.password_hash).toBeNull(); // no password to guess: the provider is the only way in until one is set
  // A second login finds the same account.
  const again = new Browser();
  await again.follow(`${open.url}/auth/oidc/login`);
  expect((await sessionOf(open.url, again)).status).toBe(200);
  expect(Number((await db.knex('users').where({ email: p.email }).count('* as n'))[0]!.n)).toBe(1);
});

test('a single sign-on that brings an old session cookie ends the old session, as a password login does', async () => {
  const p = await providerPerson();
  op.nextLogin = p.sub;
  const old = (await signIn(herald.server, p.email)).split('=')[1]!;
  const browser = new Browser();
  browser.jar.set(herald.url, new Map([['herald_session', old]]));
  await browser.follow(`${herald.url}/auth/oidc/login`);
  expect(browser.cookie(herald.url, 'herald_session')).not.toBe(old);
  expect((await sessionOf(herald.url, browser)).status).toBe(200);
  expect((await fetch(`${herald.url}/auth/session`, { headers: { cookie: `herald_session=${old}` } })).status).toBe(401);
});

test('a disabled account is refused, as an unknown one', async () => {
  const p = await providerPerson();
  await db.knex('users').where({ id: p.user!.id }).update({ disabled: true });
  op.nextLogin = p.sub;
  const { location } = await new Browser().follow(`${herald.url}/auth/oidc/login`);
  expect(location.pathname + location.search).toBe('/app/login?error=no_account');
});

test('the provider\'s refusal (access_denied) lands on the login page with a code, nothing more', async () => {
  await providerPerson();
  op.nextLogin = 'deny';
  const { location } = await new Browser().follow(`${herald.url}/auth/oidc/login`);
  expect(location.pathname + location.search).toBe('/app/login?error=provider');
  expect(logged.join('')).not.toContain('The person said no');
});

test('the provider requires PKCE: no code challenge is refused, and the code is worth nothing without its verifier', async () => {
  const p = await providerPerson();
  op.nextLogin = p.sub;
  const browser = new Browser();
  const start = await browser.get(`${herald.url}/auth/oidc/login`);
  const authorize = new URL(start.headers.get('location')!);

  // The same request without code_challenge: the provider refuses it (back to Herald with error=invalid_request).
  const bare = new URL(authorize);
  bare.searchParams.delete('code_challenge');
  bare.searchParams.delete('code_challenge_method');
  const refused = await new Browser().follow(bare.href, (u) => u.pathname === '/auth/oidc/callback');
  expect(refused.location.searchParams.get('error')).toBe('invalid_request');

  // A real code, exchanged at the token endpoint by someone who has the client secret but not the verifier.
  const { location } = await browser.follow(authorize.href, (u) => u.pathname === '/auth/oidc/callback');
  const code = location.searchParams.get('code')!;
  const exchange = (extra: Record<string, string>) => fetch(`${op.issuer}/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: `${herald.url}/auth/oidc/callback`, client_id: 'herald', client_secret: 'herald-client-secret', ...extra }) });
  const without = await exchange({});
  expect(without.status).toBe(400);
  expect(((await without.json()) as { error: string }).error).toBe('invalid_grant');
  const wrong = await exchange({ code_verifier: 'x'.repeat(43) });
  expect(wrong.status).toBe(400);
});

test('GET /auth/providers says whether SSO is on; with it off, the login route lands on the login page', async () => {
  const on = await fetch(`${herald.url}/auth/providers`);
  expect(await on.json()).toEqual({ success: true, data: { oidc: { enabled: true, loginUrl: '/auth/oidc/login' } } });
  const none = await fetch(`${off.url}/auth/providers`);
  expect(await none.json()).toEqual({ success: true, data: { oidc: { enabled: false, loginUrl: null } } });
  const start = await fetch(`${off.url}/auth/oidc/login`, { redirect: 'manual' });
  expect(start.status).toBe(302);
  expect(start.headers.get('location')).toBe('/app/login?error=unavailable');
  const callback = await fetch(`${off.url}/auth/oidc/callback?code=x&state=y`, { redirect: 'manual' });
  expect(callback.headers.get('location')).toBe('/app/login?error=unavailable');
});

test('an unreachable provider lands on the login page (unavailable), not a 500', async () => {
  const dead = await startHerald(db, () => ({ issuer: 'http://127.0.0.1:9', clientId: 'x', scopes: 'openid', allowSignup: false }));
  try {
    const res = await fetch(`${dead.url}/auth/oidc/login`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/app/login?error=unavailable');
  } finally {
    await dead.close();
  }
});
