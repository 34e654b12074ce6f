import type { Knex } from 'knex';
import type { Middleware } from 'koa';
import type { ApiKeyType } from '../../db/models/ApiKey';
import { keyMatches, parseKey } from '../../projects/keys';
import { ApiError, forbidden, unauthorized } from '../errors';

/** What authentication puts on `ctx.state.auth` for the handlers. */
export interface AuthState {
  projectId: string;
  keyId: string;
  keyType: ApiKeyType;
}

interface KeyRow {
  id: string;
  projectId: string;
  type: ApiKeyType;
  hash: Buffer;
  disabled: boolean;
}

const SUGGEST_HEADER = 'Send the header "Authorization: Bearer <API key>" with a key from `npm run cli -- project create` or the one printed at first start.';

/**
 * Bearer authentication. `accepts` lists the key types allowed on the route: secret keys everywhere,
 * public keys only where the route says so (/v1/track). One indexed query per request.
 */
export function authenticate(knex: Knex, accepts: ApiKeyType[] = ['secret']): Middleware {
  return async (ctx, next) => {
    const header = ctx.get('authorization');
    if (!header) throw unauthorized('Missing API key', SUGGEST_HEADER);
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!m) throw unauthorized('Malformed Authorization header: expected "Bearer <API key>"', SUGGEST_HEADER);
    const key = m[1]!;
    const parsed = parseKey(key);
    if (!parsed) throw unauthorized('Malformed API key: keys look like sk_… or pk_… followed by 40 letters and digits');

    const row: KeyRow | undefined = await knex('api_keys as k')
      .join('projects as p', 'p.id', 'k.project_id')
      .where('k.lookup', parsed.lookup)
      .whereNull('k.revoked_at')
      .first('k.id', 'k.project_id as projectId', 'k.type', 'k.hash', 'p.disabled');
    if (!row || row.type !== parsed.type || !keyMatches(key, row.hash)) throw unauthorized('Invalid API key');

    if (!accepts.includes(row.type)) {
      throw forbidden('Public keys (pk_) may only be used with POST /v1/track', 'Use a secret key (sk_) from a server, never from a browser.');
    }
    if (row.disabled) throw new ApiError(403, 'PROJECT_DISABLED', 'This project is disabled', { suggestion: 'Ask the operator to enable the project.' });

    const auth: AuthState = { projectId: row.projectId, keyId: row.id, keyType: row.type };
    ctx.state.auth = auth;
    await next();
  };
}
