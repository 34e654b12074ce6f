import type Router from '@koa/router';
import type { Knex } from 'knex';
import { upsertContacts } from '../../db/queries/contacts';
import { isVerifiedSender } from '../../db/queries/domains';
import { getTemplate } from '../../db/queries/templates';
import { dispatchEmails, dispatchedOnInsert } from '../../engine/dispatch';
import type { Engine } from '../../engine/types';
import type { Logger } from '../../logging/logger';
import { compileMessage, messageScope, renderMessage, TemplateError } from '../../mail/render';
import { unsubscribeUrl } from '../../mail/unsubscribe';
import { validationFailed } from '../errors';
import { idempotent } from '../idempotency';
import type { AuthState } from '../middleware/auth';
import { MAX_ATTACHMENT_BYTES, recipientsOf, sendSchema, type Mailbox, type SendBody } from '../schemas/send';
import { validateBody } from '../validate';

export interface SendDeps {
  knex: Knex;
  engine: Engine;
  log: Logger;
  secret: Buffer;
  publicUrl: string;
}

/**
 * POST /v1/send. In one transaction: resolve the template, check the sender's domain, store the attachments once,
 * upsert the recipients' contacts, render and store one QUEUED email per recipient: on the embedded engine the rows
 * are the delivery queue; on Temporal one delivery workflow per email starts after the commit. The answer never
 * waits for SMTP.
 */
export function sendRoutes(router: Router, deps: SendDeps): void {
  const { knex, engine, log } = deps;
  router.post('/v1/send', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const body = validateBody<SendBody>(ctx, sendSchema);
    const recipients = recipientsOf(body.to);
    const attachments = (body.attachments ?? []).map((a) => ({ ...a, bytes: Buffer.from(a.content, 'base64') }));
    const total = attachments.reduce((n, a) => n + a.bytes.length, 0);
    if (total > MAX_ATTACHMENT_BYTES) {
      throw validationFailed([{ field: 'attachments', message: `attachments total ${total} bytes; at most ${MAX_ATTACHMENT_BYTES} (10 MB) are allowed`, code: 'too_big' }]);
    }

    await idempotent(ctx, knex, 'send', body, async (trx) => {
      const template = body.template ? await getTemplate(trx, projectId, body.template) : undefined;
      if (body.template && !template) throw validationFailed([{ field: 'template', message: 'template not found', code: 'not_found' }]);

      const from: Mailbox | undefined = body.from ?? (template?.fromEmail ? { email: template.fromEmail, ...(template.fromName ? { name: template.fromName } : {}) } : undefined);
      if (!from) throw validationFailed([{ field: 'from', message: 'from is required unless the template has a sender', code: 'required' }]);
      const fromName = body.name ?? from.name ?? (body.from ? undefined : template?.fromName ?? undefined);
      if (!(await isVerifiedSender(trx, projectId, from.email))) {
        throw validationFailed(
          [{ field: 'from', message: `${from.email} is not at a verified domain of this project`, code: 'unverified_domain' }],
          `Verify ${from.email.split('@')[1]} first (POST /domains, or the CLI: domain add --verified).`,
        );
      }

      const subject = body.subject ?? template!.subject;
      const html = body.body ?? template!.body;
      let compiled;
      try {
        compiled = compileMessage(subject, html);
      } catch (err) {
        if (!(err instanceof TemplateError)) throw err;
        const field = err.part === 'subject' ? (body.subject ? 'subject' : 'template') : (body.body ? 'body' : 'template');
        throw validationFailed([{ field, message: err.message, code: 'invalid_template' }]);
      }

      const attachmentIds: string[] = attachments.length
        ? (await trx('attachments').insert(attachments.map((a) => ({
          project_id: projectId,
          filename: a.filename,
          content_type: a.contentType ?? 'application/octet-stream',
          content_id: a.contentId ?? null,
          disposition: a.disposition ?? (a.contentId ? 'inline' : 'attachment'),
          content: a.bytes,
          size: a.bytes.length,
        }))).returning('id')).map((r: { id: string }) => r.id)
        : [];

      // New recipients are not subscribed to marketing unless the request says so; existing ones keep theirs.
      const contacts = await upsertContacts(trx, projectId, recipients.map((r) => ({ email: r.email, subscribed: body.subscribed })), false);
      const rows = recipients.map((r, i) => {
        const { contact } = contacts[i]!;
        const url = unsubscribeUrl(deps.publicUrl, deps.secret, { projectId, contactId: contact.id });
        let rendered;
        try {
          rendered = renderMessage(compiled, messageScope(body.data ?? {}, contact, url));
        } catch (err) {
          throw validationFailed([{ field: body.body ? 'body' : 'template', message: `template could not be rendered: ${(err as Error).message.split('\n')[0]}`, code: 'invalid_template' }]);
        }
        return {
          project_id: projectId,
          contact_id: contact.id,
          template_id: template?.id ?? null,
          from_email: from.email,
          from_name: fromName ?? null,
          reply_to: body.reply ?? template?.replyTo ?? null,
          to_email: r.email,
          to_name: r.name || null,
          subject: rendered.subject,
          html: rendered.html,
          headers: JSON.stringify(body.headers ?? {}),
          attachment_ids: attachmentIds,
          // Embedded: the committed row is the delivery queue's entry. Temporal: its workflow starts after the commit.
          ...(dispatchedOnInsert(engine) ? { dispatched_at: trx.fn.now() } : {}),
        };
      });
      const emails: { id: string; event_id: string; contact_id: string; to_email: string }[] =
        await trx('emails').insert(rows).returning(['id', 'event_id', 'contact_id', 'to_email']);

      const data: Record<string, unknown> = {
        emails: emails.map((e) => ({ contact: { id: e.contact_id, email: e.to_email }, email: e.id })),
        timestamp: new Date().toISOString(),
      };
      if (emails.length === 1) Object.assign(data, { contact: emails[0]!.contact_id, event: emails[0]!.event_id });
      const refs = emails.map((e) => ({ projectId, emailId: e.id }));
      return { status: 200, body: { success: true, data }, afterCommit: async () => { await dispatchEmails(engine, knex, refs, log); } };
    });
  });
}
