import type { WorkflowInputs, WorkflowName } from '../workflows/types';

export interface StartOptions {
  /** Business id (e.g. `campaign-<id>`): starting again with the same id is harmless. */
  id: string;
  /** Run at this time instead of now (durable: survives restarts of every process). */
  startAt?: Date;
  /**
   * One line for an operator, shown with the execution where the engine has a UI (Temporal: the static summary):
   * e.g. the campaign's name, project and audience. Never a secret or an email body.
   */
  summary?: string;
  /** Ids to find the execution by where the engine indexes them (Temporal: search attributes), besides those of the input. */
  tags?: { automationId?: string };
}

/**
 * The port between Herald and its workflow engine. The API and the domain code use only this; the embedded
 * (DBOS) and cluster (Temporal) adapters implement it. Emails are not workflows on either engine: the emails table
 * is the rate-limited delivery queue (worker/deliveryQueue.ts) that every worker drains.
 */
export interface Engine {
  readonly kind: 'embedded' | 'temporal';
  /**
   * Where an automation execution spends a long wait:
   * - 'parked': the engine would hold a waiting workflow in a worker's memory (DBOS), so the run ends and the
   *   execution dispatcher starts a new one when the wait is over (workflows/runAutomation.ts, PARK_AFTER_MS);
   * - 'engine': in the engine, which keeps it out of worker memory (Temporal).
   */
  readonly waits: 'parked' | 'engine';
  /** Starts a workflow; idempotent on `opts.id`. Resolves once the engine has durably accepted it. */
  start<N extends WorkflowName>(workflow: N, input: WorkflowInputs[N], opts: StartOptions): Promise<void>;
  /**
   * Engines with schedules of their own (Temporal: a Schedule, in the UI's Schedules tab) run `workflow` every
   * `everyMs` from now on; idempotent on `opts.id` (a second call sets the interval). Undefined on engines without
   * (DBOS): there the workflow chains its next run itself (workflows/checkDomains.ts).
   */
  schedule?<N extends WorkflowName>(workflow: N, input: WorkflowInputs[N], opts: { id: string; everyMs: number; summary?: string }): Promise<void>;
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
