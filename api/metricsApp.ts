import Router from '@koa/router';
import Koa from 'koa';
import type { Logger } from '../logging/logger';
import type { Metrics } from '../metrics/metrics';
import { errorHandler } from './middleware/errorHandler';
import { requestId } from './middleware/requestId';
import { serveMetrics } from './metricsServer';

/**
 * The listener of METRICS_PORT: GET /metrics alone (with METRICS_TOKEN's check), for API processes whose metrics
 * should not be reachable where the API is, and for workers, which have no API port. Everything else is a 404 in the
 * error envelope.
 */
export function createMetricsApp(deps: { metrics: Metrics; token: string | undefined; log: Logger }): Koa {
  const app = new Koa({ proxy: false });
  app.silent = true;
  const router = new Router();
  router.get('/metrics', (ctx) => serveMetrics(ctx, deps.metrics, deps.token));
  app.use(requestId());
  app.use(errorHandler(deps.log));
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}
