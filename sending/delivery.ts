import type { Knex } from 'knex';
import type { DeliveryEmail } from '../db/models/Email';
import { emailByKey } from '../db/partitions';
import { preparedStatement } from '../db/prepared';
import { eventEffects, OUTCOME_EVENTS } from '../db/queries/events';
import { campaignTally, statusTally, STATUS_TALLY } from '../db/queries/campaignTally';
import type { Logger } from '../logging/logger';
import { renderCampaignEmail } from '../mail/campaign';
import { TemplateError } from '../mail/render';
import { dkimFor, loadSigningKeys, type DkimOptions, type SigningKey } from '../domains/dkim';
import type { SendMailOptions } from 'nodemailer';
import { buildMessage, buildRawMessage, domainOf, messageIdOf, type MessageContent, type StoredAttachment } from '../mail/message';
import { enhancedStatus, failureReason, isPermanentFailure, isRecipientRejection, type Mailer } from '../mail/transport';
import { DEFAULT_BOUNCE_SETTINGS, recordReturns, type BounceSettings } from '../bounces/bounces';
import { bounceAddress } from '../bounces/token';
import { replyAddressFor } from '../inbound/replyAddress';
import { unsubscribeUrl } from '../mail/unsubscribe';
import { CAMPAIGN_FAILED_EMAIL_ERROR } from '../campaigns/lifecycle';
import { currentContent, type CampaignContentRow } from '../campaigns/content';
import { keyOf, readVariants, variantContents } from '../campaigns/abTest';
import { addTracking } from '../tracking/links';
import { deliveries, type DeliveryOutcome } from '../metrics/registry';

export interface DeliveryDeps {
  knex: Knex;
  mailer: Mailer;
  log: Logger;
  /** For the unsubscribe links of campaign mail, the open and click links of tracked mail, and the bounce addresses. */
  secret: Buffer;
  publicUrl: string;
  /**
   * Bounces: with a `domain` (BOUNCE_DOMAIN), every message's envelope sender is its VERP address there, so that
   * asynchronous bounces come back to the inbound listener; a recipient refused at SMTP time is a hard bounce.
   */
  bounces?: { domain?: string; settings: BounceSettings };
}

/** What one SMTP attempt came to. TRANSIENT (4xx, connection errors) may pass later; FAILED (5xx) never will. */
export type AttemptResult =
  | { status: 'SENT'; messageId: string }
  | { status: 'FAILED'; error: string; bounce?: { status: string | null } }
  | { status: 'TRANSIENT'; error: string }
  /** Not sent: a campaign email's contact unsubscribed (or was deleted) after the audience was resolved. */
  | { status: 'SKIPPED'; error: string };

/** What to write for a claimed (SENDING) email: its final state, or back to QUEUED for another attempt later. */
export type Outcome =
  | { email: DeliveryEmail; status: 'SENT'; messageId: string }
  | { email: DeliveryEmail; status: 'FAILED'; error: string; bounce?: { status: string | null } }
  | { email: DeliveryEmail; status: 'CANCELLED'; error: string }
  | { email: DeliveryEmail; status: 'QUEUED'; error: string; retryInMs: number };

const DELIVERY_OUTCOME: Record<Outcome['status'], DeliveryOutcome> = { SENT: 'sent', FAILED: 'failed', CANCELLED: 'cancelled', QUEUED: 'retried' };

/**
 * What one email needs for its send: its content (null: do not send; a TemplateError: it cannot be rendered within
 * the budgets, a permanent failure) and the DKIM signing options of its domain.
 */
export interface Prepared {
  content: MessageContent | TemplateError | null;
  dkim?: DkimOptions;
}

/** The outcome to record for an attempt; a transient failure goes back to the queue after `retryInMs`. */
export function outcomeOf(email: DeliveryEmail, result: AttemptResult, retryInMs: number): Outcome {
  switch (result.status) {
    case 'SENT': return { email, status: 'SENT', messageId: result.messageId };
    case 'FAILED': return { email, status: 'FAILED', error: result.error, ...(result.bounce ? { bounce: result.bounce } : {}) };
    case 'SKIPPED': return { email, status: 'CANCELLED', error: result.error };
    case 'TRANSIENT': return { email, status: 'QUEUED', error: result.error, retryInMs };
  }
}

/**
 * How delivery makes an email's message, the one way there is: `prepare` (content and DKIM options of any number of
 * emails, a few queries) and `build` (the nodemailer message of one prepared email: its attachments or its submitted
 * bytes are read here). The delivery queue sends what it builds; GET /emails/:id/raw (emails/raw.ts) compiles the same
 * message to its MIME bytes, unsigned.
 */
