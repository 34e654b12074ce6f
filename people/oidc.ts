import { signToken, verifyToken } from '../mail/tokens';
import type { Knex } from 'knex';
import type { OidcConfig } from '../config';
import type { Logger } from '../logging/logger';
import { normaliseEmail } from '../core/values';
import { endSessionByToken, startSession, type SessionLifetimes } from './sessions';
import { findOrCreateSsoUser, findUserByEmail } from './users';

/**
 * Single sign-on with OpenID Connect (issue 27): the authorization code flow with PKCE (S256), `state` and `nonce`,
 * through `openid-client` v6 (a certified relying party; it checks the ID token's signature, issuer, audience, expiry
 * and nonce, and the PKCE exchange, so that none of that is ours to get wrong). openid-client is ESM only: it is loaded
 * with a dynamic import (this project is CommonJS; Jest transforms it: jest.config.js).
 *
 * Where the flow's secrets wait between the redirect and the callback: in a short-lived cookie (api/cookies.ts
 * oidcFlowCookie), sealed with an HMAC of the installation secret, rather than in a database row. The cookie binds the
 * flow to the browser that started it (a row would need a cookie to find it anyway), costs no write for an anonymous
 * GET (a flood of /auth/oidc/login fills no table) and needs no clean-up; the HMAC stops a cookie planted by a
 * sibling subdomain from choosing the state and verifier. The PKCE verifier in it is no secret from that browser: it
 * only has to stay out of the authorization redirect, which it does.
 *
 * Refusals are codes (`OidcRefusal`), shown to the browser as `/app/login?error=<code>` and logged without tokens or
 * claims beyond the reason.
 */

export type OidcRefusal =
  /** No flow cookie, an expired or forged one, or a `state` that is not the cookie's (a forged callback). */
  | 'state'
  /** The provider answered an error, or the code exchange or the ID token's checks failed. */
  | 'provider'
  /** The provider does not vouch for the address (`email_verified` is not true), or gave none. */
  | 'email_unverified'
  /** No account of that address (and sign-up is off), or a disabled one: told apart by nothing, as the login. */
  | 'no_account'
  /** SSO is not configured, or the provider cannot be reached. */
  | 'unavailable';

export type OidcOutcome = { refused: OidcRefusal } | { session: { id: string; token: string; expiresAt: Date }; userId: string };

/** The flow cookie lives ten minutes: long enough to sign in at the provider, short enough to be worth nothing later. */
export const FLOW_SECONDS = 600;
export const CALLBACK_PATH = '/auth/oidc/callback';
export const LOGIN_PATH = '/auth/oidc/login';

interface Flow { verifier: string; state: string; nonce: string; expires: number }

type Client = typeof import('openid-client');
// The dynamic import stays an import() in CommonJS output (module nodenext), so Node loads the ES module.
const loadClient = (): Promise<Client> => import('openid-client');

/** Whether the issuer is on this machine: only then may discovery and the exchange use plain HTTP (tests, development). */
const isLoopbackUrl = (url: string): boolean => ['127.0.0.1', 'localhost', '[::1]'].includes(new URL(url).hostname);

/** The purpose the flow cookie is signed for (mail/tokens.ts): no other signed token passes for it. */
const FLOW_PURPOSE = 'oidc-flow';

