import type { Knex } from 'knex';
import { mayUseFrom } from '../projects/keys';
import { newId } from '../core/ids';
import { isMarketing, marketingHeaders, skipReason } from '../audience/subscription';
import { addressHasher } from '../audience/suppressions';
import { isStaleSend, sendContext, storeSendRows, type ContactAsRead, type ContactWrite, type EmailWrite, type SendWrites } from '../db/queries/sends';
import { messageScope, RENDER_LIMITS_HINT, type Renderer, type RenderJob, type TemplateProblem } from '../mail/render';
import { unsubscribeUrl } from '../mail/unsubscribe';
import type { TrackChoice } from '../tracking/settings';
import { DomainError, invalid } from '../core/errors';
import { dataValues } from '../core/requestData';
import { applyTemplate } from '../mail/applyTemplate';
import type { Mailbox, SendBody } from './types';

/** One validated POST /v1/send. */
export interface SendCommand {
  projectId: string;
  body: SendBody;
  recipients: Mailbox[];
  attachments: (NonNullable<SendBody['attachments']>[number] & { bytes: Buffer })[];
  /**
   * A message submitted over SMTP, as its client built it: sent as these bytes (with the headers Herald sets), never
   * rendered; `body.subject` and `body.body` are what it says, kept for reading it back.
   */
  raw?: Buffer;
  /**
   * The sending domains the caller's key is limited to (projects/apiKeys.ts mayUseFrom); absent or null: any verified
   * domain of the project.
   */
  domains?: readonly string[] | null;
}

export interface StoredSend {
  /** The answer's `data`. */
  data: Record<string, unknown>;
}

/** How many email rows a stored send wrote (recipients skipped as unsubscribed get none): the send-rate counter's step. */
export function storedEmails(stored: StoredSend): number {
  return ((stored.data.emails as { email: string | null }[] | undefined) ?? []).filter((e) => e.email !== null).length;
}

export interface SendStoreDeps {
  publicUrl: string;
  secret: Buffer;
  /** Where templates are rendered: a render thread on the API (mail/renderPool.ts), inline on a worker. */
  render: Renderer;
}

/** A recipient's contact as a message was rendered for it: a new address has the id it is about to be given. */
interface RenderedFor {
  id: string;
  subscribed: boolean;
  data: Record<string, unknown>;
  /** The contact as the check read it; undefined for an address that was no contact (the store creates it). */
  read?: ContactAsRead;
}

/** A send checked (template, sender, the contacts its recipients are or will be), ready to render. */
export interface CheckedSend {
  command: SendCommand;
  from: Mailbox;
  fromName: string | null;
  templateId: string | null;
  replyTo: string | null;
  subject: string;
  body: string;
  /** The body is markdown (mail/render.ts converts it after Liquid). */
  markdown: boolean;
  /** Marketing mail (a MARKETING template): only subscribed recipients get it, with the unsubscribe headers. */
  marketing: boolean;
  /** By recipient, in order. */
  contacts: RenderedFor[];
  /** Open and click tracking of its emails: the request's `track`, else the project's transactional defaults. */
  track: TrackChoice;
}

/** A send checked and rendered, ready to be stored. */
export interface PreparedSend extends CheckedSend {
  /** By recipient; null for a recipient who gets no email (audience/subscription.ts skipReason), who is not rendered. */
  messages: ({ subject: string; html: string } | null)[];
}

function renderFailure(body: SendBody, failed: TemplateProblem): DomainError {
  const field = failed.part === 'subject' ? (body.subject ? 'subject' : 'template') : (body.body ? 'body' : 'template');
  return invalid([{ field, message: failed.message, code: failed.code }],
    failed.code === 'invalid_template' ? undefined : RENDER_LIMITS_HINT);
}

/** The indexes of the recipients who get the email, given their contacts. */
const receivers = (p: Pick<CheckedSend, 'marketing'>, contacts: RenderedFor[]) =>
  contacts.flatMap((c, k) => (skipReason(p.marketing, c) ? [] : [k]));

/** The render of a send for the recipients who get it (the others are not rendered). */
function renderJobOf(deps: SendStoreDeps, p: Pick<CheckedSend, 'command' | 'subject' | 'body' | 'marketing' | 'markdown'>, contacts: RenderedFor[]): RenderJob {
  const { projectId, body, recipients } = p.command;
  const values = dataValues(body.data);
  return {
    subject: p.subject,
    body: p.body,
    ...(p.markdown ? { markdown: true } : {}),
    scopes: receivers(p, contacts).map((k) => messageScope(values, { ...contacts[k]!, email: recipients[k]!.email },
      unsubscribeUrl(deps.publicUrl, deps.secret, { projectId, contactId: contacts[k]!.id }))),
  };
}