export function createComposer({ knex, log, secret, publicUrl, bounces }: Omit<DeliveryDeps, 'mailer'>) {
  const returnPath = (email: DeliveryEmail) => (bounces?.domain ? { returnPath: bounceAddress(secret, email.id, bounces.domain) } : {});
  /**
   * What to send, by email id: transactional emails were rendered when queued; campaign emails are rendered now,
   * from the campaign (frozen once it starts sending) and the contact as it is. Null when a campaign email's contact has
   * unsubscribed (or gone) since the audience was resolved: unsubscribed contacts are never mailed.
   */
  async function contents(emails: DeliveryEmail[]): Promise<Map<string, MessageContent | TemplateError | null>> {
    const result = new Map<string, MessageContent | TemplateError | null>();
    const campaignMail = emails.filter((e) => e.subject === null || e.html === null);
    for (const e of emails) if (e.subject !== null && e.html !== null) result.set(e.id, { subject: e.subject, html: e.html });
    if (campaignMail.length === 0) return result;
    const pairs = (ids: [string, string | null][]) => [...new Map(ids.filter(([, id]) => id).map(([p, id]) => [`${p}/${id}`, [p, id!]])).values()];
    const [campaigns, contacts] = await Promise.all([
      knex('campaigns').whereIn(['project_id', 'id'], pairs(campaignMail.map((e) => [e.projectId, e.campaignId])))
        .select('project_id', 'id', 'template_id', 'subject', 'body', 'body_type', 'from_email', 'from_name', 'reply_to', 'preview_text', 'ab_winner', 'ab_metric'),
      knex('contacts').whereIn(['project_id', 'id'], pairs(campaignMail.map((e) => [e.projectId, e.contactId]))).select('project_id', 'id', 'email', 'subscribed', 'data'),
    ]);
    // A campaign that has not started sending (a draft's test copies) may leave its subject or body to its template,
    // read as it is now; once sending, it has its own (campaigns/content.ts), and no template is read. An A/B
    // campaign's emails go out with their variant's content, and its rest with the winner's (campaigns/abTest.ts).
    const campaignOf = new Map(await Promise.all(campaigns.map(async (c: CampaignContentRow & { id: string; preview_text: string | null; ab_winner: number | null; ab_metric: string | null }) => {
      const applied = c.subject !== null && c.body !== null ? { subject: c.subject, body: c.body, markdown: c.body_type === 'markdown' } : await currentContent(knex, c);
      const base = { ...applied, previewText: c.preview_text };
      const variants = c.ab_metric !== null
        ? await variantContents(knex, c.project_id, await readVariants(knex, c.project_id, c.id), async () => ({ ...(await currentContent(knex, c)), previewText: c.preview_text }))
        : [];
      return [`${c.project_id}/${c.id}`, { base, variants, winner: c.ab_winner }] as const;
    })));
    const contactOf = new Map(contacts.map((c) => [`${c.project_id}/${c.id}`, c]));
    for (const email of campaignMail) {
      const sent = campaignOf.get(`${email.projectId}/${email.campaignId}`);
      const variant = email.variant ?? sent?.winner ?? null;
      const campaign = variant === null ? sent?.base : sent?.variants[variant];
      const contact = email.contactId ? contactOf.get(`${email.projectId}/${email.contactId}`) : undefined;
      if (!campaign || !campaign.subject || !campaign.body || (!email.isTest && (!contact || !contact.subscribed))) {
        result.set(email.id, null);
        continue;
      }
      const url = contact ? unsubscribeUrl(publicUrl, secret, { projectId: email.projectId, contactId: contact.id, emailId: email.id }) : null;
      try {
        result.set(email.id, renderCampaignEmail(
          { subject: campaign.subject, body: campaign.body, markdown: campaign.markdown, previewText: campaign.previewText },
          contact ? { id: contact.id, email: contact.email, subscribed: contact.subscribed, data: contact.data } : { id: null, email: email.toEmail, subscribed: false, data: {} },
          url,
          email.isTest,
          email.variant !== null ? keyOf(email.variant) : undefined,
        ));
      } catch (err) {
        if (!(err instanceof TemplateError)) throw err;
        result.set(email.id, err);
      }
    }
    return result;
  }

  /** The DKIM keys of the emails' From domains: one query per project (usually one). */
  async function signingKeys(emails: DeliveryEmail[]): Promise<Map<string, Map<string, SigningKey>>> {
    const domains = new Map<string, Set<string>>();
    for (const e of emails) domains.set(e.projectId, (domains.get(e.projectId) ?? new Set()).add(domainOf(e.fromEmail)));
    const keys = new Map<string, Map<string, SigningKey>>();
    await Promise.all([...domains].map(async ([projectId, names]) => {
      keys.set(projectId, await loadSigningKeys(knex, secret, projectId, names, (err) => log.error({ projectId, error: err.message }, 'DKIM key unusable; sending unsigned')));
    }));
    return keys;
  }

  /**
   * The HTML as delivered: with open and click tracking when the email has it (its choice was fixed when it was
   * queued), the pixel and redirects naming this email. Done here, for every email alike, so a retry carries the same
   * links.
   */
  function tracked(email: DeliveryEmail, content: MessageContent | TemplateError | null): MessageContent | TemplateError | null {
    if (!content || content instanceof TemplateError || (!email.trackOpens && !email.trackClicks)) return content;
    return { ...content, html: addTracking(content.html, { opens: email.trackOpens, clicks: email.trackClicks, publicUrl, secret, projectId: email.projectId, emailId: email.id }) };
  }

  /** Everything the sends of these emails need, by email id. */
  async function prepare(emails: DeliveryEmail[]): Promise<Map<string, Prepared>> {
    const [content, keys] = await Promise.all([contents(emails), signingKeys(emails)]);
    return new Map(emails.map((e) => {
      const dkim = dkimFor(keys.get(e.projectId)!, e.fromEmail);
      return [e.id, { content: tracked(e, content.get(e.id) ?? null), ...(dkim ? { dkim } : {}) }];
    }));
  }

  /** The message of a prepared email whose content is ready, as it is handed to SMTP (signed when `dkim` is given). */
  async function build(email: DeliveryEmail, { content, dkim }: Prepared & { content: MessageContent }): Promise<SendMailOptions> {
    const opts = { ...(dkim ? { dkim } : {}), ...returnPath(email), ...(email.replyTo ? { replyTo: replyAddressFor(secret, email.id, email.replyTo) } : {}) };
    if (email.rawMessageId) {
      const raw = await knex('raw_messages').where({ project_id: email.projectId, id: email.rawMessageId }).first('content');
      if (!raw) throw new Error('the submitted message is gone');
      return buildRawMessage(email, raw.content as Buffer, opts);
    }
    return buildMessage(email, content, await attachmentsOf(email), opts);
  }

  async function attachmentsOf(email: DeliveryEmail): Promise<StoredAttachment[]> {
    return email.attachmentIds.length
      ? (await knex('attachments').where('project_id', email.projectId).whereIn('id', email.attachmentIds)
        .select('id', 'filename', 'content_type as contentType', 'content_id as contentId', 'disposition', 'content'))
        .sort((a: StoredAttachment, b: StoredAttachment) => email.attachmentIds.indexOf(a.id) - email.attachmentIds.indexOf(b.id))
      : [];
  }

  return { prepare, build };
}

