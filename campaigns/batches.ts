import type { Knex } from 'knex';
import { campaignAudience } from '../audience/campaignAudience';
import { addressHashKey } from '../audience/suppressions';
import { currentContent, frozenContent } from './content';
import { decide, freezeVariants, planSample, readVariants, sampleVariantSql, VARIANT_KEYS, type SamplePlan } from './abTest';
import { campaignVariantFigures } from '../db/queries/campaigns';
import { recordEvents } from '../db/queries/events';
import { cancelCampaignRows, failCampaignRows, finishCampaignRows } from './lifecycle';
import { asPermanent, PermanentError } from '../engine/permanent';
import { campaignTally, statusTally, STATUS_TALLY } from '../db/queries/campaignTally';
import { emailsQueued } from '../metrics/queued';
import type { BatchPart, BatchResult, CampaignRef, CampaignPhase, TestWaitState, WaitClock } from '../workflows/types';

export interface CampaignDeps {
  knex: Knex;
  /** The delivery rate (SEND_RATE_PER_SECOND): how long the campaign workflow waits between progress checks. */
  sendRatePerSecond?: number;
  /** The installation's secret: the audience leaves out erased addresses by their keyed hash (audience/suppressions.ts). */
  secret: Buffer;
}

/** A campaign's emails_partition_at once set: the time of its first batch, to the millisecond. */
const EMAILS_PARTITION_AT = "coalesce(emails_partition_at, date_trunc('milliseconds', now()))";

/** The most of the audience one A/B batch reads: the sample is its share, so a batch reads more to queue as many. */
const AB_READ_MAX = 10_000;

/**
 * Which of a batch's contacts get an email, with which variant and sender name, and how many contacts the batch
 * reads: a plain campaign's, all of them with its sender name; an A/B campaign's sample, those its plan puts in a
 * variant, each with the variant's sender name, reading the audience `100 / share` times faster; its rest, all who
 * have not had one yet (the sample's emails are in the way of theirs: ON CONFLICT, one probe of
 * emails_campaign_contact_key each), with the winner's sender name, reading `1 / (1 − share)` times faster. So an A/B
 * campaign takes about as many batches, transactions and statements as a plain one. The variants' sender names are
 * the plan's (campaigns/abTest.ts planSample), read with the campaign's row.
 */
function batchPick(ref: CampaignRef & { size: number; part?: BatchPart }, campaign: { from_name: string | null; ab_sample_percent: number | null; ab_plan: SamplePlan | null; ab_winner: number | null }) {
  const plain = { read: ref.size, picked: (rows: string) => `SELECT r.*, NULL::smallint AS variant FROM ${rows} r`, fromNames: [] as (string | null)[], fromName: campaign.from_name };
  if (!ref.part) return plain;
  const plan = campaign.ab_plan;
  if (!plan) throw new PermanentError('the A/B campaign has no sample plan');
  const share = (campaign.ab_sample_percent ?? 0) / 100;
  if (ref.part === 'rest') {
    if (campaign.ab_winner === null) throw new PermanentError('the A/B campaign has no winner yet');
    return { ...plain, read: Math.min(AB_READ_MAX, Math.ceil(ref.size / (1 - share))), fromName: plan.fromNames[campaign.ab_winner] ?? null };
  }
  return {
    read: Math.min(AB_READ_MAX, Math.ceil(ref.size / share)),
    picked: (rows: string) => sampleVariantSql(ref.campaignId, plan, rows),
    fromNames: plan.fromNames,
    fromName: campaign.from_name,
  };
}

