import type { Knex } from 'knex';
import type { ExecutionStatus } from '../../workflows/types';
import { recordEvents } from './events';

/** The statuses of an execution still under way. */
export const ACTIVE_STATUSES: ExecutionStatus[] = ['RUNNING', 'WAITING'];

/** What an ended execution's row keeps of its wait and its outbox: nothing. */
export function endedColumns(db: Knex | Knex.Transaction) {
  return { completed_at: db.fn.now(), updated_at: db.fn.now(), wait_event: null, wait_until: null, outbox: null, parked: false, resume: null };
}

/** Ends an active execution with `status`; answers the status it has afterwards (CANCELLED when the row is gone). */
export async function endExecution(db: Knex, ref: { projectId: string; executionId: string }, status: ExecutionStatus, error: string | null): Promise<ExecutionStatus> {
  // FAILED records its event with it: one transaction. The other endings stay one statement.
  if (status === 'FAILED') return db.transaction((trx) => end(trx, ref, status, error));
  return end(db, ref, status, error);
}

async function end(db: Knex | Knex.Transaction, ref: { projectId: string; executionId: string }, status: ExecutionStatus, error: string | null): Promise<ExecutionStatus> {
  const [row] = await db('automation_executions').where({ project_id: ref.projectId, id: ref.executionId }).whereIn('status', ACTIVE_STATUSES)
    .update({ status, error, ...endedColumns(db) }).returning(['status', 'automation_id', 'contact_id', 'current_step_id']);
  if (row) {
    if (status === 'FAILED') {
      await recordExecutionFailed(db as Knex.Transaction, ref.projectId, { executionId: ref.executionId, workflowId: row.automation_id, contactId: row.contact_id, stepId: row.current_step_id, error });
    }
    return row.status as ExecutionStatus;
  }
  const current = await db('automation_executions').where({ project_id: ref.projectId, id: ref.executionId }).first('status');
  return (current?.status ?? 'CANCELLED') as ExecutionStatus;
}

/**
 * The `execution.failed` event of an execution that has just ended FAILED, in the caller's transaction (every way an
 * execution fails comes here: a step that cannot succeed, an activity out of retries or failing permanently). It is
 * recorded without a contact — the contact is in its data — so that it starts no workflow: a journey triggered by
 * its own failure would otherwise fail and start again for ever.
 */
export async function recordExecutionFailed(
  trx: Knex.Transaction, projectId: string,
  x: { executionId: string; workflowId: string; contactId: string; stepId: string | null; error: string | null },
): Promise<void> {
  await recordEvents(trx, projectId, [{ name: 'execution.failed', data: { workflowId: x.workflowId, executionId: x.executionId, contactId: x.contactId, stepId: x.stepId, error: x.error } }]);
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
