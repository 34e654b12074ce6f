import { Client, Connection, ScheduleAlreadyRunning, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { temporal as proto } from '@temporalio/proto';
import type { Logger } from '../logging/logger';
import { HEARTBEAT, HEARTBEATING_ACTIVITIES, WORKFLOW_TASK_QUEUE } from '../workflows/policy';
import type { Activities, WorkflowInputs, WorkflowName } from '../workflows/types';
import type { Engine, StartOptions, WorkerHandle } from './types';
import { workflowBundlePath } from './workflowBundle';
import { workflowFailures, workflowStartFailures, workflowStarts } from '../metrics/registry';
import type { InjectedSinks } from '@temporalio/worker';
import type { HeraldSinks } from '../workflows/temporal';

/**
 * The cluster engine: Temporal. Connection settings come from the standard Temporal environment variables
 * (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*), read by @temporalio/envconfig.
 * Temporal runs campaigns, schedules, automations and the domain re-checks; emails are delivered by every worker
 * from the emails table (worker/deliveryQueue.ts), which measured about 25 times faster than a workflow per
 * email (778 vs 29 emails/s) and serves transactional mail first (README, "How delivery works").
 */
function connectConfig(address: string, namespace: string) {
  const loaded = loadClientConnectConfig();
  return { connectionOptions: { ...loaded.connectionOptions, address }, namespace: loaded.namespace ?? namespace };
}

/**
 * Herald's search attributes: an operator finds a campaign's workflows with `HeraldCampaignId="…"`, a project's with
 * `HeraldProjectId="…"`, an automation's executions with `HeraldAutomationId="…"`, and one kind of work with
 * `HeraldKind="campaign"` (or automation, domain-checks).
 */
export const SEARCH_ATTRIBUTES = {
  projectId: defineSearchAttributeKey('HeraldProjectId', SearchAttributeType.KEYWORD),
  campaignId: defineSearchAttributeKey('HeraldCampaignId', SearchAttributeType.KEYWORD),
  automationId: defineSearchAttributeKey('HeraldAutomationId', SearchAttributeType.KEYWORD),
  kind: defineSearchAttributeKey('HeraldKind', SearchAttributeType.KEYWORD),
};

/** The kind of work of each workflow type (HeraldKind). */
export const KIND: Record<WorkflowName, string> = { sendCampaign: 'campaign', runAutomation: 'automation', checkDomains: 'domain-checks', importContacts: 'contact-import', applyRetention: 'retention' };

function searchAttributes(workflow: WorkflowName, input: unknown, tags: StartOptions['tags']): SearchAttributePair[] {
  const ids = input as { projectId?: string; campaignId?: string };
  const pairs: SearchAttributePair[] = [{ key: SEARCH_ATTRIBUTES.kind, value: KIND[workflow] }];
  if (ids.projectId) pairs.push({ key: SEARCH_ATTRIBUTES.projectId, value: ids.projectId });
  if (ids.campaignId) pairs.push({ key: SEARCH_ATTRIBUTES.campaignId, value: ids.campaignId });
  if (tags?.automationId) pairs.push({ key: SEARCH_ATTRIBUTES.automationId, value: tags.automationId });
  return pairs;
}

/**
 * Registers Herald's search attributes in the namespace where they are missing (idempotent), through the operator
 * service, so Herald runs on any server: a fresh dev server, compose, or one run by someone else. Answers false where
 * the server refuses (Temporal Cloud registers them through its own API): Herald then starts workflows without them.
 */
export async function ensureSearchAttributes(connection: Connection, namespace: string, log: Logger): Promise<boolean> {
  const wanted = Object.values(SEARCH_ATTRIBUTES).map((k) => k.name);
  try {
    const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
    const missing = wanted.filter((name) => !customAttributes?.[name]);
    if (missing.length === 0) return true;
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map((name) => [name, proto.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD])),
    });
    log.info({ namespace, added: missing }, 'registered Herald\'s search attributes');
    return true;
  } catch (err) {
    // Two processes starting together: the other one has just added them.
    if ((err as { code?: number }).code === 6 /* ALREADY_EXISTS */) return true;
    log.warn({ err, namespace, wanted }, 'could not register Herald\'s search attributes; workflows start without them (register them on the server to search by campaign or project)');
    return false;
  }
}

export interface TemporalOptions {
  address: string;
  namespace: string;
  log: Logger;
  connectTimeoutMs?: number;
  /** How long to wait for the namespace to exist (compose: the server creates it on its first start). */
  namespaceWaitMs?: number;
}