export type Composer = ReturnType<typeof createComposer>;

/**
 * The outcome write of `record` (see there): one statement for any number of outcomes, their campaigns' counts and
 * their events with all their effects (EVENT_EFFECTS). A named statement (db/prepared.ts), parsed and planned once per
 * connection: its text is ~6 KB of CTEs, which PostgreSQL parsed and planned again at every write (a write covers the
 * few outcomes that settle while the previous one commits), and which knex scanned for its bindings twice per call.
 */
export const RECORD_SQL = `WITH o AS (
     -- The partition_at bounds of each email: the row as it was claimed (to the millisecond, as JavaScript keeps it),
     -- any partition for an outcome that does not say.
     SELECT u.*, coalesce(u.partition_at - interval '1 millisecond', '-infinity') AS lo,
            coalesce(u.partition_at + interval '1 millisecond', 'infinity') AS hi
     FROM unnest(?::uuid[], ?::uuid[], ?::text[], ?::text[], ?::text[], ?::int[], ?::timestamptz[])
       AS u(project_id, id, status, message_id, error, retry_ms, partition_at)
   ), changed AS (
     UPDATE emails e SET
       status = o.status,
       message_id = coalesce(o.message_id, e.message_id),
       error = o.error,
       sent_at = CASE WHEN o.status = 'SENT' THEN now() ELSE e.sent_at END,
       available_at = CASE WHEN o.status = 'QUEUED' THEN now() + o.retry_ms * interval '1 millisecond' ELSE e.available_at END,
       claimed_by = NULL, claimed_at = NULL, updated_at = now()
     FROM o
     -- Each email by its primary key and by nothing else (db/partitions.ts emailByKey).
     WHERE ${emailByKey('o', 'o.lo', 'o.hi')}
       -- A CASE, not (status = 'SENDING' OR ...): that form matches the partial indexes of the queue and of the
       -- claims, and with statistics taken while the queue was empty the planner read every QUEUED row of a
       -- running campaign through them for each write (23 ms a statement, 2 x slower delivery). This way only
       -- the primary key can find the rows.
       AND CASE e.status WHEN 'SENDING' THEN true WHEN 'QUEUED' THEN o.status IN ('SENT', 'FAILED') ELSE false END
     RETURNING e.project_id, e.id, e.event_id, e.contact_id, e.campaign_id, e.variant, e.is_test, e.to_email, e.subject, o.status, o.message_id, o.error
   ),
   -- Its campaign's counts: every changed email was QUEUED or SENDING (the CASE above), counted as queued.
   ${campaignTally(`(SELECT project_id, campaign_id, variant, ${statusTally("'QUEUED'", 'status')} FROM changed WHERE NOT is_test)`, STATUS_TALLY)},
   new_events AS (
     -- The event id was announced by the send API when the email was queued.
     SELECT event_id AS id, project_id, CASE WHEN status = 'SENT' THEN '${OUTCOME_EVENTS[0]}' ELSE '${OUTCOME_EVENTS[1]}' END AS name,
            contact_id, id AS email_id,
            CASE WHEN status = 'SENT' THEN jsonb_build_object('messageId', message_id) ELSE jsonb_build_object('error', error) END AS data
     FROM changed WHERE status IN ('SENT', 'FAILED') ORDER BY project_id, id
   ),
   -- The events' emails are those this statement changed (their address and subject as they were): no second read.
   -- Only email.sent and email.failed, which a campaign's results do not count (its sent and failed emails are the
   -- counts above): without the campaign results' look-ups of earlier events.
   ${eventEffects('changed', { emailEvents: OUTCOME_EVENTS })}
   SELECT id FROM changed`;
