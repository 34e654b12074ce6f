import type { Knex } from 'knex';
import type { Context, Middleware, Next } from 'koa';
import { isUuid } from '../../core/values';
import type { ApiKeyType } from '../../db/models/ApiKey';
import { admitSession } from '../../people/sessions';
import { tokenHash } from '../../people/tokens';
import { admit, presentKey, type Consumed, type KeyRefusal, type PresentedKey } from '../../projects/access';
import { allows, type Permission, type Principal } from '../../projects/roles';
import { clearedSessionCookie, fromOwnOrigin, sessionTokenOf } from '../cookies';
import { ApiError, badRequest, forbidden, forbiddenFor, unauthorized } from '../errors';

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

/** A caller admitted, and this request's place in its project's rate window. */
interface Admitted {
  auth: AuthState;
  rate: Consumed;
}

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
function sessionProject(ctx: Context, sessions: SessionAuth): string {
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
  return projectId;
}

/** The session's admission to the project (membership, user, session and the rate count in one statement), or its refusal. */
async function sessionCaller(ctx: Context, knex: Knex, token: string, projectId: string, sessions: SessionAuth): Promise<Admitted> {
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

/** The answer to a key that admit refuses. */
function keyRefusal(refused: KeyRefusal): ApiError {
  if (refused === 'malformed') return unauthorized('Malformed API key: keys look like sk_… or pk_… followed by 40 letters and digits', `Check that the whole key was copied. ${WHERE_KEYS_COME_FROM}`);
  if (refused === 'invalid') return unauthorized('Invalid API key', `The key is unknown or was revoked (GET /keys lists a project's live keys). ${WHERE_KEYS_COME_FROM}`);
  return new ApiError(403, 'PROJECT_DISABLED', 'This project is disabled', { suggestion: 'Ask the operator to enable the project.' });
}

/** The caller a key names and its rate count (projects/access.ts admit), or the answer that refuses it. */
async function keyCaller(ctx: Context, knex: Knex, key: PresentedKey, accepts: ApiKeyType[]): Promise<Admitted> {
  const admitted = await admit(knex, key);
  if ('refused' in admitted) throw keyRefusal(admitted.refused);
  const { rate, ...caller } = admitted;
  if (!accepts.includes(caller.keyType)) {
    throw forbidden('Public keys (pk_) may only be used with POST /v1/track', 'Use a secret key (sk_) from a server, never from a browser.');
  }
  return {
    auth: {
      projectId: caller.projectId,
      keyType: caller.keyType,
      principal: { kind: 'key', keyId: caller.keyId, keyType: caller.keyType, scope: caller.scope, domains: caller.domains },
      address: ctx.ip,
    },
    rate,
  };
}

/**
 * What the route checked of its caller before its handler ran (api/routing.ts permit): a read that ran ahead of its
 * admission (readAhead) checks it again against the caller admitted.
 */
export interface Permitted {
  needs: Permission;
  action: string;
}

/**
 * The callers this process admitted lately, by credential (a key's hash, or a session token's with its project), with
 * their last place in the rate window: what a read may start with while its own admission is under way (readAhead).
 * Never an admission: a request's answer always waits for its own. One memory per database (as the admissions' batches
 * are), shared by the routers; at most MEMORY entries, the oldest forgotten first.
 */
const memories = new WeakMap<Knex, Map<string, Admitted>>();
const MEMORY = 10_000;

function memoryOf(knex: Knex): Map<string, Admitted> {
  let lately = memories.get(knex);
  if (!lately) memories.set(knex, (lately = new Map()));
  return lately;
}

function remember(lately: Map<string, Admitted>, credential: string, admitted: Admitted): void {
  lately.delete(credential);
  if (lately.size >= MEMORY) lately.delete(lately.keys().next().value!);
  lately.set(credential, admitted);
}

/**
 * The caller a read may run ahead with: the one last admitted with this credential, unless its project is near its
 * rate limit (a throttled client's reads must not cost the database, so they wait for the count, as any request does).
 */
function recall(lately: Map<string, Admitted>, credential: string, perMinute: number): Admitted | undefined {
  const last = lately.get(credential);
  if (!last) return undefined;
  return last.rate.resetAt <= Date.now() || last.rate.points < perMinute * 0.9 ? last : undefined;
}

const sameIdentity = (a: Principal, b: Principal) => (a.kind === 'key'
  ? b.kind === 'key' && a.keyId === b.keyId && a.scope === b.scope && a.keyType === b.keyType && JSON.stringify(a.domains) === JSON.stringify(b.domains)
  : b.kind === 'user' && a.userId === b.userId && a.sessionId === b.sessionId);

/**
 * A read (GET, HEAD) whose caller this process admitted lately runs its handler while its own admission (the key or
 * session lookup and the rate count: one database round trip) is under way, instead of after it: two round trips in
 * parallel, not in a row (~0.5 ms of a list's 2-4 ms on a 2-core machine, BENCHMARKS.md section 57). The answer waits
 * for the admission, and only what it admits is answered: a credential revoked or ended, a project disabled, a rate
 * exceeded are refused as they would have been, and the handler's answer (body, status, headers) is discarded unseen.
 * A read changes nothing, so running it for a caller then refused has no effect but its cost. The caller admitted is
 * the one the read ran with (a credential names one key, or one session of one user in one project); a member's role
 * may have changed since, so the route's permission is checked again against the role admitted: a role that no longer
 * allows the route is refused as permit refuses it, and a role that now allows what the old one did not is answered
 * ACCESS_CHANGED (409), to send again (the console does so itself), since the handler did not run.
 */
async function readAhead(ctx: Context, next: Next, ahead: Admitted, admitting: Promise<Admitted>, perMinute: number, learn: (admitted: Admitted) => void): Promise<void> {
  ctx.state.auth = { ...ahead.auth, address: ctx.ip };
  const headersBefore = new Set(Object.keys(ctx.response.headers));
  const work = next().then(() => undefined, (err: unknown) => ({ err }));
  const admission = await admitting.then((admitted) => ({ admitted }), (err: unknown) => ({ err }));
  // Nothing of the handler's reaches the client before the admission, nor after a refusal.
  const outcome = await work;
  /** The handler's answer discarded unseen (its headers, its body: a stream destroyed), then the refusal. */
  const refuse = (refusal: () => unknown): never => {
    for (const name of Object.keys(ctx.response.headers)) if (!headersBefore.has(name)) ctx.remove(name);
    const body = ctx.body as { destroy?: () => void } | null;
    if (body && typeof body.destroy === 'function') body.destroy();
    ctx.body = null;
    throw refusal();
  };
  if ('err' in admission) return refuse(() => admission.err);
  const { admitted } = admission;
  const before = ahead.auth.principal;
  const now = admitted.auth.principal;
  if (admitted.auth.projectId !== ahead.auth.projectId || !sameIdentity(before, now)) {
    return refuse(() => new Error('a credential admitted another caller than the one it named before'));
  }
  ctx.state.auth = admitted.auth;
  learn(admitted);
  // rateLimit throws the 429, its rate headers set after the handler's are gone.
  if (admitted.rate.points > perMinute) return refuse(() => rateLimit(ctx, admitted.rate, perMinute));
  if (before.kind === 'user' && now.kind === 'user' && before.role !== now.role) {
    const permitted = ctx.state.permitted as Permitted | undefined;
    // The route refused the role the read ran with (or never checked it): what the role admitted may do, it did not.
    if (!permitted) return refuse(() => new ApiError(409, 'ACCESS_CHANGED', 'Your role in this project changed while this request ran', { suggestion: 'Send the request again.' }));
    if (!allows(now, permitted.needs)) return refuse(() => forbiddenFor(now, permitted.action, permitted.needs));
  }
  rateLimit(ctx, admitted.rate, perMinute);
  if (outcome) throw outcome.err;
}

/**
 * Bearer authentication and the API rate limit, in one database round trip (projects/access.ts admit); without an
 * Authorization header, a person's session cookie with the project it names (sessionCaller), also one round trip.
 * `accepts` lists the key types allowed on the route: secret keys everywhere, public keys only where the route says so
 * (/v1/track). Every authenticated answer carries `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset`:
 * `perMinute` requests per project per window; a 429 adds `Retry-After`. A database error is a 500, never a silent
 * pass. A read by a caller admitted lately runs beside its admission (readAhead).
 */
export function authenticate(knex: Knex, accepts: ApiKeyType[], perMinute: number, sessions: SessionAuth): Middleware {
  const lately = memoryOf(knex);
  const run = async (ctx: Context, next: Next, credential: string, admitting: () => Promise<Admitted>) => {
    const learn = (admitted: Admitted) => remember(lately, credential, admitted);
    const ahead = SAFE_METHODS.has(ctx.method) ? recall(lately, credential, perMinute) : undefined;
    if (ahead) return readAhead(ctx, next, ahead, admitting(), perMinute, learn);
    const admitted = await admitting();
    ctx.state.auth = admitted.auth;
    learn(admitted);
    rateLimit(ctx, admitted.rate, perMinute);
    await next();
  };
  return async (ctx, next) => {
    const header = ctx.get('authorization');
    if (!header) {
      // No key: a person's session, if the request carries one. A key, when present, always wins.
      const token = sessionTokenOf(ctx);
      if (!token) throw unauthorized('Missing API key', SUGGEST_HEADER);
      const projectId = sessionProject(ctx, sessions);
      const credential = `session:${tokenHash(token).toString('base64')}:${projectId}`;
      return run(ctx, next, credential, () => sessionCaller(ctx, knex, token, projectId, sessions));
    }
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!m) throw unauthorized('Malformed Authorization header: expected "Bearer <API key>"', SUGGEST_HEADER);
    const presented = presentKey(m[1]!);
    if (!presented) throw keyRefusal('malformed');
    return run(ctx, next, presented.hash.toString('base64'), () => keyCaller(ctx, knex, presented, accepts));
  };
}
