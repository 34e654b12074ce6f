import type { WorkflowContext } from './context';
import { activityFailureMessage } from './failure';
import { WAKE_TOPIC } from './policy';
import type { RunAutomationInput, ExecutionRef, ExecutionStatus, Step, StepOutcome, WaitClock, WaitState } from './types';

/**
 * Step runs per engine run before continue-as-new. A step is one or two activities (about 3 history events each)
 * and a wait adds a timer per chunk, so 100 steps stay far below Temporal's history limits (51,200 events); a
 * journey that loops through a DELAY for years simply continues in fresh runs. DBOS has no history to bound.
 */
export const STEPS_PER_RUN = 100;
/**
 * Longest single timer of a wait. A 365-day delay is slept in chunks, each ending in a look at the database (the
 * deadline may have been moved), so no timer approaches the limits of setTimeout or of a history.
 */
export const WAIT_CHUNK_MS = 7 * 24 * 60 * 60 * 1000;
/**
 * On engines that park waits (WorkflowContext.parkAfterMs), a wait with more than this left ends the run: a waiting
 * DBOS workflow holds about 10 KB of worker memory, so 7,000 journeys in a 3-day delay filled a worker's heap. Shorter
 * waits stay in the run, as a restart of the run would cost more than the wait.
 */
export const PARK_AFTER_MS = 60_000;

/**
 * A DELAY or WAIT_FOR_EVENT step: WAITING until its deadline, or until the awaited event, whichever the database
 * says came first. Wake-ups are only nudges (an event was recorded, a deadline moved); each is followed by a look at
 * the execution's row, so a stale or repeated nudge just waits again for what is left.
 */
async function wait(ctx: WorkflowContext, ref: ExecutionRef, seq: number, step: Step, steps: Step[], resumed: boolean): Promise<'DONE' | 'CANCELLED' | 'PARKED' | 'CONTINUE'> {
  // Where the engine's timers keep their own time, the row hears it too (an activity's input: replay compares none).
  const clock = async (): Promise<WaitClock> => (ctx.timersOwnClock ? { now: await ctx.now() } : {});
  let state: WaitState | { state: 'PARKED' } = resumed
    ? await ctx.activities.checkWait({ ...ref, stepId: step.id, ...(await clock()) })
    : await ctx.activities.beginWait({ ...ref, seq, step, ...(await clock()) });
  while (state.state === 'WAITING') {
    if (ctx.parkAfterMs !== undefined && (state.remainingMs === null || state.remainingMs > ctx.parkAfterMs)) {
      state = await ctx.activities.parkExecution({ ...ref, steps, at: step.id, seq });
      continue; // PARKED, or what ended the wait meanwhile
    }
    // Many wake-ups in one wait (stale nudges, a deadline moved often) grow the history: go on in a fresh run, which
    // re-enters this wait without beginning it again (as a parked execution's next run does).
    if (ctx.continueAsNewSuggested()) return 'CONTINUE';
    await ctx.receive(WAKE_TOPIC, state.remainingMs === null ? WAIT_CHUNK_MS : Math.min(Math.max(state.remainingMs, 0), WAIT_CHUNK_MS));
    state = await ctx.activities.checkWait({ ...ref, stepId: step.id, ...(await clock()) });
  }
  return state.state;
}

/**
 * The automation interpreter: one engine workflow per execution walks its workflow's steps, loaded once by an
 * activity when it starts, so that editing the workflow never changes the path of a running execution. Every side
 * effect is an activity that also mirrors the execution's status and current step into its row; the row decides
 * races (a cancel against a step, an event against a timeout), so the same logic runs on DBOS and on Temporal.
 */
export async function runAutomation(ctx: WorkflowContext, input: RunAutomationInput): Promise<ExecutionStatus> {
  const ref: ExecutionRef = { projectId: input.projectId, executionId: input.executionId };
  const result = await walk(ctx, ref, input);
  // Outside walk's try: Temporal's continue-as-new is thrown, and must not be taken for a failed step.
  if (typeof result === 'object') return ctx.continueAsNew('runAutomation', result);
  return result;
}

/** Runs steps until the execution ends (its status) or the run has done its share (the input of the next run). */
async function walk(ctx: WorkflowContext, ref: ExecutionRef, input: RunAutomationInput): Promise<ExecutionStatus | RunAutomationInput> {
  try {
    let steps = input.steps;
    let at = input.at ?? null;
    let seq = input.seq ?? 0;
    let resumed = input.resume === true;
    if (!steps) {
      const started = await ctx.activities.startExecution(ref);
      if (!started) return 'CANCELLED';
      steps = started.steps;
      at = steps[0]?.id ?? null;
    }
    const byId = new Map(steps.map((s) => [s.id, s]));
    for (let ran = 0; at !== null; ran++) {
      if (ran === STEPS_PER_RUN || ctx.continueAsNewSuggested()) return { ...ref, steps, at, seq };
      const step = byId.get(at);
      if (!step) return await ctx.activities.finishExecution({ ...ref, status: 'FAILED', error: `step "${at}" does not exist` });
      // A resumed run re-enters the wait it parked in under that wait's own seq.
      if (!resumed) seq += 1;
      let outcome: StepOutcome;
      switch (step.type) {
        case 'EXIT':
          return await ctx.activities.finishExecution({ ...ref, status: 'EXITED', exit: { seq, stepId: step.id } });
        case 'DELAY':
        case 'WAIT_FOR_EVENT': {
          const waited = await wait(ctx, ref, seq, step, steps, resumed);
          if (waited === 'PARKED') return 'WAITING'; // this run ends; the row holds where the next one begins
          if (waited === 'CONTINUE') return { ...ref, steps, at, seq, resume: true };
          outcome = waited === 'CANCELLED' ? { cancelled: true } : { next: step.next ?? null };
          break;
        }
        case 'WEBHOOK':
          outcome = await ctx.webhooks.callWebhook({ ...ref, seq, step });
          break;
        default:
          outcome = await ctx.activities.runStep({ ...ref, seq, step });
      }
      resumed = false;
      if ('cancelled' in outcome) return 'CANCELLED';
      if ('failed' in outcome) return outcome.ended ? 'FAILED' : await ctx.activities.finishExecution({ ...ref, status: 'FAILED', error: outcome.failed });
      if (outcome.ended) return 'COMPLETED'; // the last step's activity ended the execution with its own write
      at = outcome.next;
    }
    return await ctx.activities.finishExecution({ ...ref, status: 'COMPLETED' });
  } catch (err) {
    if (ctx.isCancellation(err)) {
      // Cancelled from the engine (Temporal UI): leave the row as a cancel through the API would.
      await ctx.nonCancellable(() => ctx.activities.cancelExecution(ref));
      throw err;
    }
    // An activity that failed every retry (a webhook that kept failing, a database that stayed away).
    return await ctx.activities.finishExecution({ ...ref, status: 'FAILED', error: activityFailureMessage(err).slice(0, 1000) });
  }
}
