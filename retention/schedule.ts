import type { Engine } from '../engine/types';
import { workflowId } from '../workflows/registry';

/** How often the retention job runs: hourly. A run that finds nothing to do reads the catalog and the projects' settings. */
export const RETENTION_INTERVAL_MS = 3_600_000;

/** The id of the Temporal Schedule of the retention job (and of the workflows it starts, with their start time appended). */
export const RETENTION_SCHEDULE = 'retention';

/** The start of the next slot after `afterMs`: whole multiples of the interval since the epoch. */
export function nextRetentionSlot(afterMs: number, intervalMs = RETENTION_INTERVAL_MS): number {
  return (Math.floor(afterMs / intervalMs) + 1) * intervalMs;
}

/**
 * Makes sure the retention job runs every `intervalMs`, as the domain re-checks do (domains/checks.ts
 * scheduleDomainChecks): on Temporal one Schedule, `retention`, created or updated here; on DBOS the run of the next slot
 * (after now and after `after`), whose id is its slot, so that every caller asks for the same run. Answers the next slot.
 */
export async function scheduleRetention(engine: Engine, intervalMs = RETENTION_INTERVAL_MS, after?: number, now = Date.now()): Promise<number> {
  const slot = nextRetentionSlot(Math.max(now, after ?? 0), intervalMs);
  if (engine.schedule) {
    await engine.schedule('applyRetention', {}, { id: RETENTION_SCHEDULE, everyMs: intervalMs, summary: `Retention: partitions made ahead and dropped past RETENTION_DAYS, rows of shorter retentions deleted, every ${intervalMs / 60_000} minute(s)` });
    return slot;
  }
  await engine.start('applyRetention', { slot }, { id: workflowId.applyRetention({ slot }), startAt: new Date(slot) });
  return slot;
}
