import type { WorkflowContext } from './context';
import { activityFailureMessage } from './failure';
import type { CampaignPhase, CampaignRef, SendCampaignInput } from './types';

/** Contacts per batch: one activity resolves them (one SQL statement) and stores their emails in the delivery queue. */
export const CAMPAIGN_BATCH_SIZE = 500;
/**
 * How a big campaign stays inside Temporal's history limit (51,200 events, 10,240 for a warning): batch activities
 * plus continue-as-new. A batch is one activity (about 6 history events with its workflow task), so a run of 100
 * batches (50,000 contacts) writes about 600 events, and the next batches continue in a fresh run from the keyset
 * position. The drain loop (about 11 events per look) continues as new too, every DRAIN_POLLS_PER_RUN looks, and
 * both loops also do whenever the server suggests it (its own history limits may be lower than the defaults).
 * DBOS has no history to bound; there, continue-as-new simply carries on in the same execution.
 */
export const BATCHES_PER_RUN = 100;
export const DRAIN_POLLS_PER_RUN = 100;

/**
 * How long to wait before looking at the deliveries again: about half the time the backlog needs, 2 s to 60 s. The
 * time comes from the rate the campaign's emails were seen leaving the queue since the last look (`drainedPerSecond`)
 * when they moved, else from the configured send rate: a machine busier than its setting (or a shared rate limit
 * spent on other mail) then does not make the workflow oversleep the end by up to a minute, look after look.
 */
export function drainPollMs(pending: number, ratePerSecond = 14, drainedPerSecond?: number): number {
  const rate = drainedPerSecond !== undefined && drainedPerSecond > 0 ? drainedPerSecond : ratePerSecond;
  return Math.min(60_000, Math.max(2_000, Math.round((pending / rate) * 500)));
}

/**
 * Sends a campaign: SCHEDULED → SENDING; the audience in keyset-ordered batches into the delivery queue (each
 * re-checks that the campaign is still SENDING, so a cancel stops it before its next batch); then waits until every
 * email has left the queue and marks the campaign SENT. A cancel from the engine (Temporal UI) leaves the same rows
 * as an API cancel. When an activity fails for good (a permanent failure such as an audience that cannot be
 * evaluated, or the last of its retries), the campaign ends FAILED with the reason, its queued emails cancelled and a
 * `campaign.failed` event recorded (campaigns/lifecycle.ts, failCampaignRows), instead of staying SENDING for ever.
 */
export async function sendCampaign(ctx: WorkflowContext, input: SendCampaignInput): Promise<CampaignPhase> {
  const ref: CampaignRef = { projectId: input.projectId, campaignId: input.campaignId };
  const result = await run(ctx, ref, input);
  // Outside run's try: Temporal's continue-as-new is thrown, and must not be taken for a failed activity.
  if (typeof result === 'object') return ctx.continueAsNew('sendCampaign', result);
  return result;
}

/** The campaign's work until it ends (its phase) or the run has done its share (the input of the next run). */
async function run(ctx: WorkflowContext, ref: CampaignRef, input: SendCampaignInput): Promise<CampaignPhase | SendCampaignInput> {
  try {
    const phase = await ctx.activities.beginCampaign(ref);
    if (phase !== 'SENDING') return phase;
    let after = input.after ?? null;
    for (let batches = 0; !input.draining; batches++) {
      if (batches === BATCHES_PER_RUN || ctx.continueAsNewSuggested()) return { ...ref, after };
      const batch = await ctx.activities.campaignBatch({ ...ref, after, size: CAMPAIGN_BATCH_SIZE });
      if (batch.cancelled) return 'CANCELLED';
      after = batch.last;
      if (batch.done) break;
    }
    // The last look: its backlog and how long the workflow then slept (deterministic: activity results and its own timers).
    let last: { pending: number; sleptMs: number } | undefined;
    for (let polls = 0; ; polls++) {
      if (polls === DRAIN_POLLS_PER_RUN || ctx.continueAsNewSuggested()) return { ...ref, draining: true };
      const progress = await ctx.activities.campaignProgress(ref);
      if (progress.cancelled) return 'CANCELLED';
      if (progress.pending === 0) break;
      const drained = last ? ((last.pending - progress.pending) * 1000) / last.sleptMs : undefined;
      const sleptMs = drainPollMs(progress.pending, progress.ratePerSecond, drained);
      await ctx.sleep(sleptMs);
      last = { pending: progress.pending, sleptMs };
    }
    return await ctx.activities.finishCampaign(ref);
  } catch (err) {
    if (ctx.isCancellation(err)) {
      await ctx.nonCancellable(() => ctx.activities.cancelCampaign(ref));
      throw err;
    }
    // Histories recorded before this change failed the workflow here; they replay as they were.
    if (!ctx.patched('campaign-failed-state')) throw err;
    return await ctx.activities.failCampaign({ ...ref, error: activityFailureMessage(err).slice(0, 1000) });
  }
}
