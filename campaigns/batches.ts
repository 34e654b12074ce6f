import type { Knex } from 'knex';
import { campaignAudience } from '../audience/campaignAudience';
import { addressHashKey } from '../audience/suppressions';
import { frozenContent } from './content';
import { cancelCampaignRows, failCampaignRows, finishCampaignRows } from './lifecycle';
import { asPermanent } from '../engine/permanent';
import { campaignTally, statusTally, STATUS_TALLY } from '../db/queries/campaignTally';
import { emailsAccepted } from '../metrics/registry';
import type { BatchResult, CampaignRef, CampaignPhase } from '../workflows/types';

export interface CampaignDeps {
  knex: Knex;
  /** The delivery rate (SEND_RATE_PER_SECOND): how long the campaign workflow waits between progress checks. */
  sendRatePerSecond?: number;
  /** The installation's secret: the audience leaves out erased addresses by their keyed hash (audience/suppressions.ts). */
  secret: Buffer;
}

export function campaignBatches({ knex, sendRatePerSecond, secret }: CampaignDeps) {
  const hashKey = addressHashKey(secret);
  return {
    /**
     * SCHEDULED → SENDING (or resume a SENDING one); any other state is the answer and the workflow stops. A campaign
     * written from a template takes the template's parts now, once (campaigns/content.ts frozenContent): every batch
     * and every delivery then reads the same content from the campaign.
     */
    async beginCampaign(ref: CampaignRef): Promise<CampaignPhase> {
      return knex.transaction(async (trx) => {
        const where = { project_id: ref.projectId, id: ref.campaignId };
        const current = await trx('campaigns').where(where).forUpdate().first('status', 'project_id', 'template_id', 'subject', 'body', 'body_type', 'from_email', 'from_name', 'reply_to');
        if (!current || (current.status !== 'SCHEDULED' && current.status !== 'SENDING')) return (current?.status ?? 'CANCELLED') as CampaignPhase;
        const frozen = current.status === 'SCHEDULED' && current.template_id ? await frozenContent(trx, current) : {};
        await trx('campaigns').where(where).update({ ...frozen, status: 'SENDING', started_at: trx.raw('coalesce(started_at, now())'), updated_at: trx.fn.now() });
        return 'SENDING';
      });
    },

    /**
     * One batch: the next `size` contacts of the audience after `after` (keyset on the contact id), inserted as
     * QUEUED email rows by one INSERT … SELECT (each contact once per campaign: ON CONFLICT DO NOTHING makes a
     * retried batch harmless) into the delivery queue, at campaign priority: transactional mail goes first.
     * The campaign's status is re-checked under a row lock first, so a cancel is never outrun.
     */
    async campaignBatch(ref: CampaignRef & { after: string | null; size: number }): Promise<BatchResult> {
      // An audience that cannot be compiled, or whose query fails on its values (a date PostgreSQL cannot hold), fails
      // the same way on every attempt: a permanent failure, and the campaign ends FAILED (workflows/sendCampaign.ts).
      const result = await knex.transaction(async (trx) => {
        const campaign = await trx('campaigns').where({ project_id: ref.projectId, id: ref.campaignId }).forShare().first();
        if (!campaign || campaign.status !== 'SENDING') return null;
        const batch = (await campaignAudience(trx, ref.projectId, campaign, hashKey)).query.select('c.id', 'c.email').orderBy('c.id').limit(ref.size);
        if (ref.after) batch.where('c.id', '>', ref.after);
        const { sql, bindings } = batch.toSQL();
        // Priority 1: the delivery queue serves transactional mail (0) first.
        const res = await trx.raw(
          `WITH batch AS (${sql}),
           inserted AS (
             INSERT INTO emails (project_id, contact_id, campaign_id, template_id, from_email, from_name, reply_to, to_email, subject, html, priority, track_opens, track_clicks)
             -- Open and click tracking as the project's campaign settings say (on unless turned off; tracking/settings.ts).
             SELECT p.id, b.id, ?::uuid, ?::uuid, ?, ?, ?, b.email, NULL, NULL, 1, p.track_campaign_opens, p.track_campaign_clicks
             FROM batch b CROSS JOIN projects p WHERE p.id = ?::uuid
             ON CONFLICT (project_id, campaign_id, contact_id) WHERE campaign_id IS NOT NULL AND NOT is_test DO NOTHING
             RETURNING project_id, campaign_id, status),
           -- The campaign's counts (campaign_stats) grow with its queue, in the same statement.
           ${campaignTally(`(SELECT project_id, campaign_id, ${statusTally('NULL::text', 'status')} FROM inserted)`, STATUS_TALLY)}
           SELECT (SELECT count(*) FROM batch)::int AS n,
                  (SELECT b.id FROM batch b ORDER BY b.id DESC LIMIT 1) AS last,
                  (SELECT count(*) FROM inserted)::int AS inserted`,
          [...bindings, ref.campaignId, campaign.template_id, campaign.from_email, campaign.from_name, campaign.reply_to, ref.projectId],
        );
        return res.rows[0] as { n: number; last: string | null; inserted: number };
      }).catch((err: unknown) => { throw asPermanent(err, 'the audience cannot be evaluated'); });
      if (!result) return { cancelled: true, inserted: 0, last: ref.after, done: true };
      emailsAccepted.inc({ way: 'campaign' }, result.inserted); // committed
      return { cancelled: false, inserted: result.inserted, last: result.last ?? ref.after, done: result.n < ref.size };
    },

    /** How many of the campaign's emails are still on their way (and whether it was cancelled meanwhile). */
    async campaignProgress(ref: CampaignRef): Promise<{ pending: number; cancelled: boolean; ratePerSecond?: number }> {
      const row = await knex('campaigns as k').where({ 'k.project_id': ref.projectId, 'k.id': ref.campaignId }).first(
        'k.status',
        knex.raw(`(SELECT count(*)::int FROM emails e WHERE e.project_id = k.project_id AND e.campaign_id = k.id AND NOT e.is_test AND e.status IN ('QUEUED', 'SENDING')) AS pending`),
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
  };
}
