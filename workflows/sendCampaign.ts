import type { WorkflowContext } from './context';
import type { CampaignPhase, CampaignRef } from './types';

/** Contacts per batch: one activity resolves them (one SQL statement), stores their emails and starts their deliveries. */
export const CAMPAIGN_BATCH_SIZE = 500;
/**
 * How a big campaign stays inside Temporal's history limit (51,200 events): batch activities plus continue-as-new.
 * A batch is one activity (3 history events: scheduled, started, completed), so a run of 100 batches (50,000
 * contacts) writes about 300 events, and the next 100 batches continue in a fresh run from the keyset position.
 * The drain loop below polls with a growing interval, so waiting for 100,000 deliveries adds ~100 iterations.
 * DBOS has no history to bound; there, continue-as-new simply carries on in the same execution.
 */
export const BATCHES_PER_RUN = 100;

export interface CampaignInput extends CampaignRef {
  /** Keyset position: the last contact id of the previous run (continue-as-new). */
  after?: string | null;
}

/** How long to wait before looking at the deliveries again: about half the time they need at the send rate, 2 s to 60 s. */
export function drainPollMs(pending: number, ratePerSecond = 14): number {
  return Math.min(60_000, Math.max(2_000, Math.round((pending / ratePerSecond) * 500)));
}

/**
 * Sends a campaign: SCHEDULED → SENDING; the audience in keyset-ordered batches (each re-checks that the campaign
 * is still SENDING, so a cancel stops it before its next batch); then waits until every email has left the queue
 * and marks the campaign SENT. A cancel from the engine (Temporal UI) leaves the same rows as an API cancel.
 */
export async function sendCampaign(ctx: WorkflowContext, input: CampaignInput): Promise<CampaignPhase> {
  const ref: CampaignRef = { projectId: input.projectId, campaignId: input.campaignId };
  try {
    const phase = await ctx.activities.beginCampaign(ref);
    if (phase !== 'SENDING') return phase;
    let after = input.after ?? null;
    for (let batches = 0; ; batches++) {
      if (batches === BATCHES_PER_RUN) return await ctx.continueAsNew('sendCampaign', { ...ref, after });
      const batch = await ctx.activities.campaignBatch({ ...ref, after, size: CAMPAIGN_BATCH_SIZE });
      if (batch.cancelled) return 'CANCELLED';
      after = batch.last;
      if (batch.done) break;
    }
    for (;;) {
      const progress = await ctx.activities.campaignProgress(ref);
      if (progress.cancelled) return 'CANCELLED';
      if (progress.pending === 0) break;
      await ctx.sleep(drainPollMs(progress.pending, progress.ratePerSecond));
    }
    return await ctx.activities.finishCampaign(ref);
  } catch (err) {
    if (ctx.isCancellation(err)) await ctx.nonCancellable(() => ctx.activities.cancelCampaign(ref));
    throw err;
  }
}
