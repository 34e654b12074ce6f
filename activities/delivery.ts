import type { Knex } from 'knex';
import { Email } from '../db/models/Email';
import { recordEvents } from '../db/queries/events';
import type { Logger } from '../logging/logger';
import { renderCampaignEmail } from '../mail/campaign';
import { buildMessage, type MessageContent, type StoredAttachment } from '../mail/message';
import { failureReason, isPermanentFailure, type Mailer } from '../mail/transport';
import { unsubscribeUrl } from '../mail/unsubscribe';
import type { DeliveryOutcome, EmailRef } from '../workflows/types';

export interface DeliveryDeps {
  knex: Knex;
  mailer: Mailer;
  log: Logger;
  /** For the unsubscribe links of campaign mail. */
  secret: Buffer;
  publicUrl: string;
}

/** A transient failure: thrown so that the engine retries the delivery with backoff. */
export class TransientDeliveryError extends Error {
  override name = 'TransientDeliveryError';
}

async function finish(knex: Knex, email: Email, outcome: { status: 'SENT'; messageId: string } | { status: 'FAILED'; error: string }): Promise<boolean> {
  return knex.transaction(async (trx) => {
    const changed = await trx('emails')
      .where({ project_id: email.projectId, id: email.id })
      .whereIn('status', ['QUEUED', 'SENDING'])
      .update(outcome.status === 'SENT'
        ? { status: 'SENT', message_id: outcome.messageId, sent_at: trx.fn.now(), error: null, updated_at: trx.fn.now() }
        : { status: 'FAILED', error: outcome.error, updated_at: trx.fn.now() });
    if (!changed) return false;
    // The event id was announced by the send API when the email was queued.
    await recordEvents(trx, email.projectId, [{
      id: email.eventId,
      name: outcome.status === 'SENT' ? 'email.sent' : 'email.failed',
      contactId: email.contactId,
      emailId: email.id,
      data: outcome.status === 'SENT' ? { messageId: outcome.messageId } : { error: outcome.error },
    }]);
    return true;
  });
}

/**
 * The delivery activities. `deliverEmail` is idempotent: it claims the email (QUEUED or SENDING → SENDING) and
 * does nothing for an email already SENT, FAILED or CANCELLED, so a repeated workflow or a retried API call never
 * sends it twice. An email left SENDING by a crash is sent again (at-least-once for the deliveries in flight at the
 * crash), with the same Message-ID.
 */
export function deliveryActivities({ knex, mailer, log, secret, publicUrl }: DeliveryDeps) {
  /**
   * What to send: transactional emails were rendered when queued; campaign emails are rendered now, from the
   * campaign (frozen once scheduled) and the contact as it is. Null when a campaign email's contact has
   * unsubscribed (or gone) since the audience was resolved: unsubscribed contacts are never mailed.
   */
  async function contentOf(email: Email): Promise<MessageContent | null> {
    if (email.subject !== null && email.html !== null) return { subject: email.subject, html: email.html };
    const [campaign, contact] = await Promise.all([
      knex('campaigns').where({ project_id: email.projectId, id: email.campaignId }).first('id', 'subject', 'body', 'updated_at'),
      email.contactId ? knex('contacts').where({ project_id: email.projectId, id: email.contactId }).first('id', 'email', 'subscribed', 'data') : undefined,
    ]);
    if (!campaign) return null;
    if (!email.isTest && (!contact || !contact.subscribed)) return null;
    const url = contact ? unsubscribeUrl(publicUrl, secret, { projectId: email.projectId, contactId: contact.id, emailId: email.id }) : null;
    return renderCampaignEmail(
      { id: campaign.id, subject: campaign.subject, body: campaign.body, updatedAt: campaign.updated_at },
      contact ? { id: contact.id, email: contact.email, subscribed: contact.subscribed, data: contact.data } : { id: null, email: email.toEmail, subscribed: false, data: {} },
      url,
      email.isTest,
    );
  }

  return {
    async deliverEmail(ref: EmailRef): Promise<DeliveryOutcome> {
      const [row] = await knex('emails')
        .where({ project_id: ref.projectId, id: ref.emailId })
        .whereIn('status', ['QUEUED', 'SENDING'])
        .update({ status: 'SENDING', attempts: knex.raw('attempts + 1'), updated_at: knex.fn.now() })
        .returning('*');
      if (!row) {
        const current = await knex('emails').where({ project_id: ref.projectId, id: ref.emailId }).first('status');
        return { status: 'SKIPPED', reason: current ? `email is ${current.status}` : 'email no longer exists' };
      }
      const email = Email.fromDatabaseJson(row);
      const attachments: StoredAttachment[] = email.attachmentIds.length
        ? (await knex('attachments').where('project_id', ref.projectId).whereIn('id', email.attachmentIds)
          .select('id', 'filename', 'content_type as contentType', 'content_id as contentId', 'disposition', 'content'))
          .sort((a: StoredAttachment, b: StoredAttachment) => email.attachmentIds.indexOf(a.id) - email.attachmentIds.indexOf(b.id))
        : [];

      const content = await contentOf(email);
      if (!content) {
        await knex('emails').where({ project_id: ref.projectId, id: ref.emailId, status: 'SENDING' })
          .update({ status: 'CANCELLED', error: 'the contact unsubscribed before delivery', updated_at: knex.fn.now() });
        return { status: 'SKIPPED', reason: 'contact unsubscribed' };
      }
      let messageId: string;
      try {
        ({ messageId } = await mailer.send(buildMessage(email, content, attachments)));
      } catch (err) {
        const error = failureReason(err);
        if (isPermanentFailure(err)) {
          await finish(knex, email, { status: 'FAILED', error });
          log.warn({ emailId: email.id, projectId: email.projectId, error }, 'delivery failed permanently');
          return { status: 'FAILED', error };
        }
        // Back to QUEUED (with the reason) while the engine waits to retry.
        await knex('emails').where({ project_id: ref.projectId, id: ref.emailId, status: 'SENDING' })
          .update({ status: 'QUEUED', error, updated_at: knex.fn.now() });
        log.info({ emailId: email.id, attempt: email.attempts, error }, 'transient delivery failure; will retry');
        throw new TransientDeliveryError(error);
      }
      await finish(knex, email, { status: 'SENT', messageId });
      return { status: 'SENT', messageId };
    },

    async cancelEmail(ref: EmailRef): Promise<DeliveryOutcome> {
      const changed = await knex('emails').where({ project_id: ref.projectId, id: ref.emailId }).whereIn('status', ['QUEUED', 'SENDING'])
        .update({ status: 'CANCELLED', updated_at: knex.fn.now() });
      if (changed) return { status: 'CANCELLED' };
      const current = await knex('emails').where({ project_id: ref.projectId, id: ref.emailId }).first('status');
      return { status: 'SKIPPED', reason: current ? `email is ${current.status}` : 'email no longer exists' };
    },

    async failEmail(ref: EmailRef & { error: string }): Promise<DeliveryOutcome> {
      const row = await knex('emails').where({ project_id: ref.projectId, id: ref.emailId }).first();
      if (!row) return { status: 'SKIPPED', reason: 'email no longer exists' };
      const email = Email.fromDatabaseJson(row);
      const changed = await finish(knex, email, { status: 'FAILED', error: ref.error });
      return changed ? { status: 'FAILED', error: ref.error } : { status: 'SKIPPED', reason: `email is ${email.status}` };
    },
  };
}
