import Koa from 'koa';
import type { Knex } from 'knex';
import { loadSessionConfig, type DnsConfig, type OidcConfig, type PeopleConfig, type ReturnPath, type SessionConfig, type TrackingConfig, type RetentionConfig } from '../config';
import type { TemporalUi } from '../campaigns/campaigns';
import type { Engine } from '../engine/types';
import type { Logger } from '../logging/logger';
import type { Renderer } from '../mail/render';
import type { Sender } from '../sending/sender';
import { consoleApp } from './console';
import { errorHandler } from './middleware/errorHandler';
import { httpMetrics } from './middleware/httpMetrics';
import { requestId } from './middleware/requestId';
import { buildRouters } from './routing';
import { ROUTES } from './routes';
import { createServices } from './services';

export interface AppDeps {
  knex: Knex;
  log: Logger;
  apiRateLimitPerMinute: number;
  /** GET /health's wait for the database before its 503 (HEALTH_TIMEOUT_MS; db/database.ts ping's 2 s when absent). */
  healthTimeoutMs?: number;
  /**
   * TRUST_PROXY_HOPS: the reverse proxies in front of the API. With n > 0 a request's address (the tracking routes'
   * per-address throttle) is the n-th from the right of X-Forwarded-For, the one the nearest trusted proxy saw; the
   * entries left of it are the client's to write and never trusted. 0 (default): the connection's address.
   */
  trustProxyHops?: number;
  engine: Engine;
  /** Installation secret (signatures of unsubscribe and tracking links). */
  secret: Buffer;
  /** Base URL of this API as recipients reach it. */
  publicUrl: string;
  /** Where templates are rendered on the request path: a render pool (mail/renderPool.ts), off the event loop. */
  render: Renderer;
  /** Single sign-on (OIDC_ISSUER…); `false`: off whatever the environment says; read from the environment when not given. */
  oidc?: OidcConfig | false;
  /** People's sessions and the login throttle (SESSION_IDLE_MINUTES…); read from the environment when not given. */
  sessions?: SessionConfig;
  /** The tracking routes' event window and per-address rate; read from the environment when not given. */
  tracking?: TrackingConfig;
  /** DNS resolvers and timeouts (domain checks, /v1/verify); read from the environment when not given. */
  dns?: DnsConfig;
  /** The bounce domain's records, shown and checked with every sending domain's (BOUNCE_DOMAIN). */
  returnPath?: ReturnPath;
  /** The host inbound domains' MX must name (BOUNCE_MX_HOST); the returnPath's, or PUBLIC_URL's host, when not given. */
  inboundMxHost?: string;
  /** The send pipeline, when the process shares it with another way in (SMTP submission); made here otherwise. */
  sender?: Sender;
  /** Invitations and password resets (INVITATION_TTL_HOURS, the system sender); defaults and no mail when not given. */
  people?: PeopleConfig;
  /** METRICS_TOKEN: GET /metrics requires `Authorization: Bearer <token>`. */
  metricsToken?: string;
  /** METRICS_PORT is set: GET /metrics is served on a listener of its own (api/metricsApp.ts), not here. */
  metricsOnOwnPort?: boolean;
  /** The built console (scripts/buildWeb.ts) served at /app; dist/web by default. */
  consoleDir?: string;
  /** RETENTION_DAYS and INBOUND_RETENTION_DAYS (a project's own retention is at most the first); read from the environment when not given. */
  retention?: RetentionConfig;
  /** IMPORT_MAX_BYTES: the largest contact import file; read from the environment when not given. */
  importMaxBytes?: number;
  /** Temporal UI (TEMPORAL_UI_URL, on Temporal only: config temporalUiOf): campaigns link to their workflow there. */
  temporalUi?: TemporalUi;
}

/**
 * The Koa app. Order matters: request id → error envelope (and request log) → the console's files (api/console.ts) → routes. The routers are built from
 * the route table (api/routes/index.ts, api/routing.ts), the services the routes call from these deps (api/services.ts).
 */
export function createApp(deps: AppDeps): Koa {
  const hops = deps.trustProxyHops ?? 0;
  const app = new Koa({ proxy: hops > 0, maxIpsCount: hops });
  app.silent = true; // errors are logged once, by errorHandler

  const sessions = deps.sessions ?? loadSessionConfig();
  const { open, people, sending, tracking, management, uploads } = buildRouters(ROUTES, createServices({ ...deps, sessions }), { ...deps, sessions });

  app.use(requestId());
  app.use(httpMetrics()); // outside the error handler: it times the answer the client got, with its status
  app.use(errorHandler(deps.log));
  app.use(consoleApp({ dir: deps.consoleDir })); // /app: static files; `/` from a browser goes there
  for (const router of [open, people, sending, tracking, management, uploads]) {
    app.use(router.routes());
    app.use(router.allowedMethods()); // sets 405/501 + Allow; errorHandler renders the envelope
  }
  return app;
}
