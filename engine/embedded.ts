import os from 'node:os';
import { DBOS, DBOSClient } from '@dbos-inc/dbos-sdk';
import pg from 'pg';
import { migrateSystemDatabase } from '@dbos-inc/dbos-sdk/internal/system_database';
import type { Logger } from '../logging/logger';
import type { WorkflowContext } from '../workflows/context';
import { ACTIVITY_RETRY, DELIVERY_QUEUE, DELIVERY_RETRY, type RetryPolicy } from '../workflows/policy';
import { workflows, type WorkflowInputs, type WorkflowName } from '../workflows/registry';
import type { Activities, OtherActivities } from '../workflows/types';
import { WORKFLOWS_VERSION, type Engine, type Priority, type StartOptions, type WorkerHandle } from './types';

/**
 * The embedded engine: DBOS Transact inside Herald's own PostgreSQL (schema `dbos`). Workflows run in-process
 * in every worker; queues live in the database, so several processes share them (and their rate limits).
 *
 * Starting a workflow always goes through a DBOSClient (an enqueue, i.e. one INSERT), so API-only processes run
 * no workflows at all, and `npm start` (API + worker) uses the very same path.
 */

const APP_NAME = 'herald';
const SCHEMA = 'dbos';
/** Queue of the workflows that are not deliveries (campaigns, automations): no rate limit. */
const DEFAULT_QUEUE = 'herald-workflows';
/** DBOS dequeues lower numbers first. */
const PRIORITY: Record<Priority, number> = { transactional: 1, campaign: 5 };

export interface EmbeddedOptions {
  databaseUrl: string;
  log: Logger;
}

function dbosLogger(log: Logger) {
  const child = log.child({ component: 'dbos' });
  const text = (entry: unknown) => (typeof entry === 'string' ? entry : JSON.stringify(entry));
  return {
    info: (e: unknown) => child.debug(text(e)), // DBOS is chatty at info; our info log stays about Herald
    debug: (e: unknown) => child.trace(text(e)),
    warn: (e: unknown) => child.warn(text(e)),
    error: (e: unknown) => child.error({ err: e instanceof Error ? e : undefined }, e instanceof Error ? e.message : text(e)),
  };
}

/** Where and how a workflow is enqueued: delivery workflows on the rate-limited queue, a start time as a delay. */
function enqueueOptions(workflow: WorkflowName, opts: StartOptions) {
  const delayMs = opts.startAt ? opts.startAt.getTime() - Date.now() : 0;
  return {
    queueName: workflows[workflow].queue === 'delivery' ? DELIVERY_QUEUE : DEFAULT_QUEUE,
    workflowName: workflow,
    workflowID: opts.id,
    appVersion: WORKFLOWS_VERSION,
    priority: PRIORITY[opts.priority ?? 'transactional'],
    ...(delayMs > 0 ? { delaySeconds: delayMs / 1000 } : {}),
  };
}

export async function createEmbeddedEngine({ databaseUrl, log }: EmbeddedOptions): Promise<Engine> {
  // DBOS creates its schema when a worker launches; an API process may start first (or alone, as in the cluster of
  // processes), and its enqueues need the tables. Creating or migrating them is idempotent but takes no lock: two
  // processes starting together on a fresh database collide (duplicate key, deadlock), so Herald serialises them.
  // The lock is polled, not awaited: a session blocked in pg_advisory_lock() would hold a snapshot that the
  // migration's CREATE INDEX CONCURRENTLY waits for (observed: both processes hang).
  const lockClient = new pg.Client({ connectionString: databaseUrl });
  await lockClient.connect();
  try {
    while (!(await lockClient.query("SELECT pg_try_advisory_lock(hashtext('herald:dbos-schema')) AS ok")).rows[0].ok) {
      await new Promise((r) => setTimeout(r, 100));
    }
    await migrateSystemDatabase(databaseUrl, dbosLogger(log) as unknown as Parameters<typeof migrateSystemDatabase>[1], SCHEMA);
  } finally {
    await lockClient.end(); // releases the session lock
  }
  const client = await DBOSClient.create({ systemDatabaseUrl: databaseUrl, systemDatabaseSchemaName: SCHEMA, applicationName: APP_NAME, logger: dbosLogger(log) });
  return {
    kind: 'embedded',
    async start<N extends WorkflowName>(workflow: N, input: WorkflowInputs[N], opts: StartOptions) {
      await client.enqueue(enqueueOptions(workflow, opts), input);
    },
    async startInTransaction(trx, workflow, input, opts) {
      // knex hands out the transaction's own pg client; DBOS's tables live in the same database (schema dbos).
      const pgClient = await (trx as unknown as { client: { acquireConnection(): Promise<Parameters<DBOSClient['enqueueInTransaction']>[0]> } }).client.acquireConnection();
      await client.enqueueInTransaction(pgClient, enqueueOptions(workflow, opts), input);
    },
    cancel: (id) => client.cancelWorkflow(id),
    signal: (id, name, payload) => client.send(id, payload, name),
    close: () => client.destroy(),
  };
}

