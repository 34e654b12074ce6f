import type { Knex } from 'knex';
import { recordEvents } from '../db/queries/events';
import { campaignTally, statusTally, STATUS_TALLY } from '../db/queries/campaignTally';
import type { CampaignPhase, CampaignRef } from '../workflows/types';

/*
 * A campaign's ends that are not SENT: cancelled (by the API, or from the Temporal UI through the workflow) and
 * failed (its workflow gave up). The API and the campaign workflow's activities both call these.
 */

/** Why a campaign's still-queued emails were cancelled when it FAILED (their `error`). */
export const CAMPAIGN_FAILED_EMAIL_ERROR = 'the campaign failed';

/**
 * SCHEDULED or SENDING → FAILED with `error`, when the campaign's workflow gives up (a permanent failure, or an
 * activity out of retries), in one transaction with:
 * - every still-QUEUED email of the campaign CANCELLED, as a cancel does: a failed campaign does not go on delivering
 *   part of its audience later, unseen (what Postmark and Resend do with a broadcast that errors: it stops). Emails
 *   already delivered stay so, and deliveries in flight finish (a retry of one is cancelled, as for a cancelled
 *   campaign: sending/delivery.ts). The campaign's stats tell how far it got.
 * - a `campaign.failed` event (no contact: it is about the campaign; data: campaignId, name, error, cancelledEmails).
 * A campaign already final (SENT, CANCELLED, FAILED) is left as it is: `changed` false, `status` what it is.
 */
export async function failCampaignRows(knex: Knex, ref: CampaignRef, error: string): Promise<{ changed: boolean; status: CampaignPhase }> {
  return knex.transaction(async (trx) => {
    const [row] = await trx('campaigns').where({ project_id: ref.projectId, id: ref.campaignId }).whereIn('status', ['SCHEDULED', 'SENDING'])
      .update({ status: 'FAILED', error, updated_at: trx.fn.now() }).returning(['status', 'name']);
    if (!row) {
      const current = await trx('campaigns').where({ project_id: ref.projectId, id: ref.campaignId }).first('status');
      return { changed: false, status: (current?.status ?? 'CANCELLED') as CampaignPhase };
    }
    const cancelledEmails = await cancelQueuedEmails(trx, ref, CAMPAIGN_FAILED_EMAIL_ERROR);
    await recordEvents(trx, ref.projectId, [{ name: 'campaign.failed', data: { campaignId: ref.campaignId, name: row.name, error, cancelledEmails } }]);
    return { changed: true, status: 'FAILED' };
  });
}

/**
 * DRAFT, SCHEDULED or SENDING → CANCELLED, and every still-queued email of the campaign with it, in one
 * transaction (a batch in progress holds the campaign row, so this waits for it and then cancels its emails too).
 * Emails a worker has claimed (SENDING) are left to it: it looks at the campaign's status right before each send and
 * records CANCELLED instead of sending (worker/deliveryQueue.ts), so after this commits only sends already handed to
 * SMTP still leave, and they end SENT.
 * `changed` is false when the campaign was already final; `status` is its status after the call.
 */
export async function cancelCampaignRows(knex: Knex, ref: CampaignRef): Promise<{ changed: boolean; status: CampaignPhase }> {
  return knex.transaction(async (trx) => {
    const [row] = await trx('campaigns').where({ project_id: ref.projectId, id: ref.campaignId }).whereIn('status', ['DRAFT', 'SCHEDULED', 'SENDING'])
      .update({ status: 'CANCELLED', cancelled_at: trx.fn.now(), updated_at: trx.fn.now() }).returning('status');
    if (!row) {
      const current = await trx('campaigns').where({ project_id: ref.projectId, id: ref.campaignId }).first('status');
      return { changed: false, status: (current?.status ?? 'CANCELLED') as CampaignPhase };
    }
    await cancelQueuedEmails(trx, ref, null);
    return { changed: true, status: 'CANCELLED' };
  });
}

/**
 * SENDING → SENT once every email of the campaign has left the queue, with the number of recipients, and a
 * `campaign.sent` event (no contact; data: campaignId, name, totalRecipients) in the same transaction, so that a
 * webhook subscribed to it hears of it exactly when the campaign is SENT. A campaign no longer SENDING (cancelled,
 * failed meanwhile) is left alone, and the answer is CANCELLED, as before: the workflow stops either way.
 */
export async function finishCampaignRows(knex: Knex, ref: CampaignRef): Promise<CampaignPhase> {
  return knex.transaction(async (trx) => {
    const [row] = await trx('campaigns as k').where({ 'k.project_id': ref.projectId, 'k.id': ref.campaignId, 'k.status': 'SENDING' }).update({
      status: 'SENT', completed_at: trx.fn.now(), updated_at: trx.fn.now(),
      total_recipients: trx.raw('(SELECT count(*) FROM emails e WHERE e.project_id = k.project_id AND e.campaign_id = k.id AND e.partition_at = k.emails_partition_at AND NOT e.is_test)'),
    }).returning(['status', 'name', 'total_recipients']);
    if (!row) return 'CANCELLED';
    await recordEvents(trx, ref.projectId, [{ name: 'campaign.sent', data: { campaignId: ref.campaignId, name: row.name, totalRecipients: Number(row.total_recipients) } }]);
    return 'SENT';
  });
}

/**
 * The campaign's QUEUED emails → CANCELLED (with `error`, or none), taken out of its queued count (campaign_stats) in
 * the same statement. Answers how many.
 */
async function cancelQueuedEmails(trx: Knex.Transaction, ref: CampaignRef, error: string | null): Promise<number> {
  const { rows } = await trx.raw(
    `WITH cancelled AS (
       UPDATE emails SET status = 'CANCELLED', error = coalesce(?::text, error), updated_at = now()
       WHERE project_id = ?::uuid AND campaign_id = ?::uuid AND status = 'QUEUED' AND NOT is_test
         -- Its emails' one partition (db/partitions.ts): none for a campaign that never started (no emails_partition_at).
         AND partition_at = (SELECT k.emails_partition_at FROM campaigns k WHERE k.project_id = ?::uuid AND k.id = ?::uuid)
       RETURNING project_id, campaign_id, variant),
     ${campaignTally(`(SELECT project_id, campaign_id, variant, ${statusTally("'QUEUED'", "'CANCELLED'")} FROM cancelled)`, STATUS_TALLY)}
     SELECT count(*)::int AS n FROM cancelled`,
    [error, ref.projectId, ref.campaignId, ref.projectId, ref.campaignId],
  );
  return rows[0].n as number;
}
