import type { WorkflowContext } from './context';
import { activityFailureMessage } from './failure';
import { WAKE_TOPIC } from './policy';
import { WAIT_CHUNK_MS } from './runAutomation';
import type { AbStage, BatchPart, CampaignPhase, CampaignRef, SendCampaignInput, WaitClock } from './types';

/** Contacts per batch: one activity resolves them (one SQL statement) and stores their emails in the delivery queue. */
export const CAMPAIGN_BATCH_SIZE = 500;
/**
 * The first batch of an audience (or of an A/B part) is small: its emails leave while the next batch is written. A
 * first batch of 500 took ~60 ms to commit before its first email could be claimed, more than half of a campaign's
 * start-to-first-send beyond a single send's (BENCHMARKS.md section 48). Batches are keyset-paged, so their sizes may differ.
 */
export const FIRST_BATCH_SIZE = 50;
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
 *
 * An A/B campaign (`input.test`) sends its sample first (each variant to its share, campaigns/abTest.ts), waits until
 * the sample has left the queue and then for the test's wait (or a person's choice: a wake-up), decides the winner,
 * and sends the winner to the rest of the audience as it is then. Plain campaigns never take that path, so their
 * recorded histories replay as before.
 */
export async function sendCampaign(ctx: WorkflowContext, input: SendCampaignInput): Promise<CampaignPhase> {
  const ref: CampaignRef = { projectId: input.projectId, campaignId: input.campaignId };
  const result = await ended(ctx, ref, () => (input.test ? abTest(ctx, ref, input, input.test) : plain(ctx, ref, input)));
  // Outside the try: Temporal's continue-as-new is thrown, and must not be taken for a failed activity.
  if (typeof result === 'object') return ctx.continueAsNew('sendCampaign', result);
  return result;
}

/** What a part of the work comes to: the campaign's phase (it ended), the input of the next run, or null (go on). */
type Step = CampaignPhase | SendCampaignInput | null;

/** A plain campaign's work until it ends (its phase) or the run has done its share (the input of the next run). */
async function plain(ctx: WorkflowContext, ref: CampaignRef, input: SendCampaignInput): Promise<CampaignPhase | SendCampaignInput> {
  const phase = await ctx.activities.beginCampaign(ref);
  if (phase !== 'SENDING') return phase;
  if (!input.draining) {
    const queued = await queue(ctx, ref, input.after ?? null, undefined, (after) => ({ ...ref, after }));
    if (queued !== null) return queued;
  }
  const drained = await drain(ctx, ref, { ...ref, draining: true });
  if (drained !== null) return drained;
  return await ctx.activities.finishCampaign(ref);
}

/** An A/B campaign's work, from `stage` on: the sample, the wait and the decision, the rest. */
async function abTest(ctx: WorkflowContext, ref: CampaignRef, input: SendCampaignInput, stage: AbStage): Promise<CampaignPhase | SendCampaignInput> {
  const phase = await ctx.activities.beginCampaign(ref);
  if (phase !== 'SENDING') return phase;
  let after = input.after ?? null;
  if (stage === 'sample') {
    const queued = await queue(ctx, ref, after, 'sample', (last) => ({ ...ref, test: 'sample', after: last }));
    if (queued !== null) return queued;
    stage = 'wait';
    after = null;
  }
  if (stage === 'wait') {
    // The wait starts once the sample has left the queue, so that every variant has had the same time to be opened.
    const drained = await drain(ctx, ref, { ...ref, test: 'wait' });
    if (drained !== null) return drained;
    const waited = await awaitWinner(ctx, ref);
    if (waited !== null) return waited;
    const decided = await ctx.activities.decideWinner(ref);
    if (decided.cancelled) return 'CANCELLED';
  }
  // The rest: from the decision on, or from where a run of the rest's batches stopped.
  if (!input.draining || input.test !== 'rest') {
    const queued = await queue(ctx, ref, after, 'rest', (last) => ({ ...ref, test: 'rest', after: last }));
    if (queued !== null) return queued;
  }
  const drained = await drain(ctx, ref, { ...ref, test: 'rest', draining: true });
  if (drained !== null) return drained;
  return await ctx.activities.finishCampaign(ref);
}