/** The rendered messages of renderJobOf, by recipient. */
function byRecipient(p: Pick<CheckedSend, 'marketing'>, contacts: RenderedFor[], rendered: { subject: string; html: string }[]): PreparedSend['messages'] {
  const messages: PreparedSend['messages'] = contacts.map(() => null);
  receivers(p, contacts).forEach((k, n) => { messages[k] = rendered[n]!; });
  return messages;
}

/**
 * The first half of POST /v1/send, before any transaction, for any number of requests: ONE statement reads the
 * templates, checks the senders' domains, and reads the tracking defaults and the recipients' contacts
 * (db/queries/sends.ts sendContext). A request with a missing template or an unverified sender gets its error, and
 * nothing of it is written.
 *
 * A recipient without a contact is rendered for the contact it is about to become: the id it will be given now, no
 * data, and the subscription the request asks for. storeSends writes only if the contacts are still as read here.
 */
export async function checkSends(db: Knex | Knex.Transaction, commands: readonly SendCommand[]): Promise<(CheckedSend | DomainError)[]> {
  const addresses = new Map<string, { projectId: string; email: string }>();
  for (const c of commands) for (const m of c.recipients) addresses.set(`${c.projectId}/${m.email}`, { projectId: c.projectId, email: m.email });
  const context = await sendContext(db, {
    templates: commands.filter((c) => c.body.template).map((c) => ({ projectId: c.projectId, id: c.body.template! })),
    senders: commands.filter((c) => c.body.from).map((c) => ({ projectId: c.projectId, email: c.body.from!.email })),
    projectIds: [...new Set(commands.map((c) => c.projectId))],
    contacts: [...addresses.values()],
  });

  // An address seen for the first time gets one id for the whole batch.
  const newIds = new Map<string, string>();
  const contactFor = (projectId: string, email: string, subscribed: boolean | undefined): RenderedFor => {
    const key = `${projectId}/${email}`;
    const read = context.contacts.get(key);
    if (read) return { id: read.id, subscribed: subscribed ?? read.subscribed, data: read.data, read };
    if (!newIds.has(key)) newIds.set(key, newId());
    // New recipients are not subscribed to marketing unless the request says so.
    return { id: newIds.get(key)!, subscribed: subscribed ?? false, data: {} };
  };

  return commands.map((command) => {
    const { body, projectId } = command;
    const template = body.template ? context.templates.get(`${projectId}/${body.template}`) : undefined;
    if (body.template && !template) return invalid([{ field: 'template', message: 'template not found', code: 'not_found' }]);
    const applied = applyTemplate({ subject: body.subject, body: body.body, bodyType: body.type, from: body.from, fromName: body.name, replyTo: body.reply }, template);
    const from: Mailbox | undefined = applied.from;
    if (!from) return invalid([{ field: 'from', message: 'from is required unless the template has a sender', code: 'required' }]);
    if (!mayUseFrom(command.domains, from.email)) {
      return invalid(
        [{ field: 'from', message: `From ${from.email} is not at a domain this API key may send from (${command.domains!.join(', ')})`, code: 'domain_not_allowed' }],
        'Send From one of those domains or their subdomains, or use a key without a domain list (GET /keys shows each key\'s domains).',
      );
    }
    if (!context.verifiedSenders.has(`${projectId}/${from.email}`)) {
      return invalid(
        [{ field: 'from', message: `${from.email} is not at a verified domain of this project`, code: 'unverified_domain' }],
        `Verify ${from.email.split('@')[1]} first (POST /domains, or the CLI: domain add --verified).`,
      );
    }
    const defaults = context.tracking.get(projectId) ?? { opens: false, clicks: false };
    return {
      command, from,
      fromName: applied.fromName,
      templateId: template?.id ?? null,
      replyTo: applied.replyTo,
      // The schema asks for subject and body unless there is a template, which has both.
      subject: applied.subject!,
      body: applied.body!,
      markdown: applied.markdown,
      marketing: isMarketing(template?.type),
      // A submitted message (SMTP) is delivered as its client built it: its HTML is never rewritten, so it is not tracked.
      track: command.raw ? { opens: false, clicks: false } : { opens: body.track?.opens ?? defaults.opens, clicks: body.track?.clicks ?? defaults.clicks },
      contacts: command.recipients.map((m) => contactFor(projectId, m.email, body.subscribed)),
    };
  });
}

