import type { Knex } from 'knex';
import { timingSafeEqual } from 'node:crypto';
import { batched } from '../db/batch';
import { COMMIT_WITHOUT_FLUSH } from '../db/commits';
import type { ApiKeyType } from '../db/models/ApiKey';
import { preparedStatement } from '../db/prepared';
import { hashKey, keyMatches, parseKey } from './keys';
import type { KeyScope } from './roles';

/**
 * Who a request is, from its API key, and how much of its project's rate budget it has used: for every way in (the
 * HTTP API's Bearer header, SMTP submission's AUTH password).
 */

export interface Caller {
  projectId: string;
  keyId: string;
  keyType: ApiKeyType;
  /** What the key may do (projects/roles.ts): `full`, or `sending` (the sending routes and SMTP submission only). */
  scope: KeyScope;
  /** The sending domains the key may use, with their subdomains (projects/apiKeys.ts mayUseFrom); null: any. */
  domains: string[] | null;
}

/** Why a key is refused: each way in answers it in its own words (HTTP 401/403, SMTP 535). */
export type KeyRefusal = 'malformed' | 'invalid' | 'disabled';

interface KeyRow {
  id: string;
  projectId: string;
  type: ApiKeyType;
  hash: Buffer;
  disabled: boolean;
  scope: KeyScope;
  domains: string[] | null;
}

/**
 * Key lookups of concurrent requests in one indexed query (db/batch.ts). Never cached: a revoked key or a disabled
 * project is refused from the next request on. One loader per database, shared by every way in, so that a send, a
 * track and an SMTP submission of the same moment share the query too.
 */
const keyLoaders = new WeakMap<Knex, ReturnType<typeof newKeyLoader>>();

/** The live keys (not revoked) with these lookups, and whether their project is disabled. */
const KEY_ROWS = `SELECT k.lookup, k.id, k.project_id AS "projectId", k.type, k.hash, p.disabled, k.scope, k.domains
  FROM api_keys k JOIN projects p ON p.id = k.project_id
  WHERE k.lookup = ANY(?::text[]) AND k.revoked_at IS NULL`;

function newKeyLoader(knex: Knex) {
  return batched<string, KeyRow | undefined>(async (lookups) => {
    const { rows } = await knex.raw(KEY_ROWS, [[...new Set(lookups)]]);
    const byLookup = new Map((rows as (KeyRow & { lookup: string })[]).map((r) => [r.lookup, r]));
    return lookups.map((l) => byLookup.get(l));
  });
}

/** The caller an API key names, or why it is refused. The stored hash is compared in constant time (projects/keys.ts). */
export async function identify(knex: Knex, key: string): Promise<Caller | { refused: KeyRefusal }> {
  const parsed = parseKey(key);
  if (!parsed) return { refused: 'malformed' };
  let loader = keyLoaders.get(knex);
  if (!loader) keyLoaders.set(knex, (loader = newKeyLoader(knex)));
  return callerOf(key, parsed.type, await loader.load(parsed.lookup));
}

/**
 * A key as presented, parsed and hashed once: a connection that presents the same key again and again (an SMTP
 * session, at each message) hashes it at AUTH, not per message. Its hash is still compared with the stored row's at
 * every admission, so a key replaced or revoked since is refused.
 */
export interface PresentedKey {
  type: ApiKeyType;
  lookup: string;
  hash: Buffer;
}

/** The key parsed and hashed, or null when it is not shaped like a Herald key. */
export function presentKey(key: string): PresentedKey | null {
  const parsed = parseKey(key);
  return parsed && { ...parsed, hash: hashKey(key) };
}

