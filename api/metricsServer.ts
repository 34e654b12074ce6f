import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';
import type { Metrics } from '../metrics/metrics';
import { unauthorized } from './errors';

// Apart from the route table: workers serve metrics too (api/metricsApp.ts), and load nothing else of the API.

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * GET /metrics, the Prometheus text exposition (metrics/metrics.ts), here and on METRICS_PORT (api/metricsApp.ts).
 * METRICS_TOKEN: the scrape must send `Authorization: Bearer <token>`, compared in constant time (both sides hashed
 * to the same length first, so that neither the content nor the length leaks through timing); missing or wrong, a
 * 401 in the error envelope. Without a token, no check.
 */
export async function serveMetrics(ctx: Context, metrics: Metrics, token: string | undefined): Promise<void> {
  if (token !== undefined) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'));
    if (!m) throw unauthorized('Missing metrics token', 'Send "Authorization: Bearer <METRICS_TOKEN>" (Prometheus: authorization.credentials).');
    if (!timingSafeEqual(digest(m[1]!), digest(token))) throw unauthorized('Invalid metrics token');
  }
  const body = await metrics.render();
  ctx.type = metrics.contentType;
  ctx.set('Cache-Control', 'no-store');
  ctx.body = body;
}