/**
 * Renders checked sends of ONE project (a render thread on the API), each request within its own budget: a template
 * that does not parse or passes a budget is that request's error. Rendering holds no database connection: a costly
 * template keeps no one else from the pool; and as the sends are one project's, it keeps no other project waiting.
 */
export async function renderSends(deps: SendStoreDeps, checked: readonly CheckedSend[]): Promise<(PreparedSend | DomainError)[]> {
  const templated = checked.filter((c) => !c.command.raw);
  const outcomes = templated.length ? await deps.render(templated.map((c) => renderJobOf(deps, c, c.contacts)), checked[0]!.command.projectId) : [];
  let next = 0;
  return checked.map((c) => {
    if (c.command.raw) return { ...c, messages: verbatim(c, c.contacts) };
    const outcome = outcomes[next++]!;
    return 'failed' in outcome ? renderFailure(c.command.body, outcome.failed) : { ...c, messages: byRecipient(c, c.contacts, outcome.rendered) };
  });
}

/** A submitted message is what its client wrote, for every recipient: nothing in it is a template. */
const verbatim = (p: CheckedSend, contacts: RenderedFor[]) => byRecipient(p, contacts, receivers(p, contacts).map(() => ({ subject: p.subject, html: p.body })));

/** checkSends then renderSends, for one caller that has its own transaction (an automation step). */
export async function prepareSend(db: Knex | Knex.Transaction, command: SendCommand, deps: SendStoreDeps): Promise<PreparedSend | DomainError> {
  return (await prepareSends(db, deps, [command]))[0]!;
}

/** checkSends then renderSends (one render call per project): an automation step's send, a batch whose store was undone. */
async function prepareSends(db: Knex | Knex.Transaction, deps: SendStoreDeps, commands: readonly SendCommand[]): Promise<(PreparedSend | DomainError)[]> {
  const checked = await checkSends(db, commands);
  const byProject = new Map<string, CheckedSend[]>();
  for (const c of checked) if (!(c instanceof DomainError)) byProject.set(c.command.projectId, [...(byProject.get(c.command.projectId) ?? []), c]);
  const rendered = new Map<CheckedSend, PreparedSend | DomainError>();
  for (const group of byProject.values()) (await renderSends(deps, group)).forEach((r, n) => rendered.set(group[n]!, r));
  return checked.map((c) => (c instanceof DomainError ? c : rendered.get(c)!));
}

/** Thrown when the sends of a batch disagree about a contact (read at different moments, or subscribed both ways). */
class InconsistentBatch extends Error {
  constructor() {
    super('the sends of a batch disagree about a contact; storing each alone');
  }
}

