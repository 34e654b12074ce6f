import type { WorkflowContext } from './context';
import type { RetentionInput, RetentionRunResult } from './types';

/** Bounded trims per run (each about 20 s at most, retention/retention.ts trimRows): what remains is the next run's. */
export const RETENTION_TRIMS_PER_RUN = 50;

/**
 * The retention job (retention/retention.ts), every RETENTION_INTERVAL_MS: the months ahead created and the months past
 * the retention dropped whole (one activity), then the rows that whole partitions do not cover (a project's shorter
 * retention, the legacy and default partitions) deleted in bounded batches, one activity each, until none remain or
 * the run has done its share.
 * - Temporal: a Schedule (`retention`, in the UI's Schedules tab) starts one run per interval; a failed run does not stop
 *   the next one, and a run still going when the next is due makes it skip.
 * - DBOS: one run per slot of the interval, each scheduling the run of the next slot, whose id is that slot (as
 *   workflows/checkDomains.ts does): however often it is asked for, one run per slot starts.
 */
export async function applyRetention(ctx: WorkflowContext, input: RetentionInput): Promise<RetentionRunResult> {
  const partitions = await ctx.activities.retentionPartitions({});
  let deleted = 0;
  for (let i = 0; i < RETENTION_TRIMS_PER_RUN; i++) {
    const trim = await ctx.activities.retentionTrim({});
    deleted += trim.deleted;
    if (!trim.more) break;
  }
  if (input.slot !== undefined) await ctx.activities.scheduleRetention({ after: input.slot });
  return { created: partitions.created.length, dropped: partitions.dropped, deleted };
}
