import type { Knex } from 'knex';
import { v7 as uuidv7 } from 'uuid';
import { upsertContacts, type UpsertedContact } from '../db/queries/contacts';
import { verifiedSenders } from '../db/queries/domains';
import { messageScope, type Renderer, type RenderJobResult } from '../mail/render';
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
  /** Where templates are rendered: a render thread on the API (mail/renderPool.ts), inline on a worker. */
  render: Renderer;
}

interface Resolved {
  command: SendCommand;
  from: Mailbox;
  fromName: string | null;
  templateId: string | null;
  replyTo: string | null;
  subject: string;
  body: string;
}

/**
 * Requests whose template failed to render, and why. A failure is found after the contacts are upserted, so the
 * batch's transaction is rolled back and every request retried alone (db/batch.ts groupCommit); the retry of the
 * failed one answers from here before writing anything, instead of spending its render budget a second time.
 */
const renderFailures = new WeakMap<SendCommand, ApiError>();

function renderFailure(body: SendBody, failed: Extract<RenderJobResult, { failed: unknown }>['failed']): ApiError {
  const field = failed.part === 'subject' ? (body.subject ? 'subject' : 'template') : (body.body ? 'body' : 'template');
  return validationFailed([{ field, message: failed.message, code: failed.code }],
    failed.code === 'invalid_template' ? undefined : 'Templates render within a budget per request: see "Rendering limits" in docs/api.md.');
}

/**
 * The work of POST /v1/send for any number of requests in the caller's transaction, with as few statements as one
 * request needs: one template lookup, one domain check, one contact upsert per project, one emails insert. A request
 * with a missing template or an unverified sender gets its own error (in its slot) before anything is written, and
 * the others go on. A template that cannot render is found after the contacts are written: alone, its error is
 * answered (the caller rolls back on an error); in a batch, the call throws so that the caller rolls back and retries
 * each request alone.
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
    const failed = renderFailures.get(command);
    if (failed) {
      results[i] = failed;
      return undefined;
    }
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
    return {
      command, from,
      fromName: body.name ?? from.name ?? (body.from ? null : template?.from_name ?? null),
      templateId: template?.id ?? null,
      replyTo: body.reply ?? template?.reply_to ?? null,
      subject: body.subject ?? template!.subject,
      body: body.body ?? template!.body,
    };
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

  // Every request's recipients rendered in one job per request, off this event loop on the API. Templates are
  // parsed there too (cached), so a syntax error is found here, after the upsert, like a render that passes a cap.
  const rendered = await Promise.all(resolved.map((r) => r && deps.render({
    subject: r.subject,
    body: r.body,
    scopes: r.command.recipients.map((m) => {
      const { contact } = contacts.get(`${r.command.projectId}/${m.email}`)!;
      return messageScope(r.command.body.data ?? {}, contact, unsubscribeUrl(deps.publicUrl, deps.secret, { projectId: r.command.projectId, contactId: contact.id }));
    }),
  })));
  let failures = 0;
  rendered.forEach((outcome, i) => {
    if (outcome && 'failed' in outcome) {
      renderFailures.set(commands[i]!, (results[i] = renderFailure(commands[i]!.body, outcome.failed)));
      failures++;
    }
  });
  // The failed requests' contacts are written already: the transaction must not commit (see renderFailures).
  if (failures > 0 && commands.length > 1) throw new Error(`${failures} of ${commands.length} sends failed to render; retrying each alone`);
  if (failures > 0) return results as (StoredSend | ApiError)[];

  const rows: Record<string, unknown>[] = [];
  for (const [i, r] of resolved.entries()) {
    if (!r) continue;
    const { projectId, body } = r.command;
    const messages = (rendered[i] as Extract<RenderJobResult, { rendered: unknown }>).rendered;
    const emails = r.command.recipients.map((m, k) => {
      const { contact } = contacts.get(`${projectId}/${m.email}`)!;
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
        subject: messages[k]!.subject,
        html: messages[k]!.html,
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
