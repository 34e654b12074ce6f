import type { Knex } from 'knex';
import { isTransaction } from '../db/database';
import type { BodyType } from '../db/models/Template';
import { isVerifiedSender } from '../db/queries/domains';
import { PermanentError } from '../engine/permanent';
import { applyTemplate, type AppliedParts, type OwnParts, type TemplateParts } from '../mail/applyTemplate';

/**
 * A campaign's content: its own subject, body and sender, and for each part it leaves empty (null) its template's
 * (`template_id`), merged as POST /v1/send merges a template (mail/applyTemplate.ts). The template is read whenever the
 * content is needed (checks, tests, the send), so edits to it apply until the campaign starts sending; then the parts
 * it gives are copied into the campaign (frozenContent), and every email of the campaign is rendered from the same.
 */

/** The columns of a campaign that say what it sends. */
export interface CampaignContentRow {
  project_id: string;
  template_id: string | null;
  subject: string | null;
  body: string | null;
  /** How the campaign's own `body` is written: HTML, or a Markdown template's body copied in when it started sending. */
  body_type: BodyType;
  from_email: string | null;
  from_name: string | null;
  reply_to: string | null;
}

export type CampaignTemplate = TemplateParts & { id: string };

/** The campaign's own parts, as mail/applyTemplate.ts takes them. */
export function ownParts(c: Omit<CampaignContentRow, 'project_id' | 'template_id'>): OwnParts {
  return {
    subject: c.subject, body: c.body, ...(c.body !== null ? { bodyType: c.body_type } : {}),
    from: c.from_email ? { email: c.from_email } : null, fromName: c.from_name, replyTo: c.reply_to,
  };
}

/**
 * The project's template `id` (undefined when it is not one), read under a share lock when `db` is a transaction: a
 * delete of the template waits for it, then sees the campaign that uses it (templates/templates.ts deleteTemplate).
 */
export async function readTemplate(db: Knex | Knex.Transaction, projectId: string, id: string): Promise<CampaignTemplate | undefined> {
  const q = db('templates').where({ project_id: projectId, id: id.toLowerCase() })
    .first('id', 'subject', 'body', 'body_type', 'from_email', 'from_name', 'reply_to');
  return (isTransaction(db) ? q.forShare() : q) as Promise<CampaignTemplate | undefined>;
}

/** The campaign's content as it goes now (its template read anew); a template gone meanwhile gives nothing. */
export async function currentContent(db: Knex | Knex.Transaction, c: CampaignContentRow): Promise<AppliedParts> {
  const template = c.template_id ? await readTemplate(db, c.project_id, c.template_id) : undefined;
  return applyTemplate(ownParts(c), template);
}

/**
 * The parts a campaign takes from its template, to copy into it when it starts sending (campaigns/batches.ts): from
 * then on, edits to the template no longer change it. They were checked when it was sent, but the template may have
 * changed since: a template deleted (a race with its delete's check) or a sender that is not (or no longer) at a verified
 * domain is a permanent failure, and the campaign ends FAILED saying so rather than sending from an unverified domain.
 */
export async function frozenContent(trx: Knex.Transaction, c: CampaignContentRow & { template_id: string }) {
  const template = await readTemplate(trx, c.project_id, c.template_id);
  if (!template) throw new PermanentError('its template was deleted before it started sending');
  const applied = applyTemplate(ownParts(c), template);
  if (!applied.from) throw new PermanentError('neither the campaign nor its template has a sender (from)');
  if (!(await isVerifiedSender(trx, c.project_id, applied.from.email))) {
    throw new PermanentError(`its sender ${applied.from.email} is not at a verified domain of this project`);
  }
  return {
    subject: applied.subject!, body: applied.body!, body_type: (applied.markdown ? 'markdown' : 'html') as BodyType,
    from_email: applied.from.email, from_name: applied.fromName, reply_to: applied.replyTo,
  };
}
