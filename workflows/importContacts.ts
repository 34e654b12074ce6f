import type { WorkflowContext } from './context';
import { activityFailureMessage } from './failure';
import type { ImportContactsInput, ImportRef, ImportStatus } from './types';

/**
 * Batches per run before continue-as-new (Temporal history: about 6 events per batch activity, so about 1,200 events
 * for 200 batches, 1,000,000 rows); DBOS simply carries on. The position is in the database, so the next run needs
 * nothing but the ids.
 */
export const IMPORT_BATCHES_PER_RUN = 200;

/**
 * A contact import (contacts/imports/): QUEUED → RUNNING, then batch after batch from the checkpoint stored in the
 * import's row, each one activity that merges its rows and advances the checkpoint in one transaction, until the file
 * ends (COMPLETED, the file deleted) or the import is no longer RUNNING (cancelled through the API: the next batch
 * sees it and the workflow stops). A cancel from the engine (Temporal UI) leaves the same rows as the API's; a batch
 * that fails for good ends the import FAILED with the reason, the rows merged before it kept.
 */
export async function importContacts(ctx: WorkflowContext, input: ImportContactsInput): Promise<ImportStatus> {
  const ref: ImportRef = { projectId: input.projectId, importId: input.importId };
  const result = await run(ctx, ref);
  // Outside run's try: Temporal's continue-as-new is thrown, and must not be taken for a failed activity.
  if (result === 'CONTINUE') return ctx.continueAsNew('importContacts', ref);
  return result;
}

async function run(ctx: WorkflowContext, ref: ImportRef): Promise<ImportStatus | 'CONTINUE'> {
  try {
    const status = await ctx.activities.beginImport(ref);
    if (status !== 'RUNNING') return status;
    for (let batches = 0; ; batches++) {
      if (batches === IMPORT_BATCHES_PER_RUN || ctx.continueAsNewSuggested()) return 'CONTINUE';
      const batch = await ctx.activities.importBatch(ref);
      if (batch.status !== 'RUNNING') return batch.status;
      if (batch.done) return await ctx.activities.finishImport(ref);
    }
  } catch (err) {
    if (ctx.isCancellation(err)) return ctx.nonCancellable(() => ctx.activities.cancelImport(ref));
    return ctx.nonCancellable(() => ctx.activities.failImport({ ...ref, error: activityFailureMessage(err) }));
  }
}
