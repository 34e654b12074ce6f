import type { OtherActivities, WebhookActivities, WorkflowInputs, WorkflowName } from './types';

/**
 * The small durable context that workflow logic is written against, once, for both engines.
 * Everything here is durable: a step's result is recorded and replayed, a sleep survives restarts.
 */
export interface WorkflowContext {
  /** Ordinary activities (database work), each a durable step retried on failure. */
  activities: OtherActivities;
  /** Outgoing webhook calls, with their own timeout and retries. */
  webhooks: WebhookActivities;
  /** Durable sleep. */
  sleep(ms: number): Promise<void>;
  /**
   * Waits until a message on `topic` arrives (Temporal: a signal; DBOS: send/recv) or `timeoutMs` passes; true when
   * a message came. Messages sent before the wait are not lost: the next receive consumes them.
   */
  receive(topic: string, timeoutMs: number): Promise<boolean>;
  /**
   * Engines that hold a waiting workflow in a worker's memory (DBOS) park waits longer than this: the run ends and
   * the execution dispatcher starts a new one when the wait is over. Undefined: waits stay in the engine (Temporal).
   */
  parkAfterMs?: number;
  /** The workflow's notion of now (recorded/deterministic), in epoch milliseconds. */
  now(): Promise<number>;
  /**
   * True where the engine's timers run on a clock of their own, not the database's (Temporal: the server's, which its
   * time-skipping test server moves ahead days at a time). A wait's look at its row then passes `now()`, and the wait
   * is over when either clock has reached its deadline. Undefined (DBOS: its timers are the worker's clock): the
   * database's clock alone, and no extra durable step per look.
   */
  timersOwnClock?: boolean;
  /** True when `err` is the engine telling the workflow it was cancelled (e.g. from the Temporal UI). */
  isCancellation(err: unknown): boolean;
  /** Runs cleanup that a cancellation must not interrupt, so the database ends in the same state as after an API cancel. */
  nonCancellable<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * Continues as a fresh run with this input (Temporal: continue-as-new, a new history; DBOS, which keeps no
   * history to bound: runs on in the same execution). Resolves with the continued run's result where the engine
   * can give it; Temporal ends the current run instead.
   */
  continueAsNew<N extends WorkflowName>(workflow: N, input: WorkflowInputs[N]): Promise<never>;
  /**
   * True when this run's history has grown long enough that it should continue as new (Temporal: the server's
   * `continueAsNewSuggested`, from its history limits; DBOS, which keeps no history: never). Loops of unbounded length
   * check it, so no history reaches the server's limit, whatever the server's limits are set to.
   */
  continueAsNewSuggested(): boolean;
  /**
   * Versioning: true for a run that reached this point with the code as it is now, false for one replaying a history
   * recorded before change `id` (Temporal's `patched`; DBOS, which recovers by application version, not by replaying
   * history: always true). A change to workflows/ that changes which activities or timers a recorded history issued
   * goes behind `if (ctx.patched('<change-id>'))`, keeping the old path for executions already running;
   * test/temporal/replay.test.ts replays the recorded histories in every run and fails when one was broken.
   */
  patched(id: string): boolean;
}
