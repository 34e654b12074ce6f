import type { Knex } from 'knex';
import { suppress } from '../audience/suppressions';
import { patchContact } from '../db/queries/contacts';
import { recordEvents } from '../db/queries/events';
import { parseReport, type DeliveryFailure } from './reports';
import { emailOfBounceAddress } from './token';

/**
 * Mail that comes back: bounces and complaints, recorded against the email they concern and acted on.
 * - A hard bounce (a 5xx at SMTP time, or a DSN that says `failed` with a 5.x.x status): `email.bounced` (type hard),
 *   the email BOUNCED, the address suppressed at once (`hard_bounce`).
 * - A soft bounce (a DSN that says `delayed`, or `failed` with 4.x.x): `email.bounced` (type soft); the address is
 *   suppressed (`soft_bounce`) once it has soft-bounced `softBounceLimit` times within `softBounceWindowDays`.
 * - A complaint (an ARF feedback report): `email.complained`, the contact unsubscribed (`contact.unsubscribed`, source
 *   `complaint`) and the address suppressed (`complaint`).
 * Each in one transaction with its events; webhooks and automations see them like any other event.
 */

export interface BounceSettings {
  softBounceLimit: number;
  softBounceWindowDays: number;
}

export const DEFAULT_BOUNCE_SETTINGS: BounceSettings = { softBounceLimit: 3, softBounceWindowDays: 7 };

export interface BouncedEmail {
  projectId: string;
  id: string;
  contactId: string | null;
  toEmail: string;
}

export interface Bounce {
  type: 'hard' | 'soft';
  status: string | null;
  diagnostic: string | null;
  /** `smtp`: refused while Herald delivered it; `dsn`: a delivery status notification came back. */
  source: 'smtp' | 'dsn';
}

/** Records a bounce of an email (see above); answers whether the address is now suppressed. */
export async function recordBounce(trx: Knex.Transaction, email: BouncedEmail, bounce: Bounce, settings: BounceSettings): Promise<{ suppressed: boolean }> {
  await recordEvents(trx, email.projectId, [{
    name: 'email.bounced', contactId: email.contactId, emailId: email.id,
    data: { type: bounce.type, status: bounce.status, diagnostic: bounce.diagnostic, source: bounce.source },
  }]);
  const details = { emailId: email.id, status: bounce.status, diagnostic: bounce.diagnostic };
  if (bounce.type === 'hard') {
    await trx('emails').where({ project_id: email.projectId, id: email.id }).whereIn('status', ['SENT', 'FAILED']).update({ status: 'BOUNCED', error: bounce.diagnostic ?? `bounced (${bounce.status ?? 'no status'})`, updated_at: trx.fn.now() });
    await suppress(trx, email.projectId, [{ email: email.toEmail, reason: 'hard_bounce', details }]);
    return { suppressed: true };
  }
  // Soft bounces of this address in the window, this one included (the events of its emails: one indexed range).
  const { rows } = await trx.raw(
    `SELECT count(*)::int AS n FROM events ev JOIN emails e ON e.project_id = ev.project_id AND e.id = ev.email_id
     WHERE ev.project_id = ? AND ev.name = 'email.bounced' AND ev.data->>'type' = 'soft' AND e.to_email = ?
       AND ev.created_at > now() - make_interval(days => ?)`,
    [email.projectId, email.toEmail, settings.softBounceWindowDays],
  );
  if ((rows[0]?.n ?? 0) < settings.softBounceLimit) return { suppressed: false };
  await suppress(trx, email.projectId, [{ email: email.toEmail, reason: 'soft_bounce', details: { ...details, softBounces: rows[0].n, windowDays: settings.softBounceWindowDays } }]);
  return { suppressed: true };
}

/** Records a complaint about an email (see above). */
export async function recordComplaint(trx: Knex.Transaction, email: BouncedEmail, complaint: { feedbackType: string; userAgent: string | null }): Promise<void> {
  await recordEvents(trx, email.projectId, [{ name: 'email.complained', contactId: email.contactId, emailId: email.id, data: { feedbackType: complaint.feedbackType, userAgent: complaint.userAgent } }]);
  if (email.contactId) await patchContact(trx, email.projectId, email.contactId, { subscribed: false }, 'complaint');
  await suppress(trx, email.projectId, [{ email: email.toEmail, reason: 'complaint', details: { emailId: email.id, feedbackType: complaint.feedbackType } }]);
}

/** The email a bounce address names (a signed token: bounces/token.ts), if it exists. */
export async function emailOfBounce(db: Knex, secret: Buffer, address: string): Promise<BouncedEmail | undefined> {
  const id = emailOfBounceAddress(secret, address);
  if (!id) return undefined;
  const row = await db('emails').where({ id }).first('project_id', 'id', 'contact_id', 'to_email');
  return row ? { projectId: row.project_id, id: row.id, contactId: row.contact_id, toEmail: row.to_email } : undefined;
}

export type InboundOutcome =
  | { kind: 'bounce'; email: BouncedEmail; failure: DeliveryFailure; suppressed: boolean }
  | { kind: 'complaint'; email: BouncedEmail }
  | { kind: 'dropped'; reason: 'unknown address' | 'not a report' };

/**
 * A message received at a bounce address: the address names the email (unsigned or foreign addresses are dropped),
 * the report says what happened (a message that is no report is dropped).
 */
export async function receiveReturnedMail(db: Knex, secret: Buffer, settings: BounceSettings, recipients: string[], raw: Buffer): Promise<InboundOutcome> {
  let email: BouncedEmail | undefined;
  for (const r of recipients) if ((email = await emailOfBounce(db, secret, r))) break;
  if (!email) return { kind: 'dropped', reason: 'unknown address' };
  const report = await parseReport(raw);
  if (!report) return { kind: 'dropped', reason: 'not a report' };
  const found = email;
  if (report.kind === 'complaint') {
    await db.transaction((trx) => recordComplaint(trx, found, report));
    return { kind: 'complaint', email: found };
  }
  // One email per bounce address: its recipient's failure (a report for several recipients names this one too).
  const failure = report.failures.find((f) => f.recipient === found.toEmail) ?? report.failures[0]!;
  const { suppressed } = await db.transaction((trx) => recordBounce(trx, found, { type: failure.type, status: failure.status, diagnostic: failure.diagnostic, source: 'dsn' }, settings));
  return { kind: 'bounce', email: found, failure, suppressed };
}
