import type { Knex } from 'knex';
import type { Middleware } from 'koa';
import { consumeRate } from '../../projects/access';
import { ApiError } from '../errors';
import type { AuthState } from './auth';

/**
 * The API rate limit (projects/access.ts counts): `perMinute` requests per project per window. Answers carry `RateLimit-Limit`,
 * `RateLimit-Remaining`, `RateLimit-Reset`; a 429 adds `Retry-After`. A database error is a 500, never a silent pass.
 */
export function rateLimit(knex: Knex, perMinute: number): Middleware {
  return async (ctx, next) => {
    const { projectId } = ctx.state.auth as AuthState;
    const { points, resetAt } = await consumeRate(knex, projectId);
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