/** Runs `work`; a cancellation from the engine cancels the campaign as the API does, any other failure fails it. */
async function ended(ctx: WorkflowContext, ref: CampaignRef, work: () => Promise<CampaignPhase | SendCampaignInput>): Promise<CampaignPhase | SendCampaignInput> {
  try {
    return await work();
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

/**
 * Queues the audience (or its A/B `part`) batch by batch from `after`; null when all of it is queued. A run that has
 * done BATCHES_PER_RUN batches (or whose history the server finds long) answers `next`'s input, to continue as new.
 */
async function queue(ctx: WorkflowContext, ref: CampaignRef, after: string | null, part: BatchPart | undefined, next: (after: string | null) => SendCampaignInput): Promise<Step> {
  for (let batches = 0; ; batches++) {
    if (batches === BATCHES_PER_RUN || ctx.continueAsNewSuggested()) return next(after);
    const size = after === null ? FIRST_BATCH_SIZE : CAMPAIGN_BATCH_SIZE;
    const batch = await ctx.activities.campaignBatch({ ...ref, after, size, ...(part ? { part } : {}) });
    if (batch.cancelled) return 'CANCELLED';
    after = batch.last;
    if (batch.done) return null;
  }
}

/**
 * Waits until every email of the campaign queued so far has left the queue; null then. A run that has looked
 * DRAIN_POLLS_PER_RUN times answers `next` (the same wait, in a fresh run).
 */
async function drain(ctx: WorkflowContext, ref: CampaignRef, next: SendCampaignInput): Promise<Step> {
  // The last look: its backlog and how long the workflow then slept (deterministic: activity results and its own timers).
  let last: { pending: number; sleptMs: number } | undefined;
  for (let polls = 0; ; polls++) {
    if (polls === DRAIN_POLLS_PER_RUN || ctx.continueAsNewSuggested()) return next;
    const progress = await ctx.activities.campaignProgress(ref);
    if (progress.cancelled) return 'CANCELLED';
    if (progress.pending === 0) return null;
    const drained = last ? ((last.pending - progress.pending) * 1000) / last.sleptMs : undefined;
    const sleptMs = drainPollMs(progress.pending, progress.ratePerSecond, drained);
    await ctx.sleep(sleptMs);
    last = { pending: progress.pending, sleptMs };
  }
}

/**
 * An A/B campaign's wait for its winner: until its wait is over, or a person chose a winner (the API's wake-up
 * ends the wait early), as the database says after each wake-up or timer; null when a winner can be decided. Stale
 * wake-ups only make it look again. A long wait with many looks continues in a fresh run, which looks again first.
 */
async function awaitWinner(ctx: WorkflowContext, ref: CampaignRef): Promise<Step> {
  // Where the engine's timers keep their own time, the row hears it too (an activity's input: replay compares none).
  const clock = async (): Promise<WaitClock> => (ctx.timersOwnClock ? { now: await ctx.now() } : {});
  let state = await ctx.activities.testWait({ ...ref, ...(await clock()) });
  for (let looks = 0; state.state === 'WAITING'; looks++) {
    if (looks === DRAIN_POLLS_PER_RUN || ctx.continueAsNewSuggested()) return { ...ref, test: 'wait' };
    await ctx.receive(WAKE_TOPIC, state.remainingMs === null ? WAIT_CHUNK_MS : Math.min(Math.max(state.remainingMs, 0), WAIT_CHUNK_MS));
    state = await ctx.activities.testWait({ ...ref, ...(await clock()) });
  }
  return state.state === 'CANCELLED' ? 'CANCELLED' : null;
}