// Its generic plan, pinned (db/prepared.ts): planning it for each write considers every partition of emails and
// events (2 ms of CPU per email on a year's), and PostgreSQL's own choice between the two went either way.
// Exported for bench/deliveryStatements.ts, which runs it as the worker does.
export const runRecord = preparedStatement('herald_record_outcomes', RECORD_SQL, { genericPlan: true });

/**
 * Delivery in three parts: `prepare` (what to send and how to sign it, a few queries for any number of emails),
 * `attempt` (one SMTP send) and `record` (any number of outcomes and their events in one transaction). The delivery
 * queue (worker/deliveryQueue.ts) runs them for batches, on both engines.
 */
export function createDeliverer(deps: DeliveryDeps) {
  const { knex, mailer, log, bounces } = deps;
  const settings = bounces?.settings ?? DEFAULT_BOUNCE_SETTINGS;
  const { prepare, build } = createComposer(deps);

  /** One SMTP attempt. Attachments (or a submitted message) are read here, per email, so memory holds only those of the sends in flight. */
  async function attempt(email: DeliveryEmail, prepared: Prepared): Promise<AttemptResult> {
    const { content } = prepared;
    if (!content) return { status: 'SKIPPED', error: 'the contact unsubscribed before delivery' };
    if (content instanceof TemplateError) return { status: 'FAILED', error: `the campaign's ${content.part} could not be rendered for this recipient: ${content.message}` };
    return send(email, () => build(email, { ...prepared, content }));
  }

  /** One SMTP send of the message `build` makes, and what it came to. */
  async function send(email: DeliveryEmail, build: () => Promise<SendMailOptions>): Promise<AttemptResult> {
    try {
      await mailer.send(await build());
      return { status: 'SENT', messageId: messageIdOf(email) };
    } catch (err) {
      const error = failureReason(err);
      if (isPermanentFailure(err)) {
        log.warn({ emailId: email.id, projectId: email.projectId, error }, 'delivery failed permanently');
        return { status: 'FAILED', error, ...(isRecipientRejection(err) ? { bounce: { status: enhancedStatus(err) } } : {}) };
      }
      log.info({ emailId: email.id, attempt: email.attempts, error }, 'transient delivery failure; will retry');
      return { status: 'TRANSIENT', error };
    }
  }

  /**
   * Writes outcomes in one statement: one UPDATE for all the emails and, through EVENT_EFFECTS (the one way events are
   * written), the email.sent / email.failed events of those that changed. Only emails still QUEUED or SENDING change
   * (a final state is never overwritten), and only those that changed record an event. Returns their ids.
   * One round trip, in autocommit, because the delivery queue waits for it before the next sends (a crash between the
   * SMTP answer and this commit is a duplicate). A campaign email that goes back to the queue after a transient
   * failure is CANCELLED instead when its campaign has been cancelled meanwhile: the cancel saw it SENDING and left it
   * to this write, which then reads the campaigns in the same transaction.
   */
  async function record(given: Outcome[]): Promise<Set<string>> {
    if (given.length === 0) return new Set();
    const write = async (db: Knex | Knex.Transaction, outcomes: Outcome[]) => {
      const { rows } = await runRecord(db, [
        outcomes.map((o) => o.email.projectId), outcomes.map((o) => o.email.id), outcomes.map((o) => o.status),
        outcomes.map((o) => (o.status === 'SENT' ? o.messageId : null)), outcomes.map((o) => (o.status === 'SENT' ? null : o.error)),
        outcomes.map((o) => (o.status === 'QUEUED' ? Math.round(o.retryInMs) : 0)),
        outcomes.map((o) => o.email.partitionAt ?? null),
      ]);
      return new Set<string>(rows.map((r: { id: string }) => r.id));
    };
    const bounced = given.filter((o): o is Extract<Outcome, { status: 'FAILED' }> => o.status === 'FAILED' && o.bounce !== undefined);
    if (!given.some(isCampaignRetry) && bounced.length === 0) return counted(given, await write(knex, given));
    let written: Outcome[] = given;
    const changed = await knex.transaction(async (trx) => {
      written = await cancelledCampaignsFirst(trx, given);
      const changed = await write(trx, written);
      // A recipient refused at SMTP time is a hard bounce, recorded with its failure (rare: one statement set each).
      await recordReturns(trx, bounced.filter((b) => changed.has(b.email.id))
        .map((o) => ({ emailId: o.email.id, kind: 'bounce', bounce: { type: 'hard', status: o.bounce!.status, diagnostic: o.error, source: 'smtp' } })), settings);
      return changed;
    });
    return counted(written, changed);
  }

  /** herald_deliveries_total: the committed outcomes (those the write changed), by what they came to. */
  function counted(outcomes: Outcome[], changed: Set<string>): Set<string> {
    for (const o of outcomes) if (changed.has(o.email.id)) deliveries.inc({ outcome: DELIVERY_OUTCOME[o.status] });
    return changed;
  }

  return { prepare, attempt, record };
}

