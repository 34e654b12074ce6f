import { createServer, type Server } from 'node:http';
import { createActivities } from '../activities';
import { createDeliverer } from '../sending/delivery';
import { scheduleDomainChecks } from '../domains/checks';
import { scheduleRetention } from '../retention/schedule';
import { ensurePartitions } from '../db/partitions';
import { ConfigError, loadConfig, loadDnsConfig, loadSessionConfig, loadTrackingConfig, publicUrlWarning, returnPathOf, temporalUiOf, type Config } from '../config';
import { loadSecret } from '../config/secret';
import { openDatabase, type Database } from '../db/database';
import { webhookConfig } from '../outbound/http';
import { startDeliveryQueue, type DeliveryQueue } from '../worker/deliveryQueue';
import { startDispatcher } from '../campaigns/dispatch';
import { dispatchPendingImports } from '../contacts/imports/imports';
import { startWebhookQueue, type WebhookQueue } from '../worker/webhookQueue';
import { outboundWebhookConfig } from '../webhooks/config';
import { startExecutionDispatcher } from '../worker/executionDispatcher';
import { startHousekeeping, type Housekeeping } from '../worker/housekeeping';
import { checkClusterEngine, claimWorkerIdentity, ClusterMismatchError, ExecutorIdInUseError, type WorkerIdentity } from '../worker/workerIdentity';
import type { Engine, WorkerHandle } from '../engine/types';
import { createLogger, type Logger } from '../logging/logger';
import type { RenderPool } from '../mail/renderPool';
import type { Submission } from '../smtp/submission';
import { createMailer, rateWindow, type Mailer } from '../mail/transport';
import { ensureDefaultProject, type CreatedProject } from '../projects/service';

/** Reads the configuration or exits with the message that names the bad variable. */
export function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
}

function printDefaultProject(project: CreatedProject, port: number): void {
  // Shown once, on stdout and not through the logger: these keys are stored only as hashes.
  console.log(`
Herald created the project "Default" (${project.id}). Its API keys are shown only this once:
  secret key: ${project.secretKey}
  public key: ${project.publicKey}

Try it:
  curl -X POST http://localhost:${port}/contacts \\
    -H "Authorization: Bearer ${project.secretKey}" -H "Content-Type: application/json" \\
    -d '{"email":"ada@example.com","data":{"firstName":"Ada"}}'
`);
}

function printSetupLink(link: string, hours: number): void {
  // On stdout, not through the logger: the link holds a token that creates the first account (an operator's).
  console.log(`
No account exists yet. Create the first one (an operator, owner of every project) with this one-time link,
valid ${hours} hours (a new one is printed at each start until an account exists):
  ${link}
`);
}

/** A module loaded only by the processes that use it (see startHerald). */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const load = <T>(path: string): T => require(path) as T;

export interface Roles {
  /** Serve the HTTP API. */
  api: boolean;
  /** Run workflows and deliveries. */
  worker: boolean;
}

export interface Running {
  config: Config;
  log: Logger;
  db: Database;
  engine: Engine;
  server?: Server;
  /** The METRICS_PORT listener, when METRICS_PORT is set. */
  metricsServer?: Server;
  stop(): Promise<void>;
}

/**
 * Starts Herald's parts for the given roles on the configured database and engine:
 * `npm start` = API + worker (embedded default), `npm run api` and `npm run worker` = one each.
 */
