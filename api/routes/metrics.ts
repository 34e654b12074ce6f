import { createHash, timingSafeEqual } from 'node:crypto';
import type Router from '@koa/router';
import type { Middleware } from 'koa';
import type { Metrics } from '../../metrics/metrics';
import { unauthorized } from '../errors';

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * METRICS_TOKEN: the scrape must send `Authorization: Bearer <token>`. Compared in constant time (both sides hashed
 * to the same length first, so that neither the content nor the length leaks through timing); missing or wrong, a 401
 * in the error envelope. Without a token, no check.
 */
export function metricsAuth(token: string | undefined): Middleware {
  const expected = token === undefined ? undefined : digest(token);
  return async (ctx, next) => {
    if (expected) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'));
      if (!m) throw unauthorized('Missing metrics token', 'Send "Authorization: Bearer <METRICS_TOKEN>" (Prometheus: authorization.credentials).');
      if (!timingSafeEqual(digest(m[1]!), expected)) throw unauthorized('Invalid metrics token');
    }
    await next();
  };
}

/** GET /metrics: the Prometheus text exposition (metrics/metrics.ts), on a router without API keys. */
export function metricsRoutes(router: Router, metrics: Metrics, token: string | undefined): void {
  router.get('/metrics', metricsAuth(token), async (ctx) => {
    const body = await metrics.render();
    ctx.type = metrics.contentType;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = body;
  });
}
