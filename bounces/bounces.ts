import type { Knex } from 'knex';
import { suppress, type SuppressionReason } from '../audience/suppressions';
import { groupCommit } from '../db/batch';
import { recordEvents, type NewEvent } from '../db/queries/events';
import { parseReport, type DeliveryFailure } from './reports';
import { emailOfBounceAddress } from './token';

/**
 * Mail that comes back: bounces and complaints, recorded against the email they concern and acted on.
 * - A hard bounce (a 5xx to RCPT TO at delivery, or a DSN that says `failed` with a 5.x.x status): `email.bounced`
 *   (type hard), the email BOUNCED, the address suppressed at once (`hard_bounce`).
 * - A soft bounce (a DSN that says `delayed`, or `failed` with 4.x.x): `email.bounced` (type soft); the address is
 *   suppressed (`soft_bounce`) once it has soft-bounced `softBounceLimit` times within `softBounceWindowDays`.
 * - A complaint (an ARF feedback report): `email.complained`, the contact unsubscribed (`contact.unsubscribed`, source
 *   `complaint`) and the address suppressed (`complaint`).
 * Any number of them are recorded in one transaction by a few statements (`recordReturns`): the inbound listener
 * group-commits the reports that arrive together, as /v1/track does. Webhooks and automations see the events like any
 * other.
 */

export interface BounceSettings {
  softBounceLimit: number;
  softBounceWindowDays: number;
}

export const DEFAULT_BOUNCE_SETTINGS: BounceSettings = { softBounceLimit: 3, softBounceWindowDays: 7 };

export interface Bounce {
  type: 'hard' | 'soft';
  status: string | null;
  diagnostic: string | null;
  /** `smtp`: refused while Herald delivered it; `dsn`: a delivery status notification came back. */
  source: 'smtp' | 'dsn';
}

/** What came back for one email. */
export type Returned =
  | { emailId: string; kind: 'bounce'; bounce: Bounce }
  | { emailId: string; kind: 'complaint'; feedbackType: string; userAgent: string | null };

interface EmailRow {
  project_id: string;
  id: string;
  contact_id: string | null;
  to_email: string;
}

