/**
 * The floor's Temporal worker (bench/temporalExecutions.ts): polls the `herald` task queue with the no-op workflow of
 * temporalFloor/workflows.ts (a bundle built by the parent and passed as BENCH_FLOOR_BUNDLE) and activities that
 * return at once. Worker options: Herald's own (engine/temporal.ts `temporalWorkerTuning`) unless BENCH_FLOOR_DEFAULTS=1
 * (the SDK's defaults). Says `ready`, then `done` messages with the number of executions finished since the last one and how many are in their wait
 * (every 100 ms at most: one IPC message per execution would cost the worker more than the activity).
 */
import { NativeConnection, Runtime, Worker, DefaultLogger } from '@temporalio/worker';
import { temporalWorkerTuning } from '../../engine/temporal';

async function main() {
  Runtime.install({ shutdownSignals: [], logger: new DefaultLogger('WARN') });
  const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  let finished = 0;
  // Executions between their wait's start and its end (the dispatcher's admission leaves waiting ones out).
  let waiting = 0;
  let sentWaiting = 0;
  const flush = setInterval(() => {
    if (finished > 0 || waiting !== sentWaiting) {
      process.send!({ type: 'done', n: finished, waiting });
      finished = 0;
      sentWaiting = waiting;
    }
  }, 100);
  const worker = await Worker.create({
    connection,
    namespace: 'default',
    taskQueue: 'herald',
    workflowBundle: { codePath: process.env.BENCH_FLOOR_BUNDLE! },
    activities: {
      step: async (input: { n: number }) => {
        if (input.n === 3) waiting++;
        else if (input.n === 4) waiting--;
        return { n: input.n };
      },
      done: async () => { finished++; },
    },
    ...(process.env.BENCH_FLOOR_DEFAULTS === '1' ? {} : temporalWorkerTuning()),
  });
  const running = worker.run();
  process.send!({ type: 'ready', cachedWorkflows: worker.options.maxCachedWorkflows });
  process.on('SIGTERM', () => worker.shutdown());
  await running;
  clearInterval(flush);
  await connection.close();
  process.exit(0);
}

main().catch((err: Error) => {
  console.error(`floor worker failed: ${err.stack ?? err.message}`);
  process.exit(1);
});
