import type { WorkflowContext } from './context';
import type { CheckDomainsInput } from './types';

/** Domains per batch activity: each is checked against DNS (10 at a time) and its outcome stored. */
export const DOMAIN_CHECK_BATCH = 50;
/**
 * Batches per run before continue-as-new (Temporal history: ~3 events per activity, so ~1,500 events for 500 batches,
 * 25,000 domains); DBOS simply carries on.
 */
export const DOMAIN_BATCHES_PER_RUN = 500;

/**
 * The periodic re-check of every sending domain's DNS records (every DOMAIN_CHECK_INTERVAL_MINUTES). It walks all
 * domains in id order in batches; a domain whose DKIM record is gone turns FAILED, and sends from it are refused
 * (isVerifiedSender).
 * - Temporal: a Schedule (`domain-checks`, in the UI's Schedules tab) starts one run per interval; a failed run does
 *   not stop the next one.
 * - DBOS: one run per slot of the interval, started at the slot's time by a durable delayed start, each scheduling the
 *   run of the next slot, whose id is that slot: however often it is asked for (a retried step, a worker's start, the
 *   API when a domain is added), one run per slot starts.
 */
export async function checkDomains(ctx: WorkflowContext, input: CheckDomainsInput): Promise<{ checked: number }> {
  let after = input.after ?? null;
  let checked = 0;
  for (let batches = 0; ; batches++) {
    if (batches === DOMAIN_BATCHES_PER_RUN || ctx.continueAsNewSuggested()) return await ctx.continueAsNew('checkDomains', { ...input, after });
    const batch = await ctx.activities.checkDomainBatch({ after, size: DOMAIN_CHECK_BATCH });
    checked += batch.checked;
    after = batch.last;
    if (batch.done) break;
  }
  if (input.slot !== undefined) await ctx.activities.scheduleDomainChecks({ after: input.slot });
  return { checked };
}