export function campaignBatches({ knex, sendRatePerSecond, secret }: CampaignDeps) {
  const hashKey = addressHashKey(secret);
  return {
    /**
     * SCHEDULED → SENDING (or resume a SENDING one); any other state is the answer and the workflow stops. A campaign
     * written from a template takes the template's parts now, once (campaigns/content.ts frozenContent): every batch
     * and every delivery then reads the same content from the campaign. An A/B campaign's variants are frozen the same
     * way, and its sample planned over the audience as it is now (campaigns/abTest.ts planSample): phase SAMPLE.
     */
    async beginCampaign(ref: CampaignRef): Promise<CampaignPhase> {
      return knex.transaction(async (trx) => {
        const where = { project_id: ref.projectId, id: ref.campaignId };
        const current = await trx('campaigns').where(where).forUpdate().first(
          'id', 'status', 'project_id', 'template_id', 'subject', 'body', 'body_type', 'from_email', 'from_name', 'reply_to', 'preview_text',
          'audience_type', 'segment_id', 'audience_filter', 'ab_sample_percent');
        if (!current || (current.status !== 'SCHEDULED' && current.status !== 'SENDING')) return (current?.status ?? 'CANCELLED') as CampaignPhase;
        const starting = current.status === 'SCHEDULED';
        const frozen = starting && current.template_id ? await frozenContent(trx, current) : {};
        let test = {};
        if (starting && current.ab_sample_percent !== null) {
          const frozenVariants = await freezeVariants(trx, ref.projectId, ref.campaignId, { ...(await currentContent(trx, current)), previewText: current.preview_text });
          const plan = await planSample(trx, ref.projectId, current, frozenVariants.map((v) => v.fromName), hashKey);
          test = { ab_phase: 'SAMPLE', ab_plan: JSON.stringify(plan), ab_sample_size: plan.size };
        }
        // Every email of the campaign goes to the partition of its first batch's time (db/partitions.ts), fixed here once
        // (to the millisecond, so that it reads back into JavaScript as it is).
        await trx('campaigns').where(where).update({
          ...frozen, ...test, status: 'SENDING', started_at: trx.raw('coalesce(started_at, now())'),
          emails_partition_at: trx.raw(EMAILS_PARTITION_AT), updated_at: trx.fn.now(),
        });
        return 'SENDING';
      });
    },

    /**
     * One batch: the next `size` contacts of the audience after `after` (keyset on the contact id), inserted as
     * QUEUED email rows by one INSERT … SELECT (each contact once per campaign: ON CONFLICT DO NOTHING makes a
     * retried batch harmless) into the delivery queue, at campaign priority: transactional mail goes first.
     * The campaign's status is re-checked under a row lock first, so a cancel is never outrun.
     */
    async campaignBatch(ref: CampaignRef & { after: string | null; size: number; part?: BatchPart }): Promise<BatchResult> {
      // An audience that cannot be compiled, or whose query fails on its values (a date PostgreSQL cannot hold), fails
      // the same way on every attempt: a permanent failure, and the campaign ends FAILED (workflows/sendCampaign.ts).
      let read = ref.size;
      const result = await knex.transaction(async (trx) => {
        const campaign = await trx('campaigns').where({ project_id: ref.projectId, id: ref.campaignId }).forShare().first();
        if (!campaign || campaign.status !== 'SENDING') return null;
        // Set by beginCampaign, which every run of the workflow calls before its batches (here for a campaign made SENDING
        // otherwise: this transaction holds its row, so no other batch sets another).
        if (campaign.emails_partition_at === null) {
          const [set] = await trx('campaigns').where({ project_id: ref.projectId, id: ref.campaignId })
            .update({ emails_partition_at: trx.raw(EMAILS_PARTITION_AT) }).returning('emails_partition_at');
          campaign.emails_partition_at = set!.emails_partition_at;
        }
        const pick = batchPick(ref, campaign);
        read = pick.read;
        const batch = (await campaignAudience(trx, ref.projectId, campaign, hashKey)).query.select('c.id', 'c.email').orderBy('c.id').limit(read);
        if (ref.after) batch.where('c.id', '>', ref.after);
        const { sql, bindings } = batch.toSQL();
        // Priority 1: the delivery queue serves transactional mail (0) first.
        const res = await trx.raw(
          `WITH batch AS (${sql}),
           picked AS (${pick.picked('batch')}),
           inserted AS (
             INSERT INTO emails (project_id, contact_id, campaign_id, template_id, from_email, from_name, reply_to, to_email, subject, html, priority, track_opens, track_clicks, variant, partition_at)
             -- Open and click tracking as the project's campaign settings say (on unless turned off; tracking/settings.ts).
             SELECT p.id, b.id, ?::uuid, ?::uuid, ?, coalesce((?::text[])[b.variant + 1], ?), ?, b.email, NULL, NULL, 1, p.track_campaign_opens, p.track_campaign_clicks, b.variant, ?::timestamptz
             FROM picked b CROSS JOIN projects p WHERE p.id = ?::uuid ${ref.part === 'sample' ? 'AND b.variant IS NOT NULL' : ''}
             -- One partition_at for all the campaign's emails: the key holds within its one partition.
             ON CONFLICT (project_id, campaign_id, contact_id, partition_at) WHERE campaign_id IS NOT NULL AND NOT is_test DO NOTHING
             RETURNING project_id, campaign_id, variant, status),
           -- The campaign's counts (campaign_stats, and its variants' for the sample) grow with its queue, in the same statement.
           ${campaignTally(`(SELECT project_id, campaign_id, variant, ${statusTally('NULL::text', 'status')} FROM inserted)`, STATUS_TALLY)}
           SELECT (SELECT count(*) FROM batch)::int AS n,
                  (SELECT b.id FROM batch b ORDER BY b.id DESC LIMIT 1) AS last,
                  (SELECT count(*) FROM inserted)::int AS inserted`,
          [...bindings, ref.campaignId, campaign.template_id, campaign.from_email, pick.fromNames, pick.fromName, campaign.reply_to, campaign.emails_partition_at, ref.projectId] as Knex.RawBinding[],
        );
        return res.rows[0] as { n: number; last: string | null; inserted: number };
      }).catch((err: unknown) => { throw asPermanent(err, 'the audience cannot be evaluated'); });
      if (!result) return { cancelled: true, inserted: 0, last: ref.after, done: true };
      emailsQueued('campaign', result.inserted); // committed
      return { cancelled: false, inserted: result.inserted, last: result.last ?? ref.after, done: result.n < read };
    },

    /** How many of the campaign's emails are still on their way (and whether it was cancelled meanwhile). */
    async campaignProgress(ref: CampaignRef): Promise<{ pending: number; cancelled: boolean; ratePerSecond?: number }> {
      const row = await knex('campaigns as k').where({ 'k.project_id': ref.projectId, 'k.id': ref.campaignId }).first(
        'k.status',
        knex.raw(`(SELECT count(*)::int FROM emails e WHERE e.project_id = k.project_id AND e.campaign_id = k.id AND e.partition_at = k.emails_partition_at
                   AND NOT e.is_test AND e.status IN ('QUEUED', 'SENDING')) AS pending`),
      );
      return { pending: row?.pending ?? 0, cancelled: !row || row.status !== 'SENDING', ...(sendRatePerSecond ? { ratePerSecond: sendRatePerSecond } : {}) };
    },

    /** SENDING → SENT, with the number of recipients and a campaign.sent event (campaigns/lifecycle.ts). */
    async finishCampaign(ref: CampaignRef): Promise<CampaignPhase> {
      return finishCampaignRows(knex, ref);
    },

    /**
     * Cancels the campaign and its unsent emails in one transaction: the same database state whether the cancel
     * came from the API or from the engine (Temporal UI).
     */
    async cancelCampaign(ref: CampaignRef): Promise<CampaignPhase> {
      return (await cancelCampaignRows(knex, ref)).status;
    },

    async failCampaign(ref: CampaignRef & { error: string }): Promise<CampaignPhase> {
      return (await failCampaignRows(knex, ref, ref.error)).status;
    },

    /**
     * An A/B campaign's wait for its winner, begun at the first call (WAITING; it ends the test's wait from now, or
     * from the workflow's clock when that is later: the time-skipping test server's) and looked at on every later one.
     * READY once a person has chosen (POST /campaigns/:id/winner), or the wait is over for a test decided by a metric;
     * a manual test past its wait waits on for the choice (remainingMs null).
     */
    async testWait(ref: CampaignRef & WaitClock): Promise<TestWaitState> {
      const clock = ref.now !== undefined ? new Date(ref.now) : null;
      const { rows } = await knex.raw(
        `WITH begun AS (
           UPDATE campaigns SET ab_phase = 'WAITING', updated_at = now(),
             ab_ends_at = greatest(now(), coalesce(?::timestamptz, now())) + ab_wait_minutes * interval '1 minute'
           WHERE project_id = ?::uuid AND id = ?::uuid AND status = 'SENDING' AND ab_phase = 'SAMPLE'
           RETURNING ab_ends_at)
         SELECT k.status, k.ab_phase, k.ab_metric, k.ab_chosen,
                extract(epoch FROM coalesce((SELECT ab_ends_at FROM begun), k.ab_ends_at) - greatest(now(), coalesce(?::timestamptz, now()))) * 1000 AS remaining_ms
         FROM campaigns k WHERE k.project_id = ?::uuid AND k.id = ?::uuid`,
        [clock, ref.projectId, ref.campaignId, clock, ref.projectId, ref.campaignId],
      );
      const k = rows[0] as { status: string; ab_phase: string | null; ab_metric: string; ab_chosen: number | null; remaining_ms: string | null } | undefined;
      if (!k || k.status !== 'SENDING') return { state: 'CANCELLED' };
      if (k.ab_phase === 'DECIDED' || k.ab_chosen !== null) return { state: 'READY' };
      const remainingMs = Math.ceil(Number(k.remaining_ms ?? 0));
      if (remainingMs > 0) return { state: 'WAITING', remainingMs };
      return k.ab_metric === 'manual' ? { state: 'WAITING', remainingMs: null } : { state: 'READY' };
    },

    /**
     * Decides an A/B campaign's winner once (campaigns/abTest.ts decide): a person's choice, else the test's metric over
     * the sample's kept figures per variant. The decision, with the figures and their certainty, is recorded on the
     * campaign with a `campaign.winner` event (and its webhooks) in one transaction; a repeated call answers it.
     */
    async decideWinner(ref: CampaignRef): Promise<{ cancelled: boolean; winner: number | null }> {
      return knex.transaction(async (trx) => {
        const where = { project_id: ref.projectId, id: ref.campaignId };
        const k = await trx('campaigns').where(where).forUpdate().first('status', 'name', 'ab_phase', 'ab_metric', 'ab_chosen', 'ab_winner');
        if (!k || k.status !== 'SENDING') return { cancelled: true, winner: null };
        if (k.ab_phase === 'DECIDED') return { cancelled: false, winner: k.ab_winner as number };
        const variants = (await readVariants(trx, ref.projectId, ref.campaignId)).length;
        const decision = decide(await campaignVariantFigures(trx, ref.projectId, ref.campaignId, variants), k.ab_metric, k.ab_chosen);
        const winner = VARIANT_KEYS.indexOf(decision.winner);
        await trx('campaigns').where(where).update({
          ab_phase: 'DECIDED', ab_winner: winner, ab_decided_at: trx.fn.now(), ab_decision: JSON.stringify(decision), updated_at: trx.fn.now(),
        });
        await recordEvents(trx, ref.projectId, [{ name: 'campaign.winner', data: { campaignId: ref.campaignId, name: k.name, ...decision } }]);
        return { cancelled: false, winner };
      });
    },
  };
}