export function oidcService(deps: { knex: Knex; config?: OidcConfig; publicUrl: string; secret: Buffer; sessions: SessionLifetimes; log: Logger }) {
  const { knex, config, log } = deps;
  const redirectUri = `${deps.publicUrl}${CALLBACK_PATH}`;
  let discovered: Promise<import('openid-client').Configuration> | undefined;

  /**
   * The provider's metadata, fetched once and kept; a failure is forgotten so that the next login tries again. The
   * issuer is the operator's setting, not a tenant's input, so these calls do not go through the webhooks' private
   * address guard (outbound/); plain HTTP is allowed only to a loopback issuer (config/index.ts refuses any other).
   */
  async function configuration() {
    if (!config) throw new Error('OIDC is not configured');
    discovered ??= (async () => {
      const client = await loadClient();
      const auth = config.clientSecret ? client.ClientSecretPost(config.clientSecret) : client.None();
      const insecure = new URL(config.issuer).protocol === 'http:' && isLoopbackUrl(config.issuer);
      return client.discovery(new URL(config.issuer), config.clientId, config.clientSecret, auth,
        insecure ? { execute: [client.allowInsecureRequests] } : undefined);
    })();
    return discovered.catch((err: unknown) => { discovered = undefined; throw err; });
  }

  // Signed as the links in mail are (mail/tokens.ts), for a purpose of its own: only this installation writes a flow.
  const seal = (flow: Flow): string => signToken(deps.secret, FLOW_PURPOSE, Buffer.from(JSON.stringify(flow)));
  const unseal = (value: string | undefined): Flow | undefined => {
    if (!value || value.length > 2048) return undefined;
    const payload = verifyToken(deps.secret, FLOW_PURPOSE, value);
    if (!payload) return undefined;
    try {
      const flow = JSON.parse(payload.toString()) as Flow;
      return flow.expires > Date.now() ? flow : undefined;
    } catch {
      return undefined;
    }
  };

  return {
    enabled: config !== undefined,
    loginPath: LOGIN_PATH,

    /** The redirect to the provider and the sealed flow (the cookie's value), or a refusal when it cannot be reached. */
    async start(): Promise<{ url: string; flow: string } | { refused: OidcRefusal }> {
      let conf;
      try {
        conf = await configuration();
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'oidc: the provider\'s discovery failed');
        return { refused: 'unavailable' };
      }
      const client = await loadClient();
      const flow: Flow = { verifier: client.randomPKCECodeVerifier(), state: client.randomState(), nonce: client.randomNonce(), expires: Date.now() + FLOW_SECONDS * 1000 };
      const url = client.buildAuthorizationUrl(conf, {
        redirect_uri: redirectUri, scope: config!.scopes, response_type: 'code',
        code_challenge: await client.calculatePKCECodeChallenge(flow.verifier), code_challenge_method: 'S256',
        state: flow.state, nonce: flow.nonce,
      });
      return { url: url.href, flow: seal(flow) };
    },

    /**
     * The callback: the flow cookie and the provider's answer (the callback's query string). The code is exchanged
     * with the verifier; openid-client checks state, the ID token (signature, iss, aud, exp, nonce); then the verified
     * address names the account, and a session opens as at a password login (people/sessions.ts startSession).
     */
    async finish(input: { query: string; flow: string | undefined; address: string; userAgent?: string; previousToken?: string }): Promise<OidcOutcome> {
      if (!config) return { refused: 'unavailable' };
      const flow = unseal(input.flow);
      const params = new URLSearchParams(input.query);
      if (!flow || params.get('state') !== flow.state) {
        log.info('oidc: a callback without its flow cookie or with another state was refused');
        return { refused: 'state' };
      }
      if (params.has('error')) {
        // The provider's error code only (access_denied…): its description may echo anything.
        log.info({ error: params.get('error')?.slice(0, 64) }, 'oidc: the provider answered an error');
        return { refused: 'provider' };
      }
      let claims: Record<string, unknown>;
      try {
        const conf = await configuration();
        const client = await loadClient();
        const callback = new URL(redirectUri);
        callback.search = params.toString();
        const tokens = await client.authorizationCodeGrant(conf, callback,
          { pkceCodeVerifier: flow.verifier, expectedState: flow.state, expectedNonce: flow.nonce, idTokenExpected: true });
        const id = tokens.claims()!;
        claims = { ...id };
        // Providers put email in the ID token or only in the userinfo answer (oidc-provider, for the code flow): ask
        // userinfo when the ID token lacks it, checking that it speaks of the same subject.
        if (typeof id.email !== 'string' || id.email_verified === undefined) {
          claims = { ...(await client.fetchUserInfo(conf, tokens.access_token, id.sub)), ...claims };
        }
      } catch (err) {
        // The library's message and code, never the tokens (its errors do not carry them in the message).
        log.warn({ err: (err as Error).message, code: (err as { code?: string }).code }, 'oidc: the code exchange or the ID token check failed');
        return { refused: 'provider' };
      }
      const email = typeof claims.email === 'string' ? normaliseEmail(claims.email) : undefined;
      if (!email || claims.email_verified !== true) {
        log.info('oidc: the provider did not vouch for an address (email_verified is not true)');
        return { refused: 'email_unverified' };
      }
      const name = typeof claims.name === 'string' ? claims.name.slice(0, 200) : '';
      const user = config.allowSignup ? await findOrCreateSsoUser(knex, email, name) : await findUserByEmail(knex, email);
      if (!user || user.disabled) {
        log.info('oidc: no account (or a disabled one) for the address the provider named');
        return { refused: 'no_account' };
      }
      const session = await startSession(knex, user.id, deps.sessions, { address: input.address, userAgent: input.userAgent });
      // As at a password login: the session the browser had before ends, so that a login never keeps an old id alive.
      if (input.previousToken) await endSessionByToken(knex, input.previousToken);
      return { session, userId: user.id };
    },
  };
}

export type OidcService = ReturnType<typeof oidcService>;
