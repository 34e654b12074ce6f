import os from 'node:os';
import { DBOS, DBOSClient, Error as DBOSErrors } from '@dbos-inc/dbos-sdk';
import pg from 'pg';
import { migrateSystemDatabase } from '@dbos-inc/dbos-sdk/internal/system_database';
import type { Logger } from '../logging/logger';
import type { WorkflowContext } from '../workflows/context';
import { ACTIVITY_RETRY, PERMANENT_ERROR, WEBHOOK_RETRY, type RetryPolicy } from '../workflows/policy';
import { queueOf, workflows } from '../workflows/registry';
import { PARK_AFTER_MS } from '../workflows/runAutomation';
import type { Activities, OtherActivities, WorkflowInputs, WorkflowName } from '../workflows/types';
import { workflowFailures, workflowStartFailures, workflowStarts } from '../metrics/registry';
import { WORKFLOWS_VERSION, type Engine, type StartOptions, type WorkerHandle } from './types';
import { EMBEDDED_QUEUE_POLL_MS, enqueueAnnouncer, listenForEnqueues, queuePoller } from './queueWake';

/**
 * The embedded engine: DBOS Transact inside Herald's own PostgreSQL (schema `dbos`). Workflows run in-process
 * in every worker; queues live in the database, so several processes share them. Deliveries do not go through DBOS:
 * the emails table is their rate-limited queue (worker/deliveryQueue.ts), on this engine as on Temporal.
 *
 * Starting a workflow always goes through a DBOSClient (an enqueue, i.e. one INSERT), so API-only processes run
 * no workflows at all, and `npm start` (API + worker) uses the very same path. Each enqueue is announced, and the
 * workers poll the queue when they hear it rather than waiting for their timers (engine/queueWake.ts).
 */

const APP_NAME = 'herald';
const SCHEMA = 'dbos';
/** Queue of the workflows that are not deliveries (campaigns, domain checks): no rate limit. */
const DEFAULT_QUEUE = 'herald-workflows';
/**
 * Queue of automation executions: no concurrency limit, since DBOS counts a waiting (sleeping, receiving) workflow
 * against its queue's limit and an execution may wait for a year. Their activities are short database steps.
 */
const AUTOMATION_QUEUE = 'herald-automations';
/**
 * How often a waiting execution looks for its messages in the database besides LISTEN/NOTIFY, which wakes it at
 * once: only a missed notification (a dropped connection) waits this long. DBOS's default (10 s) would cost one
 * query per 10 s per waiting execution.
 */
const RECEIVE_POLL_MS = 60_000;

/** DBOS's own cap on a system database connection idle in a transaction (DEFAULT_IDLE_TRANSACTION_TIMEOUT_MS). */
const IDLE_TRANSACTION_TIMEOUT_MS = 60_000;

/**
 * The URL DBOS gets for its system database: Herald's, with `idle_in_transaction_session_timeout` among the startup
 * options, so each connection has it from the handshake on.
 *
 * Without it, DBOS 5.3.0 (5.3.0 is the newest) sets the timeout itself: its system database pool's 'connect'
 * listener calls `client.query('SET idle_in_transaction_session_timeout = …')` without awaiting it. pg-pool emits
 * 'connect' synchronously and then hands the client to the borrower, whose first query (a `pool.query()`) is
 * queued behind that SET: pg 8 warns "Calling client.query() when the client is already executing a query"
 * (DeprecationWarning, once per process, on the first connection), and on pg 9 it is an error. DBOS skips its
 * listener when the URL's `options` already set this timeout (setsIdleTransactionTimeout), so the cap stays the
 * same and no query is pipelined. An `options` already in the URL is kept; one that sets the timeout is left alone.
 */
export function dbosSystemDatabaseUrl(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  const options = url.searchParams.get('options') ?? '';
  if (options.includes('idle_in_transaction_session_timeout')) return databaseUrl;
  url.searchParams.set('options', [options, `-c idle_in_transaction_session_timeout=${IDLE_TRANSACTION_TIMEOUT_MS}`].filter(Boolean).join(' '));
  return url.toString();
}

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

