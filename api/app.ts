import Router from '@koa/router';
import Koa from 'koa';
import type { Knex } from 'knex';
import { loadDnsConfig, type DnsConfig, type ReturnPath } from '../config';
import type { Engine } from '../engine/types';
import type { Logger } from '../logging/logger';
import type { Renderer } from '../mail/render';
import { isUuid } from '../core/values';
import { notFound } from '../core/errors';
import { automationService } from '../automations/automations';
import { campaignService } from '../campaigns/campaigns';
import { domainService } from '../domains/domains';
import { createSender, type Sender } from '../sending/sender';
import { authenticate } from './middleware/auth';
import { jsonBody } from './middleware/body';
import { errorHandler } from './middleware/errorHandler';
import { requestId } from './middleware/requestId';
import { campaignRoutes } from './routes/campaigns';
import { contactRoutes } from './routes/contacts';
import { domainRoutes } from './routes/domains';
import { emailRoutes } from './routes/emails';
import { eventRoutes } from './routes/events';
import { healthRoutes } from './routes/health';
import { segmentRoutes } from './routes/segments';
import { settingsRoutes } from './routes/settings';
import { suppressionRoutes } from './routes/suppressions';
import { sendRoutes } from './routes/send';
import { templateRoutes } from './routes/templates';
import { unsubscribeRoutes } from './routes/unsubscribe';
import { trackRoutes } from './routes/track';
import { trackingRoutes } from './routes/tracking';
import { createTracker } from '../tracking/tracker';
import { verifyRoutes } from './routes/verify';
import { webhookRoutes } from './routes/webhooks';
import { workflowRoutes } from './routes/workflows';
import { openApiRoutes } from './routes/openapi';
import { createMetrics } from '../metrics/metrics';
import { httpMetrics } from './middleware/httpMetrics';
import { metricsRoutes } from './routes/metrics';

export interface AppDeps {
  knex: Knex;
  log: Logger;
  apiRateLimitPerMinute: number;
  engine: Engine;
  /** Installation secret (signatures of unsubscribe and tracking links). */
  secret: Buffer;
  /** Base URL of this API as recipients reach it. */
  publicUrl: string;
  /** Where templates are rendered on the request path: a render pool (mail/renderPool.ts), off the event loop. */
  render: Renderer;
  /** DNS resolvers and timeouts (domain checks, /v1/verify); read from the environment when not given. */
  dns?: DnsConfig;
  /** The bounce domain's records, shown and checked with every sending domain's (BOUNCE_DOMAIN). */
  returnPath?: ReturnPath;
  /** The send pipeline, when the process shares it with another way in (SMTP submission); made here otherwise. */
  sender?: Sender;
  /** METRICS_TOKEN: GET /metrics requires `Authorization: Bearer <token>`. */
  metricsToken?: string;
  /** METRICS_PORT is set: GET /metrics is served on a listener of its own (api/metricsApp.ts), not here. */
  metricsOnOwnPort?: boolean;
}

/** `/campaigns/…` → `Campaign`: the resource a path names, for its 404. */
function resourceOf(path: string): string {
  const collection = path.split('/')[1] ?? '';
  return collection.charAt(0).toUpperCase() + collection.slice(1).replace(/s$/, '');
}

/** Sending bodies carry base64 attachments (10 MB decoded at most); every other body stays small. */
const SEND_BODY_LIMIT = '15mb';

/**
 * The Koa app. Order matters: request id → error envelope (and request log) → routes. Each router authenticates and
 * rate-limits (one round trip), then parses the body, so unauthenticated or throttled requests cost no body parsing.
 */
export function createApp(deps: AppDeps): Koa {
  const app = new Koa({ proxy: false });
  app.silent = true; // errors are logged once, by errorHandler

  const open = new Router();
  healthRoutes(open, deps.knex);
  // Recipients' unsubscribe links: the signed token authorises; RFC 8058 one-click POSTs have no JSON body.
  unsubscribeRoutes(open, deps.knex, deps.secret);
  // Open pixel and click redirect of tracked mail: the signed token authorises (tracking/).
  trackingRoutes(open, createTracker(deps.knex, deps.secret));
  // The API's own description (api/openapi/) and its reference page.
  openApiRoutes(open);
  // Prometheus scrapes: METRICS_TOKEN or nothing authorises, not an API key (metrics/; docs/api.md "Metrics").
  if (!deps.metricsOnOwnPort) metricsRoutes(open, createMetrics(deps.knex, { log: deps.log }), deps.metricsToken);

  const sending = new Router();
  sending.use(authenticate(deps.knex, ['secret'], deps.apiRateLimitPerMinute), jsonBody(SEND_BODY_LIMIT));
  sendRoutes(sending, { knex: deps.knex, sender: deps.sender ?? createSender(deps.knex, deps) });

  // Public API routes that also take public keys (client-side tracking).
  const tracking = new Router();
  tracking.use(authenticate(deps.knex, ['secret', 'public'], deps.apiRateLimitPerMinute), jsonBody());
  trackRoutes(tracking, deps.knex);

  const dashboard = new Router();
  dashboard.use(authenticate(deps.knex, ['secret'], deps.apiRateLimitPerMinute), jsonBody());
  // Ids in paths are canonical UUIDs, matched case-insensitively as in bodies (schemas/common.ts uuidSchema): upper
  // case is lower-cased here, once for every route; any other spelling is no id at all, a 404 (core/values.ts isUuid).
  for (const name of ['id', 'executionId']) {
    dashboard.param(name, (value, ctx, next) => {
      const id = value.toLowerCase();
      if (!isUuid(id)) throw notFound(name === 'executionId' ? 'Execution' : resourceOf(ctx.path));
      ctx.params[name] = id;
      return next();
    });
  }
  contactRoutes(dashboard, deps.knex);
  templateRoutes(dashboard, deps);
  segmentRoutes(dashboard, deps.knex);
  campaignRoutes(dashboard, campaignService(deps));
  eventRoutes(dashboard, deps.knex);
  suppressionRoutes(dashboard, deps.knex);
  emailRoutes(dashboard, deps.knex);
  settingsRoutes(dashboard, deps.knex);
  webhookRoutes(dashboard, deps);
  workflowRoutes(dashboard, automationService(deps));
  const dns = deps.dns ?? loadDnsConfig();
  domainRoutes(dashboard, domainService({ ...deps, dns }), deps.returnPath);
  // A public API route, secret keys only: it shares the dashboard's middleware (and small JSON bodies).
  verifyRoutes(dashboard, dns);

  app.use(requestId());
  app.use(httpMetrics()); // outside the error handler: it times the answer the client got, with its status
  app.use(errorHandler(deps.log));
  for (const router of [open, sending, tracking, dashboard]) {
    app.use(router.routes());
    app.use(router.allowedMethods()); // sets 405/501 + Allow; errorHandler renders the envelope
  }
  return app;
}
