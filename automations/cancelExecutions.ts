import type { Logger } from '../logging/logger';
import { workflowId } from '../workflows/registry';
import type { Engine } from '../engine/types';

/** Engine cancels in flight at once: an automation with thousands of journeys under way must not flood the engine. */
const CONCURRENCY = 16;

/**
 * Tells the engine that these executions were cancelled (their rows already say CANCELLED), in the background.
 * Best effort by design: the row is the truth, and an engine workflow that misses this stops at its next step or
 * wake-up, when its activity finds the row cancelled. The cancel makes it stop now (and shows it in the Temporal UI).
 */
export function cancelEngineExecutions(engine: Engine, executions: { id: string; run: number }[], log: Logger): Promise<void> {
  const queue = [...executions];
  const worker = async () => {
    for (let x = queue.shift(); x !== undefined; x = queue.shift()) {
      try {
        await engine.cancel(workflowId.runAutomation({ executionId: x.id, run: x.run }));
      } catch (err) {
        log.warn({ err, executionId: x.id }, 'could not cancel an execution in the engine; it stops at its next step');
      }
    }
  };
  return Promise.all(Array.from({ length: Math.min(CONCURRENCY, queue.length) }, worker)).then(() => undefined);
}
