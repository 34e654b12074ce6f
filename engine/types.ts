import type { WorkflowInputs, WorkflowName } from '../workflows/registry';

export interface StartOptions {
  /** Business id (e.g. `email-<id>`): starting again with the same id is harmless. */
  id: string;
  /** Run at this time instead of now (durable: survives restarts of every process). */
  startAt?: Date;
  /** Transactional mail goes ahead of campaign mail when both wait for the same rate budget. */
  priority?: Priority;
}

export type Priority = 'transactional' | 'campaign';

/**
 * The port between Herald and its workflow engine. The API and the domain code use only this; the embedded
 * (DBOS) and cluster (Temporal) adapters implement it.
 */
export interface Engine {
  readonly kind: 'embedded' | 'temporal';
  /**
   * How a committed QUEUED email reaches the rate-limited delivery queue:
   * - 'rows': the emails table is the queue (embedded: engine/deliveryQueue.ts); the row is all it takes.
   * - 'workflows': one deliverEmail workflow per email, started after the commit (Temporal); see engine/dispatch.ts.
   */
  readonly delivery: 'rows' | 'workflows';
  /**
   * Where an automation execution spends a long wait:
   * - 'parked': the engine would hold a waiting workflow in a worker's memory (DBOS), so the run ends and the
   *   execution dispatcher starts a new one when the wait is over (workflows/runAutomation.ts, PARK_AFTER_MS);
   * - 'engine': in the engine, which keeps it out of worker memory (Temporal).
   */
  readonly waits: 'parked' | 'engine';
  /** Starts a workflow; idempotent on `opts.id`. Resolves once the engine has durably accepted it. */
  start<N extends WorkflowName>(workflow: N, input: WorkflowInputs[N], opts: StartOptions): Promise<void>;
  /** Cancels a workflow by id; a no-op for one that has finished or does not exist. */
  cancel(id: string): Promise<void>;
  /** Delivers a named message to a running workflow; a no-op for one that has finished or does not exist. */
  signal(id: string, name: string, payload: unknown): Promise<void>;
  /** Releases the engine's connections (not the workers: see WorkerHandle). */
  close(): Promise<void>;
}

/** A running worker: executes workflows and activities until stopped. */
export interface WorkerHandle {
  /** Stops taking new work, lets in-flight work finish (or hands it back to the engine), then resolves. */
  stop(): Promise<void>;
}

/** Bumped only when workflow logic changes incompatibly: every process of one deployment must agree on it (DBOS recovery). */
export const WORKFLOWS_VERSION = 'herald-workflows-1';
