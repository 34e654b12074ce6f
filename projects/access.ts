import type { Knex } from 'knex';
import { batched } from '../db/batch';
import type { ApiKeyType } from '../db/models/ApiKey';
import { keyMatches, parseKey } from './keys';

/**
 * Who a request is, from its API key, and how much of its project's rate budget it has used: for every way in (the
 * HTTP API's Bearer header, SMTP submission's AUTH password).
 */

export interface Caller {
  projectId: string;
  keyId: string;
  keyType: ApiKeyType;
}

/** Why a key is refused: each way in answers it in its own words (HTTP 401/403, SMTP 535). */
export type KeyRefusal = 'malformed' | 'invalid' | 'disabled';

interface KeyRow {
  id: string;
  projectId: string;
  type: ApiKeyType;
  hash: Buffer;
  disabled: boolean;
}

/**
 * Key lookups of concurrent requests in one indexed query (db/batch.ts). Never cached: a revoked key or a disabled
 * project is refused from the next request on. One loader per database, shared by every way in, so that a send, a
 * track and an SMTP submission of the same moment share the query too.
 */
const keyLoaders = new WeakMap<Knex, ReturnType<typeof newKeyLoader>>();

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

/** The caller an API key names, or why it is refused. The stored hash is compared in constant time (projects/keys.ts). */
export async function identify(knex: Knex, key: string): Promise<Caller | { refused: KeyRefusal }> {
  const parsed = parseKey(key);
  if (!parsed) return { refused: 'malformed' };
  let loader = keyLoaders.get(knex);
  if (!loader) keyLoaders.set(knex, (loader = newKeyLoader(knex)));
  const row = await loader.load(parsed.lookup);
  if (!row || row.type !== parsed.type || !keyMatches(key, row.hash)) return { refused: 'invalid' };
  if (row.disabled) return { refused: 'disabled' };
  return { projectId: row.projectId, keyId: row.id, keyType: row.type };
}

const WINDOW_MS = 60_000;

export interface Consumed {
  /** Requests counted in the current window, this one included. */
  points: number;
  /** When the window ends (epoch ms). */
  resetAt: number;
}

/**
 * Counts requests per project in fixed one-minute windows in PostgreSQL (table `rate_limits`: key, points, expire),
 * so that every process — and every way in — shares one budget. The counts of concurrent requests go in one upsert
 * (db/batch.ts): each request then learns its own position in the window. Written here rather than with
 * rate-limiter-flexible (whose table layout this keeps) because that library spends one statement per request and has
 * no batch call.
 */
const counters = new WeakMap<Knex, ReturnType<typeof newCounter>>();

function newCounter(knex: Knex) {
  return batched<string, Consumed>(async (keys) => {
    const counts = new Map<string, number>();
    for (const k of keys) counts.set(k, (counts.get(k) ?? 0) + 1);
    const now = Date.now();
    const { rows } = await knex.raw(
      `INSERT INTO rate_limits AS r (key, points, expire)
       SELECT t.key, t.n, ?::bigint FROM unnest(?::text[], ?::int[]) AS t(key, n)
       ON CONFLICT (key) DO UPDATE SET
         points = CASE WHEN r.expire IS NULL OR r.expire <= ?::bigint THEN excluded.points ELSE r.points + excluded.points END,
         expire = CASE WHEN r.expire IS NULL OR r.expire <= ?::bigint THEN excluded.expire ELSE r.expire END
       RETURNING key, points, expire`,
      [now + WINDOW_MS, [...counts.keys()], [...counts.values()], now, now],
    );
    const after = new Map<string, { points: number; expire: number }>(rows.map((r: { key: string; points: number; expire: string }) => [r.key, { points: r.points, expire: Number(r.expire) }]));
    // The batch's requests of one key take the last positions of the window, in arrival order.
    const seen = new Map<string, number>();
    return keys.map((k) => {
      const i = seen.get(k) ?? 0;
      seen.set(k, i + 1);
      const total = after.get(k)!;
      return { points: total.points - counts.get(k)! + i + 1, resetAt: total.expire };
    });
  });
}

/** Counts one request against the project's budget of this minute; the caller compares `points` with its limit. */
export function consumeRate(knex: Knex, projectId: string): Promise<Consumed> {
  let c = counters.get(knex);
  if (!c) counters.set(knex, (c = newCounter(knex)));
  return c.load(`api:${projectId}`);
}
