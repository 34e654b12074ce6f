import type { Knex } from 'knex';
import { ACTIVE_STATUSES } from '../db/queries/executions';
import type { ExecutionStatus } from './steps';

/**
 * An execution's trace: the steps it has run, in order, with their times and outcomes, read from its step runs
 * (automation_step_runs, one row per step run, written by the interpreter's activities in automations/executions.ts).
 * What a row's `outcome` holds depends on the step: where it went (and a CONDITION's branch), that it failed, that it
 * is waiting, how a wait ended (the awaited event or the deadline), or that an EXIT step ended the journey.
 */
export type StepRunOutcome =
  | { next: string | null; ended?: true; branch?: 'yes' | 'no' }
  | { failed: string; ended?: true }
  | { waiting: true }
  | { waited: 'event' | 'timeout' }
  | { exited: true };

export type TraceOutcome = 'DONE' | 'WAITING' | 'FAILED' | 'CANCELLED';

export interface TraceEntry {
  seq: number;
  stepId: string;
  /** DONE: the step did its work and the journey went on (or ended there); WAITING: the wait in progress. */
  outcome: TraceOutcome;
  /** A CONDITION's branch taken. */
  branch: 'yes' | 'no' | null;
  /** How a DELAY or WAIT_FOR_EVENT ended: the awaited event, or its deadline (a DELAY's end is its deadline). */
  wokenBy: 'event' | 'timeout' | null;
  error: string | null;
  startedAt: Date;
  /** When the next step began, or the execution ended; null while the step is the current one. */
  endedAt: Date | null;
}

export interface Trace {
  entries: TraceEntry[];
  /** Earlier step runs were left out (a recurring journey that has looped for long): the entries are the latest. */
  truncated: boolean;
}

interface StepRunRow { seq: number; step_id: string; outcome: StepRunOutcome; created_at: Date }

/** At most this many step runs in a trace: the latest. */
export const TRACE_LIMIT = 200;

/** The trace of an execution (its row's status, error and end decide how its last step run reads). */
export async function traceOf(
  db: Knex, projectId: string,
  x: { id: string; status: ExecutionStatus; error: string | null; completed_at: Date | null },
): Promise<Trace> {
  const rows: StepRunRow[] = await db('automation_step_runs').where({ project_id: projectId, execution_id: x.id })
    .orderBy('seq', 'desc').limit(TRACE_LIMIT + 1).select('seq', 'step_id', 'outcome', 'created_at');
  const truncated = rows.length > TRACE_LIMIT;
  const runs = rows.slice(0, TRACE_LIMIT).reverse();
  const active = ACTIVE_STATUSES.includes(x.status);
  const entries = runs.map((run, i): TraceEntry => {
    const last = i === runs.length - 1;
    const o = run.outcome;
    const entry: TraceEntry = {
      seq: run.seq, stepId: run.step_id, outcome: 'DONE', branch: null, wokenBy: null, error: null, startedAt: run.created_at,
      endedAt: last ? x.completed_at : runs[i + 1]!.created_at,
    };
    if ('failed' in o) return { ...entry, outcome: 'FAILED', error: o.failed };
    if ('branch' in o && o.branch) return { ...entry, branch: o.branch };
    if ('waited' in o) return { ...entry, wokenBy: o.waited };
    // A wait whose run says nothing more: in progress, or ended by what ended the execution (a cancel, a failure).
    // (Runs recorded before waits said how they ended read as DONE when a later step followed.)
    if ('waiting' in o && last) {
      if (active) return { ...entry, outcome: 'WAITING', endedAt: null };
      if (x.status === 'CANCELLED') return { ...entry, outcome: 'CANCELLED' };
      if (x.status === 'FAILED') return { ...entry, outcome: 'FAILED', error: x.error };
    }
    return entry;
  });
  return { entries, truncated };
}