function stepOptions(p: RetryPolicy) {
  return { retriesAllowed: true, maxAttempts: p.maximumAttempts, intervalSeconds: p.initialIntervalMs / 1000, backoffRate: p.backoffCoefficient };
}

/** DBOS rate limits are whole workflows per period: 14/s → 14 per 1 s, 2.5/s → 5 per 2 s, 0.2/s → 1 per 5 s. */
export function queueRateLimit(perSecond: number): { limitPerPeriod: number; periodSec: number } {
  for (let period = 1; period <= 10; period++) {
    const limit = perSecond * period;
    if (Math.abs(limit - Math.round(limit)) < 1e-9 && Math.round(limit) >= 1) return { limitPerPeriod: Math.round(limit), periodSec: period };
  }
  return perSecond >= 1 ? { limitPerPeriod: Math.floor(perSecond), periodSec: 1 } : { limitPerPeriod: 1, periodSec: 1 / perSecond };
}

export interface EmbeddedWorkerOptions {
  databaseUrl: string;
  log: Logger;
  activities: Activities;
  sendRatePerSecond: number;
  /** Stable per process: DBOS recovers a crashed process's workflows when a process with the same id starts. */
  executorId?: string;
  /** How many deliveries run at once in this process. */
  deliveryConcurrency?: number;
  /** Queue polling interval (lower: less latency, more queries). */
  pollingIntervalMs?: number;
}

/**
 * Runs the workflows of workflows/ on DBOS in this process: each workflow is registered once with a context whose
 * activities are DBOS steps (retried per policy). Delivery workflows run on the rate-limited queue, so their
 * delivery step runs inline.
 */
export async function startEmbeddedWorker(opts: EmbeddedWorkerOptions): Promise<WorkerHandle> {
  const { activities } = opts;
  const step = <A extends unknown[], R>(name: string, fn: (...a: A) => Promise<R>, policy: RetryPolicy) =>
    (...args: A) => DBOS.runStep(() => fn(...args), { name, ...stepOptions(policy) });

  const context: WorkflowContext = {
    // Not a DBOS step: a step costs ~7 statements (status checks, owner lock, output record) per email, and the
    // delivery activity is idempotent by itself (it claims QUEUED/SENDING rows and skips the rest), so a re-run after a
    // crash is as safe as a step's re-run. Retries back off with durable sleeps, which cost nothing on success.
    delivery: {
      deliverEmail: async (ref) => {
        let delay: number = DELIVERY_RETRY.initialIntervalMs;
        for (let attempt = 1; ; attempt++) {
          try {
            return await activities.deliverEmail(ref);
          } catch (err) {
            if (attempt >= DELIVERY_RETRY.maximumAttempts) throw err;
            await DBOS.sleep(delay);
            delay = Math.min(delay * DELIVERY_RETRY.backoffCoefficient, DELIVERY_RETRY.maximumIntervalMs);
          }
        }
      },
    },
    // Every other activity becomes a DBOS step of the same name, retried per ACTIVITY_RETRY.
    activities: Object.fromEntries(Object.entries(activities)
      .filter(([name]) => name !== 'deliverEmail')
      .map(([name, fn]) => [name, step(name, fn as (...a: unknown[]) => Promise<unknown>, ACTIVITY_RETRY)])) as unknown as OtherActivities,
    sleep: (ms) => DBOS.sleep(ms),
    now: () => DBOS.now(),
    // DBOS stops a cancelled workflow at its next DBOS call rather than raising inside it, so there is no
    // cancellation to catch here: whoever cancels through Herald updates the database itself.
    isCancellation: () => false,
    nonCancellable: (fn) => fn(),
    continueAsNew: (workflow, input) => (workflows[workflow].run as (c: WorkflowContext, i: unknown) => Promise<unknown>)(context, input) as Promise<never>,
  };
  for (const [name, def] of Object.entries(workflows)) {
    const run = def.run as (ctx: WorkflowContext, input: unknown) => Promise<unknown>;
    DBOS.registerWorkflow(async (input: unknown) => run(context, input), { name });
  }

  DBOS.setConfig({
    name: APP_NAME,
    systemDatabaseUrl: opts.databaseUrl,
    systemDatabaseSchemaName: SCHEMA,
    applicationVersion: WORKFLOWS_VERSION,
    executorID: opts.executorId ?? `herald-${os.hostname()}`,
    runAdminServer: false,
    logger: dbosLogger(opts.log),
  });
  await DBOS.launch();
  const polling = opts.pollingIntervalMs ?? 100;
  await DBOS.registerQueue(DELIVERY_QUEUE, {
    rateLimit: queueRateLimit(opts.sendRatePerSecond),
    workerConcurrency: opts.deliveryConcurrency ?? 200,
    minPollingIntervalMs: polling,
    onConflict: 'always_update',
  });
  await DBOS.registerQueue(DEFAULT_QUEUE, { workerConcurrency: 20, minPollingIntervalMs: polling, onConflict: 'always_update' });
  opts.log.info({ executorId: opts.executorId, rate: opts.sendRatePerSecond }, 'embedded worker running');
  return {
    // DBOS stops dequeuing and ends; workflows in flight resume on the next start with this executor id.
    stop: () => DBOS.shutdown(),
  };
}
