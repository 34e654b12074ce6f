import type { Knex } from 'knex';
import type { Context, Middleware } from 'koa';
import { isUuid } from '../../core/values';
import type { ApiKeyType } from '../../db/models/ApiKey';
import { admitSession } from '../../people/sessions';
import { admit, type Consumed } from '../../projects/access';
import type { Principal } from '../../projects/roles';
import { clearedSessionCookie, fromOwnOrigin, sessionTokenOf } from '../cookies';
import { ApiError, badRequest, forbidden, unauthorized } from '../errors';

/** What authentication puts on `ctx.state.auth`: the caller, which handlers get typed as `call.auth` (api/route.ts). */
export interface AuthState {
  projectId: string;
  /**
   * How far the request is trusted with what contacts say of themselves (audience/subscription.ts): `public` for a
   * public key (a browser), `secret` for a secret key or a person signed in.
   */
  keyType: ApiKeyType;
  /** Who: a key of the project or a member signed in; what it may do is `allows(principal, permission)`. */
  principal: Principal;
  /** The client's address (as TRUST_PROXY_HOPS reads it): the audit log's "from where". */
  address: string;
}

/** Where keys come from, for a newcomer whose first request is refused (issue 27, point 6). */
const WHERE_KEYS_COME_FROM = 'Keys come from the first start\'s printout (the Default project\'s secret key), from `npm run cli -- project create --name <name>` or `npm run cli -- key create --project <id> --name <name>`, or from POST /keys with a full key.';
const SUGGEST_HEADER = `Send the header "Authorization: Bearer <API key>". ${WHERE_KEYS_COME_FROM}`;

/** How a person's session is checked on the project routes (people/sessions.ts admitSession). */
export interface SessionAuth {
  idleMinutes: number;
  /** PUBLIC_URL's origin: a session's request that changes anything must come from it (or from the address it was sent to). */
  publicOrigin: string;
  /** PUBLIC_URL is https: cookies are `Secure`. */
  secureCookies: boolean;
}

export const PROJECT_HEADER = 'Herald-Project';

/** Methods that change nothing, which need no Origin check. */
export const SAFE_METHODS = new Set(['GET', 'HEAD']);

/** A 403 for a request with a session from another origin: it changes nothing. */
export const crossSite = () => forbidden('Cross-site request refused: a request signed in with a session that changes anything must come from Herald\'s own origin',
  'Send it from the console (same origin), or use an API key from a script.');

/** The rate headers of every authenticated answer, and the 429 beyond the limit. */
function rateLimit(ctx: Context, rate: Consumed, perMinute: number): void {
  const resetSeconds = Math.max(1, Math.ceil((rate.resetAt - Date.now()) / 1000));
  ctx.set('RateLimit-Limit', String(perMinute));
  ctx.set('RateLimit-Remaining', String(Math.max(0, perMinute - rate.points)));
  ctx.set('RateLimit-Reset', String(resetSeconds));
  if (rate.points > perMinute) {
    throw new ApiError(429, 'RATE_LIMITED', `Rate limit of ${perMinute} requests per minute exceeded`, {
      suggestion: `Retry after ${resetSeconds} seconds.`,
      headers: { 'Retry-After': String(resetSeconds) },
    });
  }
}

/**
 * A person's session on a project route: the cookie, the project the request names (Herald-Project), the Origin of a
 * request that changes anything (checked before any lookup, so a forged request costs nothing and changes nothing),
 * then membership, user, session and the rate count in one statement (people/sessions.ts admitSession), as a key's.
 */