const isCampaignRetry = (o: Outcome) => o.status === 'QUEUED' && o.email.campaignId !== null && !o.email.isTest;

/**
 * Retries of emails whose campaign is CANCELLED or FAILED become CANCELLED. The campaigns are read FOR SHARE, whatever
 * their status: a cancel (or a failure) either committed before (seen here) or waits for this transaction, and then
 * finds the email QUEUED and cancels it.
 */
async function cancelledCampaignsFirst(trx: Knex.Transaction, outcomes: Outcome[]): Promise<Outcome[]> {
  const retried = outcomes.filter(isCampaignRetry);
  if (retried.length === 0) return outcomes;
  const keys = [...new Map(retried.map((o) => [`${o.email.projectId}/${o.email.campaignId}`, [o.email.projectId, o.email.campaignId!]])).values()];
  const campaigns: { project_id: string; id: string; status: string }[] = await trx('campaigns').whereIn(['project_id', 'id'], keys).forShare().select('project_id', 'id', 'status');
  const stopped = new Map(campaigns.filter((c) => c.status === 'CANCELLED' || c.status === 'FAILED')
    .map((c) => [`${c.project_id}/${c.id}`, c.status === 'FAILED' ? CAMPAIGN_FAILED_EMAIL_ERROR : 'the campaign was cancelled']));
  if (stopped.size === 0) return outcomes;
  return outcomes.map((o) => {
    const why = o.status === 'QUEUED' && !o.email.isTest ? stopped.get(`${o.email.projectId}/${o.email.campaignId}`) : undefined;
    return why ? { email: o.email, status: 'CANCELLED', error: why } : o;
  });
}

export type Deliverer = ReturnType<typeof createDeliverer>;