export async function startHerald(config: Config, roles: Roles, log: Logger = createLogger(config.logLevel)): Promise<Running> {
  const db = await openDatabase(config, log);
  // The months ahead of the partitioned tables (db/partitions.ts), whatever the engine does: a process that writes rows
  // makes sure their months exist (the default partition would take them, but it is for accidents).
  await ensurePartitions(db.knex).catch((err: Error) => log.warn({ err }, 'could not create the partitions ahead; housekeeping tries again'));
  const secret = loadSecret(config);
  const temporal = { address: config.temporalAddress!, namespace: config.temporalNamespace, log };

  // Before the engine, whose start has effects of its own (DBOS's system database): a worker takes its id, unique among
  // live processes and taken over by the next process when this one dies (DBOS recovers what it had in flight, the
  // delivery queue requeues its claims), and checks that its ENGINE and SEND_RATE_PER_SECOND are the cluster's; an API
  // process checks its ENGINE (worker/workerIdentity.ts).
  let identity: WorkerIdentity | undefined;
  try {
    if (roles.worker) {
      identity = await claimWorkerIdentity({
        // A session-level advisory lock: on a session of its own, never through a transaction pooler.
        databaseUrl: db.sessionUrl,
        log,
        ...(config.executorId ? { requested: config.executorId } : {}),
        cluster: { engine: config.engine, sendRatePerSecond: config.sendRatePerSecond },
        onLost: (err) => {
          log.fatal({ err: err.message }, 'this worker lost its executor id; stopping');
          void stop().finally(() => process.exit(1));
        },
      });
    } else {
      await checkClusterEngine(db.sessionUrl, config.engine, log);
    }
  } catch (err) {
    await db.close();
    throw err;
  }

  // Each engine's SDK, and the HTTP app, load only in the processes that run them: a Temporal worker spared DBOS and
  // the API's modules is ~70 MB smaller (BENCHMARKS.md section 7).
  const embedded = config.engine === 'temporal' ? undefined : load<typeof import('../engine/embedded')>('../engine/embedded');
  const cluster = config.engine === 'temporal' ? load<typeof import('../engine/temporal')>('../engine/temporal') : undefined;
  // The engine first: the API starts workflows with it, and so do activities (a domain check schedules the next).
  const engine = await (cluster ? cluster.createTemporalEngine(temporal) : embedded!.createEmbeddedEngine({ databaseUrl: db.sessionUrl, log }))
    .catch(async (err: unknown) => {
      // The id goes back at once (not when the process exits): an in-process caller may try again.
      await identity?.release();
      await db.close();
      throw err;
    });

  let mailer: Mailer | undefined;
  let worker: WorkerHandle | undefined;
  let deliveries: DeliveryQueue | undefined;
  let webhookDeliveries: WebhookQueue | undefined;
  let housekeeping: Housekeeping | undefined;
  let dispatcher: ReturnType<typeof startDispatcher> | undefined;
  let executions: ReturnType<typeof startExecutionDispatcher> | undefined;
  let server: Server | undefined;
  let renderPool: RenderPool | undefined;
  let submission: Submission | undefined;
  let inbound: Submission | undefined;
  let metricsServer: Server | undefined;

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      log.info('shutting down');
      // New requests stop first; in-flight requests finish; then the worker stops taking work and hands back
      // (DBOS: resumes on restart; Temporal: the server reassigns) what it cannot finish; sends in flight finish.
      if (server) await new Promise<void>((resolve) => server!.close(() => resolve()));
      if (metricsServer) await new Promise<void>((resolve) => metricsServer!.close(() => resolve()));
      await submission?.close();
      await inbound?.close();
      await renderPool?.close();
      await dispatcher?.stop();
      await executions?.stop();
      await Promise.all([deliveries?.stop(), webhookDeliveries?.stop(), housekeeping?.stop(), worker?.stop()]);
      await engine.close();
      await identity?.release();
      mailer?.close();
      await db.close();
    })();
    return stopping;
  };

  try {
    if (roles.worker) {
      // The queue limits how fast deliveries start; the gate holds the same limit where the SMTP server counts.
      mailer = createMailer(config, { rateLimit: rateWindow(config.sendRatePerSecond) });
      const deps = {
        knex: db.knex, mailer, log, secret, publicUrl: config.publicUrl, engine, sendRatePerSecond: config.sendRatePerSecond, webhooks: webhookConfig(process.env),
        bounces: { domain: config.bounces.domain, settings: config.bounces }, returnPath: returnPathOf(config), retention: config.retention,
      };
      const activities = createActivities(deps);
      const executorId = identity!.executorId;
      worker = cluster
        ? await cluster.startTemporalWorker({ ...temporal, activities, identity: executorId })
        // DBOS on session connections: its LISTEN/NOTIFY wake-ups and its schema lock need one (README, "Behind PgBouncer").
        : await embedded!.startEmbeddedWorker({ databaseUrl: db.sessionUrl, log, activities, executorId });
      // On either engine, every worker drains the emails table at the shared rate (worker/deliveryQueue.ts).
      deliveries = startDeliveryQueue({ knex: db.knex, log, deliverer: createDeliverer(deps), ratePerSecond: config.sendRatePerSecond, executorId });
      // And every worker delivers the projects' outbound webhooks from their outbox (worker/webhookQueue.ts).
      webhookDeliveries = startWebhookQueue({ knex: db.knex, log, secret, executorId, config: outboundWebhookConfig(process.env) });
      // And deletes what has served its time (passed tracking windows, expired idempotency keys) and merges the contact
      // search index's new entries in the background (worker/housekeeping.ts).
      housekeeping = startHousekeeping({ knex: db.knex, log, eventWindowMs: loadTrackingConfig().eventWindowMs, sessionIdleMinutes: loadSessionConfig().idleMinutes, inboundRetentionDays: config.bounces.inboundRetentionDays });
      log.info({ mail: mailer.describe, executorId, rate: config.sendRatePerSecond }, 'delivering mail');
    }
    dispatcher = roles.worker ? startDispatcher(engine, db.knex, log, secret, [() => dispatchPendingImports({ engine, knex: db.knex, log })]) : undefined;
    // Starts automation executions and delivers their wake-ups from the outbox their events wrote.
    executions = roles.worker ? startExecutionDispatcher({ engine, knex: db.knex, log, maxRunning: config.automationMaxRunning }) : undefined;
    if (roles.worker) {
      // The periodic DNS re-check of sending domains: idempotent per time slot, so every worker may ask for it.
      await scheduleDomainChecks(engine, loadDnsConfig().domainCheckIntervalMinutes * 60_000)
        .catch((err: Error) => log.warn({ err }, 'could not schedule the domain re-check; adding or verifying a domain schedules it'));
      // The retention job (retention/): partitions made ahead, months past RETENTION_DAYS dropped, shorter retentions applied.
      await scheduleRetention(engine)
        .catch((err: Error) => log.warn({ err }, 'could not schedule the retention job; the next worker start tries again'));
    }

    if (roles.api) {
      const created = await ensureDefaultProject(db.knex);
      const warning = publicUrlWarning(config.publicUrl);
      if (warning) log.warn(warning);
      const { createApp } = load<typeof import('../api/app')>('../api/app');
      renderPool = load<typeof import('../mail/renderPool')>('../mail/renderPool').createRenderPool();
      // One send pipeline for HTTP and SMTP: sends that arrive together by either way share a transaction.
      const sender = load<typeof import('../sending/sender')>('../sending/sender').createSender(db.knex, { secret, publicUrl: config.publicUrl, render: renderPool.render });
      const app = createApp({ knex: db.knex, log, apiRateLimitPerMinute: config.apiRateLimitPerMinute, healthTimeoutMs: config.healthTimeoutMs, trustProxyHops: config.trustProxyHops, engine, secret, publicUrl: config.publicUrl, render: renderPool.render, sender, returnPath: returnPathOf(config), inboundMxHost: config.bounces.mxHost, retention: config.retention,
        metricsToken: config.metrics.token, metricsOnOwnPort: config.metrics.port !== undefined, people: config.people, temporalUi: temporalUiOf(config) });
      server = await new Promise<Server>((resolve, reject) => {
        // 32 KB of request line and headers (Node's default is 16 KB): room for GET /contacts/export's filter and
        // columns in the URL, whose longest allowed values, URL-encoded, come to 24 KB. The request timeout is the
        // operator's (HTTP_REQUEST_TIMEOUT_SECONDS, for large imports), looked at often enough to hold a short one.
        const requestTimeout = config.httpRequestTimeoutSeconds * 1000;
        const s = createServer({ maxHeaderSize: 32 * 1024, requestTimeout, connectionsCheckingInterval: Math.min(30_000, requestTimeout / 4) }, app.callback())
          .listen(config.port, () => resolve(s));
        s.once('error', reject);
      });
      const port = (server.address() as { port: number }).port;
      if (created) printDefaultProject(created, port);
      // While no account exists, every start prints a fresh one-time link to create the first (an operator).
      const people = load<typeof import('../people/setup')>('../people/setup');
      const setup = await people.setupLink({ knex: db.knex, publicUrl: config.publicUrl });
      if (setup) printSetupLink(setup, people.SETUP_TTL_HOURS);
      log.info({ port, engine: config.engine, database: config.databaseUrl ? 'external' : 'embedded', dataDir: config.dataDir,
        metrics: config.metrics.port !== undefined ? 'METRICS_PORT' : config.metrics.token ? '/metrics (METRICS_TOKEN)' : '/metrics (no token)' }, 'Herald API listening');
      const tls = config.smtpSubmission.port !== 0 || config.bounces.inboundPort !== 0
        ? await load<typeof import('../smtp/tls')>('../smtp/tls').smtpTls(config.smtpSubmission, config.dataDir, log)
        : undefined;
      if (config.smtpSubmission.port !== 0) {
        submission = await load<typeof import('../smtp/submission')>('../smtp/submission').startSubmission({
          knex: db.knex, sender, log, port: config.smtpSubmission.port, host: config.smtpSubmission.host, tls: tls!,
          insecureAuthOnLoopback: config.smtpSubmission.insecureAuthOnLoopback, ratePerMinute: config.apiRateLimitPerMinute,
          maxSessionMessages: config.smtpSubmission.sessionMaxMessages, maxSessionMs: config.smtpSubmission.sessionMaxSeconds * 1000,
          maxAuthFailures: config.smtpSubmission.authMaxFailures, maxAuthFailuresPerAddress: config.smtpSubmission.authMaxFailuresPerAddress,
          authFailureWindowMs: config.smtpSubmission.authFailureWindowSeconds * 1000, limits: config.smtpLimits,
        });
        log.info({ port: submission.port }, 'Herald SMTP submission listening (STARTTLS, AUTH PLAIN/LOGIN with a secret API key)');
      }
      if (config.bounces.inboundPort !== 0) {
        const authenticate = load<typeof import('../inbound/auth')>('../inbound/auth').authenticator(loadDnsConfig(), config.bounces.mxHost);
        const analysis = load<typeof import('../inbound/analysis')>('../inbound/analysis');
        inbound = await load<typeof import('../smtp/inbound')>('../smtp/inbound').startInbound({
          knex: db.knex, secret, log, settings: config.bounces, bounceDomain: config.bounces.domain, port: config.bounces.inboundPort, host: config.bounces.inboundHost, tls: tls!,
          limits: config.smtpLimits,
          receiver: load<typeof import('../inbound/receive')>('../inbound/receive').inboundReceiver({
            knex: db.knex, secret, publicUrl: config.publicUrl,
            authenticate,
            ...(config.bounces.inboundAnalysisThreads > 0 ? { analyse: analysis.bySize(analysis.inProcess(authenticate), analysis.analysisThreads(config.bounces.inboundAnalysisThreads, loadDnsConfig(), config.bounces.mxHost), analysis.THREAD_MIN_BYTES) } : {}),
          }),
        });
        log.info({ port: inbound.port, bounceDomain: config.bounces.domain ?? null }, 'Herald inbound SMTP listening for bounces, complaints and inbound domains');
      }
    }

    // METRICS_PORT: GET /metrics on a listener of its own, in API and worker processes alike (a worker has no other port,
    // and an operator scrapes the pool through it); the API's port then has no /metrics.
    if (config.metrics.port !== undefined) {
      const { createMetricsApp } = load<typeof import('../api/metricsApp')>('../api/metricsApp');
      const { createMetrics } = load<typeof import('../metrics/metrics')>('../metrics/metrics');
      const app = createMetricsApp({ metrics: createMetrics(db.knex, { log }), token: config.metrics.token, log });
      metricsServer = await new Promise<Server>((resolve, reject) => {
        const s = app.listen(config.metrics.port, () => resolve(s));
        s.once('error', reject);
      });
      log.info({ port: (metricsServer.address() as { port: number }).port, token: config.metrics.token !== undefined }, 'Herald metrics listening (GET /metrics)');
    }
  } catch (err) {
    // A start that fails part-way (a port in use, an SMTP certificate that cannot be read) stops what it had started,
    // the embedded PostgreSQL with the rest (the last process out stops it), rather than leave it running behind.
    await stop().catch((cleanup: unknown) => log.error({ err: cleanup }, 'stopping after a failed start failed'));
    throw err;
  }
  return { config, log, db, engine, server, metricsServer, stop };
}