async function sessionCaller(ctx: Context, knex: Knex, token: string, sessions: SessionAuth): Promise<{ auth: AuthState; rate: Consumed }> {
  if (!SAFE_METHODS.has(ctx.method) && !fromOwnOrigin(ctx, sessions.publicOrigin)) throw crossSite();
  const header = ctx.get(PROJECT_HEADER);
  if (!header) {
    throw badRequest(`Missing ${PROJECT_HEADER} header: a request signed in with a session names its project`,
      [{ field: PROJECT_HEADER, message: `${PROJECT_HEADER} is required with a session`, code: 'required' }], `Send "${PROJECT_HEADER}: <project id>", one of the projects of GET /auth/session.`);
  }
  const projectId = header.trim().toLowerCase();
  if (!isUuid(projectId)) {
    throw badRequest(`Malformed ${PROJECT_HEADER} header: expected a project id (UUID)`,
      [{ field: PROJECT_HEADER, message: `${PROJECT_HEADER} must be a UUID`, code: 'invalid' }], 'GET /auth/session lists your projects and their ids.');
  }
  const admitted = await admitSession(knex, token, projectId, sessions.idleMinutes);
  if ('refused' in admitted) {
    if (admitted.refused === 'session') {
      throw new ApiError(401, 'UNAUTHORIZED', 'Session expired or ended: sign in again', {
        suggestion: 'POST /auth/login, or use an API key.', headers: { 'Set-Cookie': clearedSessionCookie(sessions.secureCookies) },
      });
    }
    if (admitted.refused === 'project') {
      // Another project's id is not found, as any foreign id: whether it exists is none of a non-member's business.
      throw new ApiError(404, 'NOT_FOUND', 'Project not found', {
        errors: [{ field: PROJECT_HEADER, message: `${PROJECT_HEADER} names no project of yours`, code: 'not_found' }],
        suggestion: 'GET /auth/session lists your projects and their ids.',
      });
    }
    if (admitted.refused === 'twoFactor') {
      throw new ApiError(403, 'TWO_FACTOR_REQUIRED', 'This project requires two-factor authentication of its members, and yours is not on', {
        suggestion: 'Turn it on: POST /auth/two-factor, then POST /auth/two-factor/confirm with a code of your authenticator app. API keys are not concerned.',
      });
    }
    throw new ApiError(403, 'PROJECT_DISABLED', 'This project is disabled', { suggestion: 'Ask the operator to enable the project.' });
  }
  return {
    auth: {
      projectId: admitted.projectId,
      keyType: 'secret',
      principal: { kind: 'user', userId: admitted.userId, sessionId: admitted.sessionId, role: admitted.role },
      address: ctx.ip,
    },
    rate: admitted.rate,
  };
}

/**
 * Bearer authentication and the API rate limit, in one database round trip (projects/access.ts admit); without an
 * Authorization header, a person's session cookie with the project it names (sessionCaller), also one round trip.
 * `accepts`
 * lists the key types allowed on the route: secret keys everywhere, public keys only where the route says so
 * (/v1/track). Every authenticated answer carries `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset`:
 * `perMinute` requests per project per window; a 429 adds `Retry-After`. A database error is a 500, never a silent
 * pass.
 */
export function authenticate(knex: Knex, accepts: ApiKeyType[], perMinute: number, sessions: SessionAuth): Middleware {
  return async (ctx, next) => {
    const header = ctx.get('authorization');
    if (!header) {
      // No key: a person's session, if the request carries one. A key, when present, always wins.
      const token = sessionTokenOf(ctx);
      if (!token) throw unauthorized('Missing API key', SUGGEST_HEADER);
      const { auth, rate } = await sessionCaller(ctx, knex, token, sessions);
      ctx.state.auth = auth;
      rateLimit(ctx, rate, perMinute);
      return next();
    }
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!m) throw unauthorized('Malformed Authorization header: expected "Bearer <API key>"', SUGGEST_HEADER);
    const admitted = await admit(knex, m[1]!);
    if ('refused' in admitted) {
      if (admitted.refused === 'malformed') throw unauthorized('Malformed API key: keys look like sk_… or pk_… followed by 40 letters and digits', `Check that the whole key was copied. ${WHERE_KEYS_COME_FROM}`);
      if (admitted.refused === 'invalid') throw unauthorized('Invalid API key', `The key is unknown or was revoked (GET /keys lists a project's live keys). ${WHERE_KEYS_COME_FROM}`);
      throw new ApiError(403, 'PROJECT_DISABLED', 'This project is disabled', { suggestion: 'Ask the operator to enable the project.' });
    }
    const { rate, ...caller } = admitted;
    if (!accepts.includes(caller.keyType)) {
      throw forbidden('Public keys (pk_) may only be used with POST /v1/track', 'Use a secret key (sk_) from a server, never from a browser.');
    }
    const auth: AuthState = {
      projectId: caller.projectId,
      keyType: caller.keyType,
      principal: { kind: 'key', keyId: caller.keyId, keyType: caller.keyType, scope: caller.scope, domains: caller.domains },
      address: ctx.ip,
    };
    ctx.state.auth = auth;
    rateLimit(ctx, rate, perMinute);
    await next();
  };
}
