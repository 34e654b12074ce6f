import type { Knex } from 'knex';
import type { Middleware } from 'koa';
import type { ApiKeyType } from '../../db/models/ApiKey';
import { admit } from '../../projects/access';
import type { Principal } from '../../projects/roles';
import { ApiError, forbidden, unauthorized } from '../errors';

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

/**
 * Bearer authentication and the API rate limit, in one database round trip (projects/access.ts admit). `accepts`
 * lists the key types allowed on the route: secret keys everywhere, public keys only where the route says so
 * (/v1/track). Every authenticated answer carries `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset`:
 * `perMinute` requests per project per window; a 429 adds `Retry-After`. A database error is a 500, never a silent
 * pass.
 */
export function authenticate(knex: Knex, accepts: ApiKeyType[], perMinute: number): Middleware {
  return async (ctx, next) => {
    const header = ctx.get('authorization');
    if (!header) throw unauthorized('Missing API key', SUGGEST_HEADER);
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
    await next();
  };
}
