import type { Knex } from 'knex';
import { v7 as uuidv7 } from 'uuid';
import { upsertContacts, type UpsertedContact } from '../db/queries/contacts';
import { verifiedSenders } from '../db/queries/domains';
import { compileCached, messageScope, renderMessage, TemplateError, type CompiledMessage } from '../mail/render';
import { unsubscribeUrl } from '../mail/unsubscribe';
import { ApiError, validationFailed } from './errors';
import type { Mailbox, SendBody } from './schemas/send';

/** One validated POST /v1/send. */
export interface SendCommand {
  projectId: string;
  body: SendBody;
  recipients: Mailbox[];
  attachments: (NonNullable<SendBody['attachments']>[number] & { bytes: Buffer })[];
}

export interface StoredSend {
  /** The answer's `data`. */
  data: Record<string, unknown>;
}

export interface SendStoreDeps {
  publicUrl: string;
  secret: Buffer;
}

interface Resolved {
  command: SendCommand;
  from: Mailbox;
  fromName: string | null;
  templateId: string | null;
  replyTo: string | null;
  message: CompiledMessage;
}

/**
 * The work of POST /v1/send for any number of requests in the caller's transaction, with as few statements as one
 * request needs: one template lookup, one domain check, one contact upsert per project, one emails insert. A request
 * with a bad template or an unverified sender gets its own error (in its slot) before anything is written, and the
 * others go on. A failure after the first write (a template that cannot render) throws: the caller rolls back.
 */
export async function storeSends(trx: Knex.Transaction, commands: SendCommand[], deps: SendStoreDeps): Promise<(StoredSend | ApiError)[]> {
  const results: (StoredSend | ApiError | undefined)[] = commands.map(() => undefined);

  const wanted = commands.filter((c) => c.body.template).map((c) => [c.projectId, c.body.template!]);
  const templates = wanted.length
    ? new Map((await trx('templates').whereIn(['project_id', 'id'], wanted).select('project_id', 'id', 'subject', 'body', 'from_email', 'from_name', 'reply_to'))
      .map((t) => [`${t.project_id}/${t.id}`, t]))
    : new Map();

  const resolved: (Resolved | undefined)[] = commands.map((command, i) => {
    const { body } = command;
    const template = body.template ? templates.get(`${command.projectId}/${body.template}`) : undefined;
    if (body.template && !template) {
      results[i] = validationFailed([{ field: 'template', message: 'template not found', code: 'not_found' }]);
      return undefined;
    }
    const from: Mailbox | undefined = body.from ?? (template?.from_email ? { email: template.from_email, ...(template.from_name ? { name: template.from_name } : {}) } : undefined);
    if (!from) {
      results[i] = validationFailed([{ field: 'from', message: 'from is required unless the template has a sender', code: 'required' }]);
      return undefined;
    }
    try {
      return {
        command, from,
        fromName: body.name ?? from.name ?? (body.from ? null : template?.from_name ?? null),
        templateId: template?.id ?? null,
        replyTo: body.reply ?? template?.reply_to ?? null,
        message: compileCached(body.subject ?? template!.subject, body.body ?? template!.body),
      };
    } catch (err) {
      if (!(err instanceof TemplateError)) throw err;
      const field = err.part === 'subject' ? (body.subject ? 'subject' : 'template') : (body.body ? 'body' : 'template');
      results[i] = validationFailed([{ field, message: err.message, code: 'invalid_template' }]);
      return undefined;
    }
  });

  const verified = await verifiedSenders(trx, resolved.filter((r) => r).map((r) => ({ projectId: r!.command.projectId, email: r!.from.email })));
  resolved.forEach((r, i) => {
    if (r && !verified.has(`${r.command.projectId}/${r.from.email}`)) {
      results[i] = validationFailed(
        [{ field: 'from', message: `${r.from.email} is not at a verified domain of this project`, code: 'unverified_domain' }],
        `Verify ${r.from.email.split('@')[1]} first (POST /domains, or the CLI: domain add --verified).`,
      );
      resolved[i] = undefined;
    }
  });

  // Attachments are stored once per request and shared by its recipients' emails.
  const attachmentIds = new Map<number, string[]>();
  for (const [i, r] of resolved.entries()) {
    if (!r || r.command.attachments.length === 0) continue;
    const ids: { id: string }[] = await trx('attachments').insert(r.command.attachments.map((a) => ({
      project_id: r.command.projectId,
      filename: a.filename,
      content_type: a.contentType ?? 'application/octet-stream',
      content_id: a.contentId ?? null,
      disposition: a.disposition ?? (a.contentId ? 'inline' : 'attachment'),
      content: a.bytes,
      size: a.bytes.length,
    }))).returning('id');
    attachmentIds.set(i, ids.map((a) => a.id));
  }

  // New recipients are not subscribed to marketing unless the request says so; existing ones keep theirs.
  const contacts = new Map<string, UpsertedContact>();
  const byProject = new Map<string, { email: string; subscribed?: boolean }[]>();
  for (const r of resolved) {
    if (!r) continue;
    const list = byProject.get(r.command.projectId) ?? [];
    for (const m of r.command.recipients) list.push({ email: m.email, subscribed: r.command.body.subscribed });
    byProject.set(r.command.projectId, list);
  }
  for (const [projectId, inputs] of byProject) {
    const unique = [...new Set(inputs.map((c) => c.email))]; // upsertContacts answers one contact per distinct address, in order
    (await upsertContacts(trx, projectId, inputs, false)).forEach((c, k) => contacts.set(`${projectId}/${unique[k]}`, c));
  }

  const rows: Record<string, unknown>[] = [];
  for (const [i, r] of resolved.entries()) {
    if (!r) continue;
    const { projectId, body } = r.command;
    const emails = r.command.recipients.map((m) => {
      const { contact } = contacts.get(`${projectId}/${m.email}`)!;
      let rendered;
      try {
        rendered = renderMessage(r.message, messageScope(body.data ?? {}, contact, unsubscribeUrl(deps.publicUrl, deps.secret, { projectId, contactId: contact.id })));
      } catch (err) {
        throw validationFailed([{ field: body.body ? 'body' : 'template', message: `template could not be rendered: ${(err as Error).message.split('\n')[0]}`, code: 'invalid_template' }]);
      }
      return {
        id: uuidv7(),
        event_id: uuidv7(),
        project_id: projectId,
        contact_id: contact.id,
        template_id: r.templateId,
        from_email: r.from.email,
        from_name: r.fromName,
        reply_to: r.replyTo,
        to_email: m.email,
        to_name: m.name || null,
        subject: rendered.subject,
        html: rendered.html,
        headers: JSON.stringify(body.headers ?? {}),
        attachment_ids: attachmentIds.get(i) ?? [],
      };
    });
    rows.push(...emails);
    const data: Record<string, unknown> = {
      emails: emails.map((e) => ({ contact: { id: e.contact_id, email: e.to_email }, email: e.id })),
      timestamp: new Date().toISOString(),
    };
    if (emails.length === 1) Object.assign(data, { contact: emails[0]!.contact_id, event: emails[0]!.event_id });
    results[i] = { data };
  }
  if (rows.length) await trx('emails').insert(rows);
  return results as (StoredSend | ApiError)[];
}