/** How a workflow is enqueued: a start time becomes a delay. */
function enqueueOptions<N extends WorkflowName>(workflow: N, input: WorkflowInputs[N], opts: StartOptions) {
  const delayMs = opts.startAt ? opts.startAt.getTime() - Date.now() : 0;
  return {
    queueName: queueOf(workflow, input) === 'automation' ? AUTOMATION_QUEUE : DEFAULT_QUEUE,
    workflowName: workflow,
    workflowID: opts.id,
    appVersion: WORKFLOWS_VERSION,
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
  const client = await DBOSClient.create({ systemDatabaseUrl: dbosSystemDatabaseUrl(databaseUrl), systemDatabaseSchemaName: SCHEMA, applicationName: APP_NAME, logger: dbosLogger(log) });
  const announcer = enqueueAnnouncer(databaseUrl, log);
  return {
    kind: 'embedded',
    waits: 'parked',
    async start<N extends WorkflowName>(workflow: N, input: WorkflowInputs[N], opts: StartOptions) {
      const options = enqueueOptions(workflow, input, opts);
      try {
        await client.enqueue(options, input);
      } catch (err) {
        workflowStartFailures.inc({ engine: 'embedded', workflow });
        throw err;
      }
      workflowStarts.inc({ engine: 'embedded', workflow });
      // A delayed start is not in the queue yet: DBOS moves it there at its time, and the timers find it.
      if (options.delaySeconds === undefined) await announcer.announce(options.queueName);
    },
    cancel: (id) => client.cancelWorkflow(id),
    async signal(id, name, payload) {
      try {
        await client.send(id, payload, name);
      } catch (err) {
        if (!(err instanceof DBOSErrors.DBOSNonExistentWorkflowError)) throw err; // nobody to tell
      }
    },
    close: async () => { await Promise.all([client.destroy(), announcer.close()]); },
  };
}

function stepOptions(p: RetryPolicy) {
  return {
    retriesAllowed: true, maxAttempts: p.maximumAttempts, intervalSeconds: p.initialIntervalMs / 1000, backoffRate: p.backoffCoefficient,
    // A permanent failure (engine/permanent.ts) is not retried: DBOS records it and the workflow hears of it at once.
    shouldRetry: (err: unknown) => (err as { name?: unknown } | null)?.name !== PERMANENT_ERROR,
  };
}

export interface EmbeddedWorkerOptions {
  databaseUrl: string;
  log: Logger;
  activities: Activities;
  /** Stable per process: DBOS recovers a crashed process's workflows when a process with the same id starts. */
  executorId?: string;
  /** How often each queue is polled besides the announced enqueues (default EMBEDDED_QUEUE_POLL_MS). */
  pollingIntervalMs?: number;
  /**
   * How often a waiting workflow polls for messages besides LISTEN/NOTIFY (default RECEIVE_POLL_MS). Its timer
   * outlives DBOS.shutdown, so an in-process test harness that stops and goes on sets it low.
   */
  receivePollMs?: number;
}

/**
 * Runs the workflows of workflows/ in this process on DBOS, each registered once with a context whose activities are
 * DBOS steps (retried per policy).
 */
export async function startEmbeddedWorker(opts: EmbeddedWorkerOptions): Promise<WorkerHandle> {
  const { activities } = opts;
  const executorId = opts.executorId ?? `herald-${os.hostname()}`;
  const step = <A extends unknown[], R>(name: string, fn: (...a: A) => Promise<R>, policy: RetryPolicy) =>
    (...args: A) => DBOS.runStep(() => fn(...args), { name, ...stepOptions(policy) });

  const context: WorkflowContext = {
    webhooks: { callWebhook: step('callWebhook', activities.callWebhook, WEBHOOK_RETRY) },
    // Every other activity becomes a DBOS step of the same name, retried per ACTIVITY_RETRY.
    activities: Object.fromEntries(Object.entries(activities)
      .filter(([name]) => name !== 'callWebhook')
      .map(([name, fn]) => [name, step(name, fn as (...a: unknown[]) => Promise<unknown>, ACTIVITY_RETRY)])) as unknown as OtherActivities,
    sleep: (ms) => DBOS.sleep(ms),
    parkAfterMs: PARK_AFTER_MS,
    receive: async (topic, timeoutMs) => (await DBOS.recv(topic, { timeoutSeconds: Math.max(timeoutMs, 1) / 1000, pollingIntervalMs: opts.receivePollMs ?? RECEIVE_POLL_MS })) !== null,
    now: () => DBOS.now(),
    // DBOS stops a cancelled workflow at its next DBOS call rather than raising inside it, so there is no
    // cancellation to catch here: whoever cancels through Herald updates the database itself.
    isCancellation: () => false,
    nonCancellable: (fn) => fn(),
    continueAsNew: (workflow, input) => (workflows[workflow].run as (c: WorkflowContext, i: unknown) => Promise<unknown>)(context, input) as Promise<never>,
    continueAsNewSuggested: () => false, // DBOS keeps no history to bound
    patched: () => true, // DBOS recovers a workflow by application version (WORKFLOWS_VERSION), not by replaying a history
  };
  for (const [name, def] of Object.entries(workflows)) {
    const run = def.run as (ctx: WorkflowContext, input: unknown) => Promise<unknown>;
    DBOS.registerWorkflow(async (input: unknown) => {
      try {
        return await run(context, input);
      } catch (err) {
        // herald_engine_workflow_failures_total: a run that ended in an error; a cancel (Herald's or the CLI's) is not one.
        if (!(err instanceof DBOSErrors.DBOSWorkflowCancelledError)) workflowFailures.inc({ engine: 'embedded', workflow: name });
        throw err;
      }
    }, { name });
  }

  DBOS.setConfig({
    name: APP_NAME,
    systemDatabaseUrl: dbosSystemDatabaseUrl(opts.databaseUrl),
    systemDatabaseSchemaName: SCHEMA,
    applicationVersion: WORKFLOWS_VERSION,
    executorID: executorId,
    runAdminServer: false,
    logger: dbosLogger(opts.log),
  });
  await DBOS.launch();
  const polling = opts.pollingIntervalMs ?? EMBEDDED_QUEUE_POLL_MS;
  await DBOS.registerQueue(DEFAULT_QUEUE, { workerConcurrency: 20, minPollingIntervalMs: polling, onConflict: 'always_update' });
  await DBOS.registerQueue(AUTOMATION_QUEUE, { minPollingIntervalMs: polling, onConflict: 'always_update' });
  const poll = queuePoller(opts.log);
  const announcements = await listenForEnqueues(opts.databaseUrl, opts.log, (queue) => {
    if (queue === DEFAULT_QUEUE || queue === AUTOMATION_QUEUE) poll(queue);
  });
  opts.log.info({ executorId }, 'embedded worker running');
  return {
    // Workflows in flight resume on the next start with this executor id.
    stop: async () => {
      await announcements.stop();
      await DBOS.shutdown();
    },
  };
}