/** Connects, and waits for the namespace; a failure names the variable to look at. */
async function connect(opts: TemporalOptions): Promise<{ connection: Connection; namespace: string }> {
  const { connectionOptions, namespace } = connectConfig(opts.address, opts.namespace);
  let connection: Connection;
  try {
    connection = await Connection.connect({ ...connectionOptions, connectTimeout: opts.connectTimeoutMs ?? 10_000 } as Parameters<typeof Connection.connect>[0]);
  } catch (err) {
    throw new Error(`cannot reach the Temporal server at TEMPORAL_ADDRESS=${opts.address}: ${(err as Error).message}`, { cause: err });
  }
  const deadline = Date.now() + (opts.namespaceWaitMs ?? 60_000);
  for (let logged = false; ;) {
    try {
      await connection.workflowService.describeNamespace({ namespace });
      return { connection, namespace };
    } catch (err) {
      const notFound = (err as { code?: number }).code === 5; // NOT_FOUND
      if (!notFound || Date.now() > deadline) {
        await connection.close();
        throw new Error(notFound
          ? `the Temporal namespace "${namespace}" (TEMPORAL_NAMESPACE) does not exist at TEMPORAL_ADDRESS=${opts.address}: create it (temporal operator namespace create -n ${namespace})`
          : `cannot reach the Temporal server at TEMPORAL_ADDRESS=${opts.address}: ${(err as Error).message}`, { cause: err });
      }
      if (!logged) opts.log.warn({ namespace, address: opts.address }, 'waiting for the Temporal namespace to exist');
      logged = true;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

/**
 * How long one call to the server may take. Without a deadline the client retries an unavailable server for 15–20 s
 * (measured: POST /campaigns/:id/send answered after 21 s while Temporal was down), and API requests wait for it. Every
 * caller copes with a failed call: the dispatchers retry starts, a cancel is already in the database, a failed
 * activity is retried.
 */
const CALL_DEADLINE_MS = 5_000;

export async function createTemporalEngine(opts: TemporalOptions): Promise<Engine> {
  const { connection, namespace } = await connect(opts);
  const searchable = await ensureSearchAttributes(connection, namespace, opts.log);
  const client = new Client({ connection, namespace });
  const bounded = <R>(fn: () => Promise<R>) => connection.withDeadline(Date.now() + CALL_DEADLINE_MS, fn);
  const attributes = (workflow: WorkflowName, input: unknown, tags?: StartOptions['tags']) =>
    (searchable ? { typedSearchAttributes: searchAttributes(workflow, input, tags) } : {});
  return {
    kind: 'temporal',
    waits: 'engine',
    async start<N extends WorkflowName>(workflow: N, input: WorkflowInputs[N], o: StartOptions) {
      const delay = o.startAt ? Math.max(0, o.startAt.getTime() - Date.now()) : 0;
      try {
        await bounded(() => client.workflow.start(workflow, {
          taskQueue: WORKFLOW_TASK_QUEUE,
          workflowId: o.id,
          args: [input],
          // A start while the workflow runs joins it; a start after it finished is refused: it never runs twice.
          workflowIdConflictPolicy: 'USE_EXISTING',
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          ...attributes(workflow, input, o.tags),
          ...(o.summary ? { staticSummary: o.summary } : {}),
          ...(delay > 0 ? { startDelay: delay } : {}),
        }));
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) {
          workflowStartFailures.inc({ engine: 'temporal', workflow });
          throw err;
        }
      }
      workflowStarts.inc({ engine: 'temporal', workflow });
    },
    async schedule<N extends WorkflowName>(workflow: N, input: WorkflowInputs[N], o: { id: string; everyMs: number; summary?: string }) {
      const spec = { intervals: [{ every: o.everyMs }] };
      try {
        await bounded(() => client.schedule.create({
          scheduleId: o.id,
          spec,
          action: {
            type: 'startWorkflow', workflowType: workflow, args: [input], taskQueue: WORKFLOW_TASK_QUEUE, workflowId: o.id,
            ...attributes(workflow, input), ...(o.summary ? { staticSummary: o.summary } : {}),
          },
          // A run still going when the next is due: skip that one. A server that was down: no burst of missed runs.
          policies: { overlap: 'SKIP', catchupWindow: '1 minute' },
        }));
      } catch (err) {
        if (!(err instanceof ScheduleAlreadyRunning)) throw err;
        const handle = client.schedule.getHandle(o.id);
        const current = (await bounded(() => handle.describe())).spec.intervals?.[0]?.every;
        if (current !== o.everyMs) await bounded(() => handle.update((prev) => ({ ...prev, spec })));
      }
    },
    async cancel(id) {
      try {
        await bounded(() => client.workflow.getHandle(id).cancel());
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
    },
    async signal(id, name, payload) {
      try {
        await bounded(() => client.workflow.getHandle(id).signal(name, payload));
      } catch (err) {
        // Finished (or terminated in the UI): nobody is waiting for the message.
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
    },
    close: () => connection.close(),
  };
}

/** The worker's side of workflows/temporal.ts's sinks: a failed run counted in this worker's metrics. */
function heraldSinks(): InjectedSinks<HeraldSinks> {
  return {
    metrics: {
      workflowFailed: { fn: (_info, workflow) => workflowFailures.inc({ engine: 'temporal', workflow }), callDuringReplay: false },
    },
  };
}

export interface TemporalWorkerOptions extends TemporalOptions {
  activities: Activities;
  /**
   * The worker's identity at the server, as Temporal UI shows it (pollers, activity attempts): Herald's executor id
   * (worker/workerIdentity.ts), the name the worker's claims and logs carry, instead of the SDK's `pid@host`.
   */
  identity?: string;
}

/**
 * The activities of HEARTBEATING_ACTIVITIES beating every HEARTBEAT.everyMs while they run (from a timer: a batch
 * waiting on one long statement still beats, a killed worker does not), so that the server notices a lost worker
 * within HEARTBEAT.timeoutMs (workflows/temporal.ts asks for that timeout).
 */
async function withHeartbeats(activities: Activities): Promise<Activities> {
  const { Context } = await import('@temporalio/activity');
  const wrapped: Record<string, unknown> = { ...activities };
  for (const name of HEARTBEATING_ACTIVITIES) {
    const fn = (activities as unknown as Record<string, unknown>)[name];
    if (typeof fn !== 'function') continue;
    wrapped[name] = async (...args: unknown[]) => {
      const context = Context.current();
      const timer = setInterval(() => context.heartbeat(), HEARTBEAT.everyMs);
      try {
        return await (fn as (...a: unknown[]) => Promise<unknown>)(...args);
      } finally {
        clearInterval(timer);
      }
    };
  }
  return wrapped as unknown as Activities;
}

/**
 * The options of Herald's Temporal worker beside its connection, task queue and code (startTemporalWorker); the
 * execution bench's floor worker takes the same (bench/temporalExecutions.ts).
 *
 * `maxCachedWorkflows`: the SDK derives its default from the heap's limit, and at the 160 MB that `npm run worker`
 * gives it (--max-old-space-size=160, for its RSS) that is 10, which also caps the workflow tasks run at once at 10.
 * With more executions live than that (the dispatcher admits 200 running on Temporal, and those waiting in a delay
 * come back), nearly every workflow task missed the cache and replayed its history: a no-op workflow of the typical
 * automation's shape cost the worker 226–236 ms of CPU per execution with 10 cached against 90 with the SDK's default
 * for a normal heap, and 98 with 100 (BENCHMARKS.md section 38). 100 small interpreter workflows fit the heap; the
 * worker's peak RSS through 150 executions was 310–321 MB (290 with 10).
 */
export function temporalWorkerTuning(): { maxCachedWorkflows?: number } {
  return { maxCachedWorkflows: 100 };
}

/**
 * Runs workflows and their activities on the `herald` task queue. Any number of workers may poll it: the server hands
 * each task to one of them, and a stopped worker's tasks to the others.
 */
export async function startTemporalWorker(opts: TemporalWorkerOptions): Promise<WorkerHandle> {
  const { DefaultLogger, NativeConnection, Runtime, Worker } = await import('@temporalio/worker');
  // Once per process, before the first worker. No signal handlers of the SDK's own: Herald's (bin/runtime.ts) stop the
  // worker, after the dispatchers (with them, a SIGTERM drained the worker first and Herald's stop() then failed on it).
  // The SDK's log goes through Herald's logger; its INFO (bundler output, state changes) is Herald's debug.
  try {
    const sdk = opts.log.child({ component: 'temporal' });
    Runtime.install({
      shutdownSignals: [],
      logger: new DefaultLogger('INFO', ({ level, message, meta }) => {
        const method = level === 'ERROR' ? 'error' : level === 'WARN' ? 'warn' : 'debug';
        sdk[method](meta ?? {}, message);
      }),
    });
  } catch {
    // already installed by an earlier worker of this process
  }
  const { connectionOptions, namespace } = connectConfig(opts.address, opts.namespace);
  const connection = await NativeConnection.connect(connectionOptions);
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue: WORKFLOW_TASK_QUEUE,
    ...(opts.identity ? { identity: opts.identity } : {}),
    workflowBundle: { codePath: await workflowBundlePath() },
    activities: await withHeartbeats(opts.activities),
    sinks: heraldSinks(),
    ...temporalWorkerTuning(),
  });
  const running = worker.run();
  opts.log.info({ address: opts.address, namespace, taskQueue: WORKFLOW_TASK_QUEUE, identity: worker.options.identity, maxCachedWorkflows: worker.options.maxCachedWorkflows }, 'temporal worker running');
  return {
    async stop() {
      // Graceful: stop polling, let in-flight tasks finish (or time out and go back to the server), then close.
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}
