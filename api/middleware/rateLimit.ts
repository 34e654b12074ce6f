import type { Knex } from 'knex';
import type { Middleware } from 'koa';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { ApiError } from '../errors';
import type { AuthState } from './auth';

/**
 * The API rate limit: `perMinute` requests per project in fixed one-minute windows, counted in PostgreSQL
 * (table `rate_limits`, created by a migration) so that every API process shares one budget.
 * Answers carry `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`; a 429 adds `Retry-After`.
 */
export function rateLimit(knex: Knex, perMinute: number): Middleware {
  const limiter = new RateLimiterPostgres({
    storeClient: knex,
    storeType: 'knex',
    tableName: 'rate_limits',
    tableCreated: true,
    keyPrefix: 'api',
    points: perMinute,
    duration: 60,
  });

  const setHeaders = (ctx: Parameters<Middleware>[0], res: RateLimiterRes) => {
    ctx.set('RateLimit-Limit', String(perMinute));
    ctx.set('RateLimit-Remaining', String(Math.max(0, res.remainingPoints)));
    ctx.set('RateLimit-Reset', String(Math.ceil(res.msBeforeNext / 1000)));
  };

  return async (ctx, next) => {
    const { projectId } = ctx.state.auth as AuthState;
    let res: RateLimiterRes;
    try {
      res = await limiter.consume(projectId);
    } catch (rejected) {
      if (!(rejected instanceof RateLimiterRes)) throw rejected; // a database error: a 500, never a silent pass
      setHeaders(ctx, rejected);
      const retryAfter = String(Math.max(1, Math.ceil(rejected.msBeforeNext / 1000)));
      throw new ApiError(429, 'RATE_LIMITED', `Rate limit of ${perMinute} requests per minute exceeded`, {
        suggestion: `Retry after ${retryAfter} seconds.`,
        headers: { 'Retry-After': retryAfter },
      });
    }
    setHeaders(ctx, res);
    await next();
  };
}