/** A stored send's answer, and the rows that store it. */
function writesOf(prepared: readonly PreparedSend[], deps: SendStoreDeps) {
  const hashAddress = addressHasher(deps.secret);
  // Each recipient's contact as the batch leaves it: the one all its sends were rendered for.
  const contacts = new Map<string, ContactWrite>();
  for (const p of prepared) {
    const { projectId, body } = p.command;
    p.command.recipients.forEach((m, k) => {
      const c = p.contacts[k]!;
      const key = `${projectId}/${m.email}`;
      const prev = contacts.get(key);
      const was = c.read?.subscribed ?? null;
      const version = c.read?.version ?? null;
      if (prev && (prev.id !== c.id || prev.was !== was || prev.version !== version)) throw new InconsistentBatch();
      contacts.set(key, { projectId, email: m.email, id: c.id, was, version, subscribed: body.subscribed ?? prev?.subscribed ?? c.read?.subscribed ?? false });
    });
  }
  for (const p of prepared) {
    p.command.recipients.forEach((m, k) => {
      if (contacts.get(`${p.command.projectId}/${m.email}`)!.subscribed !== p.contacts[k]!.subscribed) throw new InconsistentBatch();
    });
  }

  const writes: SendWrites = { contacts: [...contacts.values()], emails: [], attachments: [], raws: [] };
  const answers = prepared.map((p) => {
    const { projectId, body } = p.command;
    // Attachments and a submitted message are stored once per request and shared by its recipients' emails.
    const attachmentIds = p.command.attachments.map((a) => {
      const id = newId();
      writes.attachments.push({
        id, projectId, filename: a.filename, contentType: a.contentType ?? 'application/octet-stream', contentId: a.contentId ?? null,
        disposition: a.disposition ?? (a.contentId ? 'inline' : 'attachment'), content: a.bytes,
      });
      return id;
    });
    const rawId = p.command.raw ? newId() : null;
    if (p.command.raw) writes.raws.push({ id: rawId!, projectId, content: p.command.raw });
    // Marketing mail goes to subscribed contacts only, each with its own unsubscribe headers; a skipped recipient gets
    // no email, and its entry in the answer says why.
    const skipped = p.contacts.map((c) => skipReason(p.marketing, c));
    const emails = p.command.recipients.map((m, k): EmailWrite | undefined => {
      if (skipped[k]) return undefined;
      const id = newId();
      const contactId = p.contacts[k]!.id;
      const email: EmailWrite = {
        id,
        event_id: newId(),
        project_id: projectId,
        contact_id: contactId,
        template_id: p.templateId,
        from_email: p.from.email,
        from_name: p.fromName,
        reply_to: p.replyTo,
        to_email: m.email,
        to_name: m.name || null,
        subject: p.messages[k]!.subject,
        html: p.messages[k]!.html,
        headers: { ...body.headers, ...marketingHeaders(p.marketing, deps.publicUrl, deps.secret, { projectId, contactId, emailId: id }) },
        attachment_ids: attachmentIds,
        raw_message_id: rawId,
        track_opens: p.track.opens,
        track_clicks: p.track.clicks,
        to_hash: hashAddress(m.email),
      };
      writes.emails.push(email);
      return email;
    });
    return { p, skipped, emails };
  });
  return { writes, answers };
}

/**
 * The second half of POST /v1/send, for any number of prepared requests: ONE statement stores them all (raw
 * messages, attachments, contacts, emails, events: db/queries/sends.ts storeSendRows), in autocommit on the pool or in
 * the caller's transaction. A suppressed recipient's email is stored SUPPRESSED (audience/suppressions.ts), with an
 * email.suppressed event, and its entry in the answer says so.
 *
 * The statement writes only if every recipient's contact is still as checkSends read it. When one changed meanwhile
 * (another request created, changed or deleted it, which is rare), nothing is written: the requests are checked and
 * rendered again, and stored again; a request that now fails its checks or its render answers its error. Sends of a
 * batch that disagree about a contact (read at different moments) make the call throw, so that the caller (db/batch.ts)
 * stores each alone.
 */
export async function storeSends(db: Knex | Knex.Transaction, prepared: readonly PreparedSend[], deps: SendStoreDeps): Promise<(StoredSend | DomainError)[]> {
  let current: (PreparedSend | DomainError)[] = [...prepared];
  for (let attempt = 1; ; attempt++) {
    const ready = current.filter((p): p is PreparedSend => !(p instanceof DomainError));
    const { writes, answers } = writesOf(ready, deps);
    try {
      const suppressed = ready.length === 0 ? new Map<string, string>() : await storeSendRows(db, writes);
      const stored = answers.map((a) => answerOf(a, suppressed));
      let next = 0;
      return current.map((p) => (p instanceof DomainError ? p : stored[next++]!));
    } catch (err) {
      if (!isStaleSend(err) || attempt === 3) throw err;
      const again = await prepareSends(db, deps, ready.map((p) => p.command));
      let next = 0;
      current = current.map((p) => (p instanceof DomainError ? p : again[next++]!));
    }
  }
}

/** The answer's `data` of a stored send: one entry per recipient; contact and event too for a single recipient. */
function answerOf({ p, skipped, emails }: ReturnType<typeof writesOf>['answers'][number], suppressed: Map<string, string>): StoredSend {
  const data: Record<string, unknown> = {
    emails: p.command.recipients.map((m, k) => {
      const e = emails[k];
      const contact = { id: p.contacts[k]!.id, email: m.email };
      if (!e) return { contact, email: null, status: 'SKIPPED', skipped: skipped[k] };
      const reason = suppressed.get(e.id);
      return { contact, email: e.id, status: reason ? 'SUPPRESSED' : 'QUEUED', ...(reason ? { reason } : {}) };
    }),
    timestamp: new Date().toISOString(),
  };
  if (p.command.recipients.length === 1) Object.assign(data, { contact: p.contacts[0]!.id, event: emails[0]?.event_id ?? null });
  return { data };
}
