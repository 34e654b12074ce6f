import { TEST_SECRET } from './app';
import { createActivities, type ActivityDeps } from '../../activities';
import { createDeliverer, type DeliveryDeps } from '../../sending/delivery';
import { startDeliveryQueue } from '../../worker/deliveryQueue';
import { createEmbeddedEngine, startEmbeddedWorker } from '../../engine/embedded';
import { startExecutionDispatcher } from '../../worker/executionDispatcher';
import { startWebhookQueue, type WebhookQueueOptions } from '../../worker/webhookQueue';
import { outboundWebhookConfig, type OutboundWebhookConfig } from '../../webhooks/config';
import type { Engine, WorkerHandle } from '../../engine/types';
import { createLogger } from '../../logging/logger';
import { createMailer, type Mailer } from '../../mail/transport';
import type { TestDatabase } from './db';

export interface TestEngine {
  engine: Engine;
  worker: WorkerHandle;
  mailer: Mailer;
  stop(): Promise<void>;
}

/**
 * The real embedded engine (DBOS) on a test database, with an in-process worker delivering through `smtpUrl`.
 * DBOS is one per process; Jest gives each test file its own module registry, so one per test file.
 */
export interface TestEngineOptions {
  sendRatePerSecond?: number;
  /** Stable across a restart of the test's "process", so DBOS recovers the workflows it had in flight. */
  executorId?: string;
  /** WEBHOOK steps: the private addresses the test's webhook receiver is allowed on. */
  webhooks?: ActivityDeps['webhooks'];
  /** VERP return paths at this domain (BOUNCE_DOMAIN), and the soft-bounce rule. */
  bounces?: DeliveryDeps['bounces'];
  /** Outbound webhooks: settings over the defaults (e.g. a loopback receiver allowed, a short retry schedule). */
  outboundWebhooks?: Partial<OutboundWebhookConfig> & Pick<Partial<WebhookQueueOptions>, 'leaseMs' | 'livenessCheckMs' | 'staleAfterMs'>;
  /** DBOS's queue timers (default EMBEDDED_QUEUE_POLL_MS, as workers run): enqueued workflows start when announced. */
  queuePollMs?: number;
}

export async function startTestEngine(db: TestDatabase, smtpUrl: string, opts: TestEngineOptions = {}): Promise<TestEngine> {
  const log = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
  const mailer = createMailer({ smtpUrl, dataDir: '/nonexistent' });
  const engine = await createEmbeddedEngine({ databaseUrl: db.url, log });
  const rate = opts.sendRatePerSecond ?? 1000;
  // As bin/runtime.ts: the campaign workflow paces its drain checks by the same rate the delivery queue keeps.
  const deps = { knex: db.knex, mailer, log, secret: TEST_SECRET, publicUrl: 'http://herald.test', engine, sendRatePerSecond: rate, ...(opts.webhooks ? { webhooks: opts.webhooks } : {}), ...(opts.bounces ? { bounces: opts.bounces } : {}) };
  const executorId = opts.executorId ?? `test-${db.name}`;
  const dbos = await startEmbeddedWorker({ databaseUrl: db.url, log, activities: createActivities(deps), executorId, receivePollMs: 500, ...(opts.queuePollMs ? { pollingIntervalMs: opts.queuePollMs } : {}) });
  const deliveries = startDeliveryQueue({ knex: db.knex, log, deliverer: createDeliverer(deps), ratePerSecond: rate, executorId });
  const { leaseMs, livenessCheckMs, staleAfterMs, ...outbound } = opts.outboundWebhooks ?? {};
  const hooks = startWebhookQueue({
    knex: db.knex, log, secret: TEST_SECRET, executorId, config: { ...outboundWebhookConfig({}), ...outbound },
    ...(leaseMs !== undefined ? { leaseMs } : {}), ...(livenessCheckMs !== undefined ? { livenessCheckMs } : {}), ...(staleAfterMs !== undefined ? { staleAfterMs } : {}),
  });
  // As bin/runtime.ts runs them: the workflows, and the delivery queues beside them, at the workers' own polls. Polled
  // every 50 ms, an idle engine took a third of a core (the files that run one spent seconds of it each); the mail and
  // workflows this process queues wake them at once (metrics/queued.ts, engine/queueWake.ts).
  const worker: WorkerHandle = { stop: async () => { await Promise.all([deliveries.stop(), hooks.stop(), dbos.stop()]); } };
  const executions = startExecutionDispatcher({ engine, knex: db.knex, log });
  return {
    engine,
    worker,
    mailer,
    async stop() {
      await executions.stop();
      await worker.stop();
      await engine.close();
      mailer.close();
    },
  };
}

/** Waits until every listed email has left QUEUED/SENDING; returns their rows (status, error, message_id …). */
export async function waitForEmails(db: TestDatabase, emailIds: string[], timeoutMs = 30_000): Promise<Record<string, { status: string; error: string | null; message_id: string | null; attempts: number }>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await db.knex('emails').whereIn('id', emailIds).select('id', 'status', 'error', 'message_id', 'attempts');
    if (rows.length === emailIds.length && rows.every((r) => r.status !== 'QUEUED' && r.status !== 'SENDING')) {
      return Object.fromEntries(rows.map((r) => [r.id, r]));
    }
    if (Date.now() > deadline) throw new Error(`emails still pending after ${timeoutMs} ms: ${JSON.stringify(rows.map((r) => r.status))}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
