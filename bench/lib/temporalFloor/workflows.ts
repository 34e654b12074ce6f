/**
 * The floor of bench/temporalExecutions.ts: a workflow that does nothing, with the shape of Herald's typical automation
 * execution on Temporal (workflows/temporal.ts running workflows/runAutomation.ts over "send an email, wait, a
 * condition, send another"): three activities (startExecution, runStep, beginWait), one timer (the wait: a `condition`
 * on the wake-up signal with a timeout, as WorkflowContext.receive is), then three more (checkWait, runStep, runStep),
 * with the same activity options and the same signal handler. Its activities (temporal-floor-child.ts) return at once.
 *
 * It is exported as `runAutomation` so that it is started exactly as Herald starts an execution (engine/temporal.ts
 * `start`: the same workflow type, task queue, id policies and search attributes); it is registered only by the bench's
 * own worker, which never runs beside Herald's (both poll the `herald` task queue).
 */
import { condition, defineSignal, proxyActivities, setHandler } from '@temporalio/workflow';

export interface FloorActivities {
  step(input: { executionId: string; n: number }): Promise<{ n: number }>;
  /** The last step: the worker counts the execution done. */
  done(input: { executionId: string }): Promise<void>;
}

const { step, done } = proxyActivities<FloorActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: 500, backoffCoefficient: 2, maximumInterval: 30_000, maximumAttempts: 10 },
});
const wake = defineSignal<[unknown]>('wake');

export async function runAutomation(input: { projectId: string; executionId: string; waitMs?: number }): Promise<string> {
  let woken = 0;
  setHandler(wake, () => { woken++; });
  const ref = { executionId: input.executionId };
  await step({ ...ref, n: 1 }); // startExecution
  await step({ ...ref, n: 2 }); // runStep: SEND_EMAIL
  await step({ ...ref, n: 3 }); // beginWait
  await condition(() => woken > 0, input.waitMs ?? 3000); // the wait's timer
  await step({ ...ref, n: 4 }); // checkWait
  await step({ ...ref, n: 5 }); // runStep: CONDITION
  await done(ref); // runStep: SEND_EMAIL, the last step
  return 'COMPLETED';
}
