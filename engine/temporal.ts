import { Client, Connection, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import type { Logger } from '../logging/logger';
import { DELIVERY_QUEUE, WORKFLOW_TASK_QUEUE } from '../workflows/policy';
import type { WorkflowInputs, WorkflowName } from '../workflows/registry';
import type { Activities } from '../workflows/types';
import type { Engine, StartOptions, WorkerHandle } from './types';

/**
 * The cluster engine: Temporal. Connection settings come from the standard Temporal environment variables
 * (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*), read by @temporalio/envconfig.
 */
function connectConfig(address: string, namespace: string) {
  const loaded = loadClientConnectConfig();
  return { connectionOptions: { ...loaded.connectionOptions, address }, namespace: loaded.namespace ?? namespace };
}

export interface TemporalOptions {
  address: string;
  namespace: string;
  log: Logger;
  connectTimeoutMs?: number;
}

export async function createTemporalEngine(opts: TemporalOptions): Promise<Engine> {
  const { connectionOptions, namespace } = connectConfig(opts.address, opts.namespace);
  const connection = await Connection.connect({ ...connectionOptions, connectTimeout: opts.connectTimeoutMs ?? 10_000 } as Parameters<typeof Connection.connect>[0]);
  const client = new Client({ connection, namespace });
  return {
    kind: 'temporal',
    delivery: 'workflows',
    waits: 'engine',
    async start<N extends WorkflowName>(workflow: N, input: WorkflowInputs[N], o: StartOptions) {
      const delay = o.startAt ? Math.max(0, o.startAt.getTime() - Date.now()) : 0;
      try {
        await client.workflow.start(workflow, {
          taskQueue: WORKFLOW_TASK_QUEUE,
          workflowId: o.id,
          args: [input],
          // A start while the workflow runs joins it; a start after it finished is refused: it never runs twice.
          workflowIdConflictPolicy: 'USE_EXISTING',
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          // Inherited by the workflow's activities: the delivery task queue serves transactional mail first.
          priority: { priorityKey: o.priority === 'campaign' ? 5 : 1 },
          ...(delay > 0 ? { startDelay: delay } : {}),
        });
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      }
    },
    async cancel(id) {
      try {
        await client.workflow.getHandle(id).cancel();
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
    },
    async signal(id, name, payload) {
      try {
        await client.workflow.getHandle(id).signal(name, payload);
      } catch (err) {
        // Finished (or terminated in the UI): nobody is waiting for the message.
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
    },
    close: () => connection.close(),
  };
}

export interface TemporalWorkerOptions extends TemporalOptions {
  activities: Activities;
  sendRatePerSecond: number;
  /** Concurrent deliveries of this worker. */
  deliveryConcurrency?: number;
}

/**
 * Two workers in one process: one runs workflows and ordinary activities on the `herald` task queue; the other
 * is activities-only on the delivery task queue, whose rate the Temporal server enforces across all workers
 * (`maxTaskQueueActivitiesPerSecond`; every worker of the queue must set the same value).
 */
export async function startTemporalWorker(opts: TemporalWorkerOptions): Promise<WorkerHandle> {
  const { NativeConnection, Worker } = await import('@temporalio/worker');
  const { connectionOptions, namespace } = connectConfig(opts.address, opts.namespace);
  const connection = await NativeConnection.connect(connectionOptions);
  const { deliverEmail, ...others } = opts.activities;
  const workflowWorker = await Worker.create({
    connection,
    namespace,
    taskQueue: WORKFLOW_TASK_QUEUE,
    workflowsPath: require.resolve('../workflows/temporal'),
    activities: others,
  });
  const deliveryWorker = await Worker.create({
    connection,
    namespace,
    taskQueue: DELIVERY_QUEUE,
    activities: { deliverEmail },
    maxTaskQueueActivitiesPerSecond: opts.sendRatePerSecond,
    maxConcurrentActivityTaskExecutions: opts.deliveryConcurrency ?? 50,
  });
  const running = Promise.all([workflowWorker.run(), deliveryWorker.run()]);
  opts.log.info({ address: opts.address, namespace, rate: opts.sendRatePerSecond }, 'temporal worker running');
  return {
    async stop() {
      // Graceful: stop polling, let in-flight tasks finish (or time out and go back to the server), then close.
      workflowWorker.shutdown();
      deliveryWorker.shutdown();
      await running;
      await connection.close();
    },
  };
}
