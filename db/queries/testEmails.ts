import type { Knex } from 'knex';

/** What test copies are sent from, of what, and to whom. */
export interface TestEmails {
  projectId: string;
  /** The addresses, each once. */
  to: readonly string[];
  from: string;
  fromName: string | null;
  replyTo: string | null;
  /** The campaign tested: its copies are rendered at delivery, from the campaign, as its own emails are (no `messages`). */
  campaignId?: string;
  templateId?: string;
  /** By address (`to`), the message as rendered now: stored and sent as it is, as a transactional send's are. */
  messages?: readonly { subject: string; html: string }[];
  /** An A/B campaign's variant the copies are of (0 is A): rendered at delivery with its content. */
  variant?: number;
}

/**
 * Test copies (`is_test`), queued for the delivery queue like any email, in one statement: one row per address, linked
 * to the address's contact when it is one, and creating none. They are counted in no campaign's stats, and go to the
 * address whatever its subscription. POST /campaigns/:id/test and POST /templates/:id/test.
 */
export async function queueTestEmails(db: Knex, t: TestEmails): Promise<{ email: string; id: string }[]> {
  const subjects = t.to.map((_, k) => t.messages?.[k]?.subject ?? null);
  const htmls = t.to.map((_, k) => t.messages?.[k]?.html ?? null);
  const { rows } = await db.raw<{ rows: { id: string; to_email: string }[] }>(
    `INSERT INTO emails (project_id, contact_id, campaign_id, template_id, is_test, from_email, from_name, reply_to, to_email, subject, html, variant)
     SELECT ?::uuid, c.id, ?::uuid, ?::uuid, true, ?, ?, ?, t.email, t.subject, t.html, ?::smallint
     FROM unnest(?::text[], ?::text[], ?::text[]) AS t(email, subject, html)
     LEFT JOIN contacts c ON c.project_id = ?::uuid AND c.email = t.email
     RETURNING id, to_email`,
    // Arrays are bound whole (node-postgres writes them as array literals; a null element is NULL).
    [t.projectId, t.campaignId ?? null, t.templateId ?? null, t.from, t.fromName, t.replyTo, t.variant ?? null, [...t.to], subjects, htmls, t.projectId] as Knex.RawBinding[],
  );
  return rows.map((r) => ({ email: r.to_email, id: r.id }));
}
