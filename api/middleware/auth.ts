import type { Knex } from 'knex';
import type { Middleware } from 'koa';
import type { ApiKeyType } from '../../db/models/ApiKey';
import { identify, type Caller } from '../../projects/access';
import { ApiError, forbidden, unauthorized } from '../errors';

/** What authentication puts on `ctx.state.auth` for the handlers. */
export type AuthState = Caller;

const SUGGEST_HEADER = 'Send the header "Authorization: Bearer <API key>" with a key from `npm run cli -- project create` or the one printed at first start.';

/**
 * Bearer authentication. `accepts` lists the key types allowed on the route: secret keys everywhere,
 * public keys only where the route says so (/v1/track).
 */
export function authenticate(knex: Knex, accepts: ApiKeyType[] = ['secret']): Middleware {
  return async (ctx, next) => {
    const header = ctx.get('authorization');
    if (!header) throw unauthorized('Missing API key', SUGGEST_HEADER);
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!m) throw unauthorized('Malformed Authorization header: expected "Bearer <API key>"', SUGGEST_HEADER);
    const caller = await identify(knex, m[1]!);
    if ('refused' in caller) {
      if (caller.refused === 'malformed') throw unauthorized('Malformed API key: keys look like sk_… or pk_… followed by 40 letters and digits');
      if (caller.refused === 'invalid') throw unauthorized('Invalid API key');
      throw new ApiError(403, 'PROJECT_DISABLED', 'This project is disabled', { suggestion: 'Ask the operator to enable the project.' });
    }
    if (!accepts.includes(caller.keyType)) {
      throw forbidden('Public keys (pk_) may only be used with POST /v1/track', 'Use a secret key (sk_) from a server, never from a browser.');
    }
    const auth: AuthState = caller;
    ctx.state.auth = auth;
    await next();
  };
}