function callerOf(key: string | PresentedKey, type: ApiKeyType, row: KeyRow | undefined): Caller | { refused: KeyRefusal } {
  const matches = (stored: Buffer) => typeof key === 'string'
    ? keyMatches(key, stored)
    : key.hash.length === stored.length && timingSafeEqual(key.hash, stored);
  if (!row || row.type !== type || !matches(row.hash)) return { refused: 'invalid' };
  if (row.disabled) return { refused: 'disabled' };
  return { projectId: row.projectId, keyId: row.id, keyType: row.type, scope: row.scope, domains: row.domains };
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

/**
 * The upsert of the counts, from a CTE `counts(key, n)`: a window that has ended starts again. Bindings: the new
 * window's end, then now twice (epoch ms).
 *
 * Its statement commits without waiting for the disk (db/commits.ts): a count lost in a crash breaks no promise, and a
 * durable commit held the project's row locked through the flush, so that concurrent batches counted one flush after
 * another. Every statement that includes it runs on its own on the pool (admit, admitSession, consumeRate), never in
 * a caller's transaction.
 */
export const COUNT_UPSERT = `INSERT INTO rate_limits AS r (key, points, expire)
  SELECT c.key, c.n, ?::bigint FROM counts c WHERE ${COMMIT_WITHOUT_FLUSH} ORDER BY c.key
  ON CONFLICT (key) DO UPDATE SET
    points = CASE WHEN r.expire IS NULL OR r.expire <= ?::bigint THEN excluded.points ELSE r.points + excluded.points END,
    expire = CASE WHEN r.expire IS NULL OR r.expire <= ?::bigint THEN excluded.expire ELSE r.expire END
  RETURNING key, points, expire`;

export const windowBindings = (now: number) => [now + WINDOW_MS, now, now];

/**
 * Each request's place in its key's window, in arrival order: the batch's requests of one key take the window's last
 * positions. `keys` by request (undefined: not counted), `after` the counts as the upsert left them.
 */
export function positions(keys: readonly (string | undefined)[], after: Map<string, { points: number; expire: number }>): (Consumed | undefined)[] {
  const counts = new Map<string, number>();
  for (const k of keys) if (k !== undefined) counts.set(k, (counts.get(k) ?? 0) + 1);
  const seen = new Map<string, number>();
  return keys.map((k) => {
    const total = k === undefined ? undefined : after.get(k);
    if (k === undefined || !total) return undefined;
    const i = seen.get(k) ?? 0;
    seen.set(k, i + 1);
    return { points: total.points - counts.get(k)! + i + 1, resetAt: total.expire };
  });
}

export const countsAfter = (rows: { key: string; points: number; expire: string }[]) =>
  new Map(rows.map((r) => [r.key, { points: r.points, expire: Number(r.expire) }]));

const rateKey = (projectId: string) => `api:${projectId}`;

function newCounter(knex: Knex) {
  return batched<string, Consumed>(async (keys) => {
    const counts = new Map<string, number>();
    for (const k of keys) counts.set(k, (counts.get(k) ?? 0) + 1);
    const { rows } = await knex.raw(
      `WITH counts AS (SELECT * FROM unnest(?::text[], ?::int[]) AS t(key, n)) ${COUNT_UPSERT}`,
      [[...counts.keys()], [...counts.values()], ...windowBindings(Date.now())],
    );
    return positions(keys, countsAfter(rows)) as Consumed[];
  });
}

/**
 * identify and consumeRate in ONE statement, for the HTTP API where every request does both: the keys of the requests
 * that arrive together are looked up, and each live key's request is counted against its project's budget, in one
 * round trip. A request whose key then fails the hash comparison was counted against the project its key's first 16
 * characters name: only someone who holds those (secret) characters can spend a project's budget that way.
 *
 * The same statement keeps the keys' `last_used_at` (GET /keys' lastUsedAt), cheaply: only a key last marked more than
 * a minute ago is written, so a busy key costs one row write a minute, not one per request. (A key whose lookup matched
 * but whose hash then failed is marked too; that again takes its secret first characters.)
 *
 * Bindings: the distinct lookups, the lookup of every request, then windowBindings. Exported for the plan of
 * bench/sessionAuth.ts, beside the session's ADMIT_SESSIONS.
 */
export const ADMIT_KEYS = `WITH keys AS (${KEY_ROWS}),
  counts AS (
    -- rateKey, in SQL
    SELECT 'api:' || k."projectId" AS key, count(*)::int AS n
    FROM unnest(?::text[]) AS l(lookup) JOIN keys k USING (lookup) GROUP BY 1),
  counted AS (${COUNT_UPSERT}),
  touched AS (
    -- SKIP LOCKED: a key another statement is marking (or revoking) is left to it. Never a wait on the hot path,
    -- and no deadlock between two batches that lock the same keys in different orders.
    UPDATE api_keys SET last_used_at = now()
    WHERE id IN (
      SELECT id FROM api_keys
      WHERE id IN (SELECT id FROM keys) AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
      FOR UPDATE SKIP LOCKED)
    RETURNING id)
  SELECT k.*, c.key AS rate_key, c.points, c.expire
  FROM keys k LEFT JOIN counted c ON c.key = 'api:' || k."projectId"`;

const admitters = new WeakMap<Knex, ReturnType<typeof newAdmitter>>();

/**
 * Named (prepared once per connection): it runs for every request and every SMTP message, and planning its unnamed
 * text each time cost more than running it (0.17 ms against 0.06 ms, bench:smtp with BENCH_PG_STAT=1); and run
 * without knex's per-call scan of its text (db/prepared.ts).
 */
const runAdmitKeys = preparedStatement('herald_admit', ADMIT_KEYS);

function newAdmitter(knex: Knex) {
  return batched<string, { row: KeyRow | undefined; rate: Consumed | undefined }>(async (lookups) => {
    const { rows } = await runAdmitKeys(knex, [[...new Set(lookups)], lookups, ...windowBindings(Date.now())]);
    const found = rows as (KeyRow & { lookup: string; rate_key: string; points: number; expire: string })[];
    const byLookup = new Map(found.map((r) => [r.lookup, r]));
    const rates = positions(lookups.map((l) => byLookup.get(l)?.rate_key), countsAfter(found.map((r) => ({ key: r.rate_key, points: r.points, expire: r.expire }))));
    return lookups.map((l, i) => ({ row: byLookup.get(l), rate: rates[i] }));
  });
}

/**
 * The caller an API key names and this request's place in its project's rate window, or why the key is refused. The
 * key as presented, or as presentKey made it once for a connection that presents it again.
 */
export async function admit(knex: Knex, key: string | PresentedKey): Promise<(Caller & { rate: Consumed }) | { refused: KeyRefusal }> {
  const parsed = typeof key === 'string' ? parseKey(key) : key;
  if (!parsed) return { refused: 'malformed' };
  let admitter = admitters.get(knex);
  if (!admitter) admitters.set(knex, (admitter = newAdmitter(knex)));
  const { row, rate } = await admitter.load(parsed.lookup);
  const caller = callerOf(key, parsed.type, row);
  return 'refused' in caller ? caller : { ...caller, rate: rate! };
}

/** Counts one request against the project's budget of this minute; the caller compares `points` with its limit. */
export function consumeRate(knex: Knex, projectId: string): Promise<Consumed> {
  let c = counters.get(knex);
  if (!c) counters.set(knex, (c = newCounter(knex)));
  return c.load(rateKey(projectId));
}
