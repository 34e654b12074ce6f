import type { Knex } from 'knex';
import type { Middleware } from 'koa';
import { batched } from '../../db/batch';
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
 * Key lookups of concurrent requests in one indexed query (db/batch.ts). Never cached: a revoked key or a disabled
 * project is refused from the next request on. One loader per database, shared by every router that authenticates,
 * so that a send, a track and a dashboard request of the same moment share the query too.
 */
const keyLoaders = new WeakMap<Knex, ReturnType<typeof newKeyLoader>>();
function keyLoader(knex: Knex) {
  let loader = keyLoaders.get(knex);
  if (!loader) keyLoaders.set(knex, (loader = newKeyLoader(knex)));
  return loader;
}

function newKeyLoader(knex: Knex) {
  return batched<string, KeyRow | undefined>(async (lookups) => {
    const rows: (KeyRow & { lookup: string })[] = await knex('api_keys as k')
      .join('projects as p', 'p.id', 'k.project_id')
      .whereIn('k.lookup', lookups as string[])
      .whereNull('k.revoked_at')
      .select('k.lookup', 'k.id', 'k.project_id as projectId', 'k.type', 'k.hash', 'p.disabled');
    const byLookup = new Map(rows.map((r) => [r.lookup, r]));
    return lookups.map((l) => byLookup.get(l));
  });
}

/**
 * Bearer authentication. `accepts` lists the key types allowed on the route: secret keys everywhere,
 * public keys only where the route says so (/v1/track).
 */
export function authenticate(knex: Knex, accepts: ApiKeyType[] = ['secret']): Middleware {
  const keys = keyLoader(knex);
  return async (ctx, next) => {
    const header = ctx.get('authorization');
    if (!header) throw unauthorized('Missing API key', SUGGEST_HEADER);
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!m) throw unauthorized('Malformed Authorization header: expected "Bearer <API key>"', SUGGEST_HEADER);
    const key = m[1]!;
    const parsed = parseKey(key);
    if (!parsed) throw unauthorized('Malformed API key: keys look like sk_… or pk_… followed by 40 letters and digits');

    const row = await keys.load(parsed.lookup);
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
