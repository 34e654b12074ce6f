import type { Knex } from 'knex';
import { suppress, type SuppressionReason } from '../audience/suppressions';
import { groupCommit } from '../db/batch';
import { recordEvents, type NewEvent } from '../db/queries/events';
import { campaignTally, statusTally, STATUS_TALLY } from '../db/queries/campaignTally';
import type { DeliveryFailure, Report } from './reports';
import { emailOfBounceAddress } from './token';

/**
 * Mail that comes back: bounces and complaints, recorded against the email they concern and acted on.
 * - A hard bounce (a 5xx to RCPT TO at delivery, or a DSN that says `failed` with a 5.x.x status, or with none):
 *   `email.bounced` (type hard), the email BOUNCED, the address suppressed at once (`hard_bounce`).
 * - A soft bounce (a DSN that says `delayed`, or `failed` with any other status): `email.bounced` (type soft); the
 *   address is suppressed (`soft_bounce`) once it has soft-bounced `softBounceLimit` times within
 *   `softBounceWindowDays`, each email counting once.
 * An email records one bounce of each type and one complaint: a report that comes back again records nothing.
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

/** What became of a return: recorded; `repeated`, its email already has one of its kind (nothing new); `unknown`, no such email. */
export type ReturnResult = 'recorded' | 'repeated' | 'unknown';

/** One of each kind per email: a bounce per type (hard, soft), a complaint. */
const kindOf = (r: Returned) => (r.kind === 'bounce' ? `email.bounced:${r.bounce.type}` : 'email.complained');

/**
 * Records the returns; each email counts one bounce of each type and one complaint, however often a report comes back
 * (a replayed or repeated DSN records nothing new, and one email adds at most one soft bounce to its address's count).
 * The emails' rows are locked first (in id order), so that two copies of a report arriving at once, in two
 * transactions or two processes, cannot both find nothing recorded.
 */
export async function recordReturns(trx: Knex.Transaction, returns: readonly Returned[], settings: BounceSettings): Promise<ReturnResult[]> {
  const ids = [...new Set(returns.map((r) => r.emailId))];
  const emails: EmailRow[] = returns.length
    ? await trx('emails').whereRaw('id = ANY(?::uuid[])', [ids]).orderBy('id').forUpdate().select('project_id', 'id', 'contact_id', 'to_email')
    : [];
  const emailOf = new Map(emails.map((e) => [e.id, e]));
  const { rows: already } = emails.length
    ? await trx.raw(
      `SELECT email_id, name, data->>'type' AS type FROM events
       WHERE project_id = ANY(?::uuid[]) AND email_id = ANY(?::uuid[]) AND name IN ('email.bounced', 'email.complained')`,
      [[...new Set(emails.map((e) => e.project_id))], emails.map((e) => e.id)],
    )
    : { rows: [] };
  const seen = new Set((already as { email_id: string; name: string; type: string | null }[])
    .map((e) => `${e.email_id} ${e.name === 'email.bounced' ? `email.bounced:${e.type}` : e.name}`));
  const results: ReturnResult[] = [];
  const byProject = new Map<string, { email: EmailRow; returned: Returned }[]>();
  for (const returned of returns) {
    const email = emailOf.get(returned.emailId);
    const key = `${returned.emailId} ${kindOf(returned)}`;
    if (!email) results.push('unknown');
    else if (seen.has(key)) results.push('repeated');
    else {
      seen.add(key);
      results.push('recorded');
      byProject.set(email.project_id, [...(byProject.get(email.project_id) ?? []), { email, returned }]);
    }
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
        // \`was\`: the row as this statement found it (SENT or FAILED; only a bounce moves those, and it waits for
        // this one and then finds BOUNCED), for its campaign's counts.
        `WITH bounced AS (
           UPDATE emails e SET status = 'BOUNCED', error = h.error, updated_at = now()
           FROM unnest(?::uuid[], ?::text[]) AS h(id, error), emails was
           WHERE e.project_id = ?::uuid AND e.id = h.id AND e.status IN ('SENT', 'FAILED') AND was.project_id = e.project_id AND was.id = e.id
           RETURNING e.project_id, e.campaign_id, e.variant, e.is_test, was.status AS was),
         ${campaignTally(`(SELECT project_id, campaign_id, variant, ${statusTally('was', "'BOUNCED'")} FROM bounced WHERE NOT is_test)`, STATUS_TALLY)}
         SELECT count(*) FROM bounced`,
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
  return results;
}

export type InboundOutcome =
  | { kind: 'bounce'; emailId: string; failure: DeliveryFailure }
  | { kind: 'complaint'; emailId: string }
  | { kind: 'dropped'; reason: 'unknown address' | 'unknown email' | 'not a report' | 'already recorded' };

/**
 * The inbound side: a message received at a bounce address. The address names the email (unsigned or foreign
 * addresses, or any at another domain than BOUNCE_DOMAIN, are dropped), the report says what happened (a message that is no report is dropped); the reports that
 * arrive together are recorded together (group commit: one transaction, a few statements; a batch that fails is retried
 * report by report).
 */
const dropped = (result: 'repeated' | 'unknown'): InboundOutcome => ({ kind: 'dropped', reason: result === 'repeated' ? 'already recorded' : 'unknown email' });

export function returnedMailReceiver(knex: Knex, secret: Buffer, settings: BounceSettings, bounceDomain: string | undefined) {
  const together = groupCommit<Returned, ReturnResult>(knex, (trx, returns) => recordReturns(trx, returns, settings));
  /** `report`: what parseReport read from the message (the caller parses it: a message that cannot be parsed is its fault). */
  return async function receive(recipients: string[], report: Report | undefined): Promise<InboundOutcome> {
    const emailId = recipients.map((r) => emailOfBounceAddress(secret, r, bounceDomain)).find((id) => id !== undefined);
    if (!emailId) return { kind: 'dropped', reason: 'unknown address' };
    if (!report) return { kind: 'dropped', reason: 'not a report' };
    if (report.kind === 'complaint') {
      const result = await together.load({ emailId, kind: 'complaint', feedbackType: report.feedbackType, userAgent: report.userAgent });
      return result === 'recorded' ? { kind: 'complaint', emailId } : dropped(result);
    }
    // One email per bounce address: its failure (a report that lists several recipients names this one among them).
    const failure = report.failures[0]!;
    const result = await together.load({ emailId, kind: 'bounce', bounce: { type: failure.type, status: failure.status, diagnostic: failure.diagnostic, source: 'dsn' } });
    return result === 'recorded' ? { kind: 'bounce', emailId, failure } : dropped(result);
  };
}
