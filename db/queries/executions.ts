import type { Knex } from 'knex';
import type { ExecutionStatus } from '../../workflows/types';

/** The statuses of an execution still under way. */
export const ACTIVE_STATUSES: ExecutionStatus[] = ['RUNNING', 'WAITING'];

/** What an ended execution's row keeps of its wait and its outbox: nothing. */
export function endedColumns(db: Knex | Knex.Transaction) {
  return { completed_at: db.fn.now(), updated_at: db.fn.now(), wait_event: null, wait_until: null, outbox: null, parked: false, resume: null };
}

/** Ends an active execution with `status`; answers the status it has afterwards (CANCELLED when the row is gone). */
export async function endExecution(db: Knex, ref: { projectId: string; executionId: string }, status: ExecutionStatus, error: string | null): Promise<ExecutionStatus> {
  const [row] = await db('automation_executions').where({ project_id: ref.projectId, id: ref.executionId }).whereIn('status', ACTIVE_STATUSES)
    .update({ status, error, ...endedColumns(db) }).returning('status');
  if (row) return row.status as ExecutionStatus;
  const current = await db('automation_executions').where({ project_id: ref.projectId, id: ref.executionId }).first('status');
  return (current?.status ?? 'CANCELLED') as ExecutionStatus;
}

/**
 * The workflow's active executions that have a run in the engine (a parked one has none: its row is all there is),
 * locked for the caller's transaction, which is about to cancel or delete them.
 */
export async function liveRuns(trx: Knex.Transaction, projectId: string, automationId: string): Promise<{ id: string; run: number }[]> {
  return trx('automation_executions').where({ project_id: projectId, automation_id: automationId, parked: false })
    .whereIn('status', ACTIVE_STATUSES).forUpdate().select('id', 'run');
}

/**
 * Cancels the workflow's active executions in the caller's transaction and answers those with an engine run to stop:
 * the rows are the truth (an execution's next step or wake-up finds itself cancelled); the engine is told after the commit.
 */
export async function cancelExecutions(trx: Knex.Transaction, projectId: string, automationId: string): Promise<{ id: string; run: number }[]> {
  const live = await liveRuns(trx, projectId, automationId);
  await trx('automation_executions').where({ project_id: projectId, automation_id: automationId }).whereIn('status', ACTIVE_STATUSES)
    .update({ status: 'CANCELLED', ...endedColumns(trx) });
  return live;
}