/** Runs until SIGTERM/SIGINT, then shuts down gracefully. */
export function stopOnSignals(running: Pick<Running, 'stop' | 'log'> | Promise<Pick<Running, 'stop' | 'log'>>, log?: Logger): void {
  const onSignal = (signal: NodeJS.Signals) => {
    // A signal during start-up waits for the start to finish, then stops what it started: the handlers are in place
    // from the first moment, so a SIGTERM while a worker is still starting (recovering, scheduling) is never the
    // default action that kills it mid-way.
    void Promise.resolve(running).then((r) => {
      r.log.info({ signal }, 'signal received');
      return r.stop().then(() => process.exit(0), (err) => {
        r.log.error({ err }, 'shutdown failed');
        process.exit(1);
      });
    }, (err: Error) => {
      // The start failed: main() reports it and exits.
      log?.debug({ err, signal }, 'signal received while the start failed');
    });
  };
  // `on`, not `once`: a signal to the process group reaches this process twice (directly, and relayed by tsx or a
  // process manager); with `once` the second would take the default action and kill the graceful shutdown under way.
  // Repeats are harmless: stop() runs once.
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

/** Entry point helper of bin/start.ts, bin/api.ts and bin/worker.ts. */
export function main(roles: Roles): void {
  const config = configOrExit();
  const log = createLogger(config.logLevel);
  const starting = startHerald(config, roles, log);
  stopOnSignals(starting, log);
  starting.catch((err: Error) => {
    console.error(`Herald failed to start: ${err.message}`);
    // Like a bad variable (configOrExit): restarting cannot help until someone changes the configuration.
    process.exit(err instanceof ExecutorIdInUseError || err instanceof ClusterMismatchError ? 2 : 1);
  });
}