/** Which of the returns were recorded (false: their email no longer exists). */
export async function recordReturns(trx: Knex.Transaction, returns: readonly Returned[], settings: BounceSettings): Promise<boolean[]> {
  const emails: EmailRow[] = returns.length
    ? await trx('emails').whereRaw('id = ANY(?::uuid[])', [[...new Set(returns.map((r) => r.emailId))]]).select('project_id', 'id', 'contact_id', 'to_email')
    : [];
  const emailOf = new Map(emails.map((e) => [e.id, e]));
  const byProject = new Map<string, { email: EmailRow; returned: Returned }[]>();
  for (const returned of returns) {
    const email = emailOf.get(returned.emailId);
    if (!email) continue;
    byProject.set(email.project_id, [...(byProject.get(email.project_id) ?? []), { email, returned }]);
  }

  for (const [projectId, items] of byProject) {
    const events: NewEvent[] = items.map(({ email, returned: r }) => (r.kind === 'bounce'
      ? { name: 'email.bounced', contactId: email.contact_id, emailId: email.id, data: { type: r.bounce.type, status: r.bounce.status, diagnostic: r.bounce.diagnostic, source: r.bounce.source } }
      : { name: 'email.complained', contactId: email.contact_id, emailId: email.id, data: { feedbackType: r.feedbackType, userAgent: r.userAgent } }));
    await recordEvents(trx, projectId, events);
    const suppressions: { email: string; reason: SuppressionReason; details: Record<string, unknown> }[] = [];

    const hard = items.filter((i) => i.returned.kind === 'bounce' && i.returned.bounce.type === 'hard');
    if (hard.length) {
      await trx.raw(
        `UPDATE emails e SET status = 'BOUNCED', error = h.error, updated_at = now()
         FROM unnest(?::uuid[], ?::text[]) AS h(id, error)
         WHERE e.project_id = ?::uuid AND e.id = h.id AND e.status IN ('SENT', 'FAILED')`,
        [hard.map((h) => h.email.id), hard.map(({ returned: r }) => (r.kind === 'bounce' ? r.bounce.diagnostic ?? `bounced (${r.bounce.status ?? 'no status'})` : '')), projectId],
      );
      for (const { email, returned: r } of hard) {
        if (r.kind === 'bounce') suppressions.push({ email: email.to_email, reason: 'hard_bounce', details: { emailId: email.id, status: r.bounce.status, diagnostic: r.bounce.diagnostic } });
      }
    }

    const soft = items.filter((i) => i.returned.kind === 'bounce' && i.returned.bounce.type === 'soft');
    if (soft.length) {
      // Soft bounces of these contacts (a contact is its address) within the window, these included: one query over
      // each contact's own events (events_contact_idx), whatever the project's size.
      const { rows } = await trx.raw(
        `SELECT ev.contact_id, count(*)::int AS n FROM events ev
         WHERE ev.project_id = ?::uuid AND ev.contact_id = ANY(?::uuid[]) AND ev.name = 'email.bounced' AND ev.data->>'type' = 'soft'
           AND ev.created_at > now() - make_interval(days => ?)
         GROUP BY ev.contact_id`,
        [projectId, [...new Set(soft.map((s) => s.email.contact_id).filter((id): id is string => id !== null))], settings.softBounceWindowDays],
      );
      for (const row of rows as { contact_id: string; n: number }[]) {
        if (row.n < settings.softBounceLimit) continue;
        const last = soft.filter((s) => s.email.contact_id === row.contact_id).at(-1)!;
        const r = last.returned as Extract<Returned, { kind: 'bounce' }>;
        suppressions.push({ email: last.email.to_email, reason: 'soft_bounce', details: { emailId: last.email.id, status: r.bounce.status, diagnostic: r.bounce.diagnostic, softBounces: row.n, windowDays: settings.softBounceWindowDays } });
      }
    }

    const complaints = items.filter((i) => i.returned.kind === 'complaint');
    if (complaints.length) {
      // Unsubscribed in one statement; those that were subscribed record contact.unsubscribed (as patchContact does).
      const { rows } = await trx.raw(
        `UPDATE contacts SET subscribed = false, updated_at = now()
         WHERE project_id = ?::uuid AND id = ANY(?::uuid[]) AND subscribed RETURNING id`,
        [projectId, complaints.map((c) => c.email.contact_id).filter((id): id is string => id !== null)],
      );
      await recordEvents(trx, projectId, (rows as { id: string }[]).map((c) => ({ name: 'contact.unsubscribed', contactId: c.id, data: { source: 'complaint' } })));
      for (const { email, returned: r } of complaints) {
        if (r.kind === 'complaint') suppressions.push({ email: email.to_email, reason: 'complaint', details: { emailId: email.id, feedbackType: r.feedbackType } });
      }
    }
    await suppress(trx, projectId, suppressions);
  }
  return returns.map((r) => emailOf.has(r.emailId));
}

export type InboundOutcome =
  | { kind: 'bounce'; emailId: string; failure: DeliveryFailure }
  | { kind: 'complaint'; emailId: string }
  | { kind: 'dropped'; reason: 'unknown address' | 'unknown email' | 'not a report' };

/**
 * The inbound side: a message received at a bounce address. The address names the email (unsigned or foreign
 * addresses are dropped), the report says what happened (a message that is no report is dropped); the reports that
 * arrive together are recorded together (group commit: one transaction, a few statements; a batch that fails is retried
 * report by report).
 */
export function returnedMailReceiver(knex: Knex, secret: Buffer, settings: BounceSettings) {
  const together = groupCommit<Returned, boolean>(knex, (trx, returns) => recordReturns(trx, returns, settings));
  return async function receive(recipients: string[], raw: Buffer): Promise<InboundOutcome> {
    const emailId = recipients.map((r) => emailOfBounceAddress(secret, r)).find((id) => id !== undefined);
    if (!emailId) return { kind: 'dropped', reason: 'unknown address' };
    const report = await parseReport(raw);
    if (!report) return { kind: 'dropped', reason: 'not a report' };
    if (report.kind === 'complaint') {
      const recorded = await together.load({ emailId, kind: 'complaint', feedbackType: report.feedbackType, userAgent: report.userAgent });
      return recorded ? { kind: 'complaint', emailId } : { kind: 'dropped', reason: 'unknown email' };
    }
    // One email per bounce address: its failure (a report that lists several recipients names this one among them).
    const failure = report.failures[0]!;
    const recorded = await together.load({ emailId, kind: 'bounce', bounce: { type: failure.type, status: failure.status, diagnostic: failure.diagnostic, source: 'dsn' } });
    return recorded ? { kind: 'bounce', emailId, failure } : { kind: 'dropped', reason: 'unknown email' };
  };
}
