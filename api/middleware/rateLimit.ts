import type { Knex } from 'knex';
import type { Middleware } from 'koa';
import { batched } from '../../db/batch';
import { ApiError } from '../errors';
import type { AuthState } from './auth';

const WINDOW_MS = 60_000;

interface Consumed {
  /** Requests counted in the current window, this one included. */
  points: number;
  /** When the window ends (epoch ms). */
  resetAt: number;
}

/**
 * Counts requests per project in fixed one-minute windows in PostgreSQL (table `rate_limits`: key, points, expire),
 * so that every API process shares one budget. The counts of concurrent requests go in one upsert (db/batch.ts):
 * each request then learns its own position in the window. Written here rather than with rate-limiter-flexible
 * (whose table layout this keeps) because that library spends one statement per request and has no batch call.
 */
const counters = new WeakMap<Knex, ReturnType<typeof newCounter>>();
/** One counter per database, shared by every router: concurrent requests of one project make one upsert of its row. */
function counter(knex: Knex) {
  let c = counters.get(knex);
  if (!c) counters.set(knex, (c = newCounter(knex)));
  return c;
}

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

/**
 * The API rate limit: `perMinute` requests per project per window. Answers carry `RateLimit-Limit`,
 * `RateLimit-Remaining`, `RateLimit-Reset`; a 429 adds `Retry-After`. A database error is a 500, never a silent pass.
 */
export function rateLimit(knex: Knex, perMinute: number): Middleware {
  const consume = counter(knex);
  return async (ctx, next) => {
    const { projectId } = ctx.state.auth as AuthState;
    const { points, resetAt } = await consume.load(`api:${projectId}`);
    const resetSeconds = Math.max(1, Math.ceil((resetAt - Date.now()) / 1000));
    ctx.set('RateLimit-Limit', String(perMinute));
    ctx.set('RateLimit-Remaining', String(Math.max(0, perMinute - points)));
    ctx.set('RateLimit-Reset', String(resetSeconds));
    if (points > perMinute) {
      throw new ApiError(429, 'RATE_LIMITED', `Rate limit of ${perMinute} requests per minute exceeded`, {
        suggestion: `Retry after ${resetSeconds} seconds.`,
        headers: { 'Retry-After': String(resetSeconds) },
      });
    }
    await next();
  };
}
