import type { Knex } from 'knex';
import { v7 as uuidv7 } from 'uuid';
import { isMarketing, marketingHeaders, skipReason } from '../audience/subscription';
import { suppressedAmong, type SuppressionReason } from '../audience/suppressions';
import { upsertContacts } from '../db/queries/contacts';
import { recordEvents, type NewEvent } from '../db/queries/events';
import { verifiedSenders } from '../db/queries/domains';
import { messageScope, type Renderer, type RenderJob, type TemplateProblem } from '../mail/render';
import { unsubscribeUrl } from '../mail/unsubscribe';
import { sendTrackingDefaults, type TrackChoice } from '../tracking/settings';
import { DomainError, invalid } from '../core/errors';
import { dataValues } from '../core/requestData';
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
    failed.code === 'invalid_template' ? undefined : 'Templates render within a budget per request: see "Rendering limits" in docs/api.md.');
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
 * The first half of POST /v1/send, before any transaction, for any number of requests: one template lookup, one
 * domain check and one read of the recipients' contacts per project. A request with a missing template or an
 * unverified sender gets its error, and nothing of it is written.
 *
 * A recipient without a contact is rendered for the contact it is about to become: the id it will be given now, no
 * data, and the subscription the request asks for. storeSends checks that what it wrote is what was rendered for.
 */
export async function checkSends(db: Knex | Knex.Transaction, commands: readonly SendCommand[]): Promise<(CheckedSend | DomainError)[]> {
  const results: (CheckedSend | DomainError | undefined)[] = commands.map(() => undefined);

  const wanted = commands.filter((c) => c.body.template).map((c) => [c.projectId, c.body.template!]);
  const templates = wanted.length
    ? new Map((await db('templates').whereIn(['project_id', 'id'], wanted).select('project_id', 'id', 'subject', 'body', 'from_email', 'from_name', 'reply_to', 'type', 'body_type'))
      .map((t) => [`${t.project_id}/${t.id}`, t]))
    : new Map();

  const resolved = commands.map((command, i) => {
    const { body } = command;
    const template = body.template ? templates.get(`${command.projectId}/${body.template}`) : undefined;
    if (body.template && !template) {
      results[i] = invalid([{ field: 'template', message: 'template not found', code: 'not_found' }]);
      return undefined;
    }
    const from: Mailbox | undefined = body.from ?? (template?.from_email ? { email: template.from_email, ...(template.from_name ? { name: template.from_name } : {}) } : undefined);
    if (!from) {
      results[i] = invalid([{ field: 'from', message: 'from is required unless the template has a sender', code: 'required' }]);
      return undefined;
    }
    return {
      command, from,
      fromName: body.name ?? from.name ?? (body.from ? null : template?.from_name ?? null),
      templateId: (template?.id as string | undefined) ?? null,
      replyTo: body.reply ?? template?.reply_to ?? null,
      subject: (body.subject ?? template!.subject) as string,
      body: (body.body ?? template!.body) as string,
      // The request's type, else the template's for the template's own body, else HTML.
      markdown: (body.type ?? (body.body === undefined ? template?.body_type : undefined) ?? 'html') === 'markdown',
      marketing: isMarketing(template?.type as string | undefined),
    };
  });

  // Side by side on the pool; one after the other on a transaction's single connection.
  const senders = () => verifiedSenders(db as Knex, resolved.filter((r) => r).map((r) => ({ projectId: r!.command.projectId, email: r!.from.email })));
  const defaults = () => sendTrackingDefaults(db, resolved.filter((r) => r).map((r) => r!.command.projectId));
  const [verified, trackDefaults] = (db as Knex.Transaction).isTransaction
    ? [await senders(), await defaults()] as const
    : await Promise.all([senders(), defaults()]);
  resolved.forEach((r, i) => {
    if (r && !verified.has(`${r.command.projectId}/${r.from.email}`)) {
      results[i] = invalid(
        [{ field: 'from', message: `${r.from.email} is not at a verified domain of this project`, code: 'unverified_domain' }],
        `Verify ${r.from.email.split('@')[1]} first (POST /domains, or the CLI: domain add --verified).`,
      );
      resolved[i] = undefined;
    }
  });

  // The recipients' contacts as they are; an address seen for the first time gets one id for the whole batch.
  const addresses = new Map<string, Set<string>>();
  for (const r of resolved) {
    if (!r) continue;
    const set = addresses.get(r.command.projectId) ?? new Set<string>();
    for (const m of r.command.recipients) set.add(m.email);
    addresses.set(r.command.projectId, set);
  }
  const existing = new Map<string, RenderedFor>();
  await Promise.all([...addresses].map(async ([projectId, emails]) => {
    // = ANY of one array parameter: one statement text (and plan) whatever the batch's size.
    const rows: { id: string; email: string; subscribed: boolean; data: Record<string, unknown> }[] = await db('contacts')
      .where('project_id', projectId).whereRaw('email = ANY(?::text[])', [[...emails]]).select('id', 'email', 'subscribed', 'data');
    for (const c of rows) existing.set(`${projectId}/${c.email}`, { id: c.id, subscribed: c.subscribed, data: c.data });
  }));
  const newIds = new Map<string, string>();
  const contactFor = (projectId: string, email: string, subscribed: boolean | undefined): RenderedFor => {
    const known = existing.get(`${projectId}/${email}`);
    if (known) return { ...known, subscribed: subscribed ?? known.subscribed };
    const key = `${projectId}/${email}`;
    if (!newIds.has(key)) newIds.set(key, uuidv7());
    // New recipients are not subscribed to marketing unless the request says so.
    return { id: newIds.get(key)!, subscribed: subscribed ?? false, data: {} };
  };
  resolved.forEach((r, i) => {
    if (!r) return;
    const defaults = trackDefaults.get(r.command.projectId) ?? { opens: false, clicks: false };
    // A submitted message (SMTP) is delivered as its client built it: its HTML is never rewritten, so it is not tracked.
    const track = r.command.raw
      ? { opens: false, clicks: false }
      : { opens: r.command.body.track?.opens ?? defaults.opens, clicks: r.command.body.track?.clicks ?? defaults.clicks };
    results[i] = { ...r, track, contacts: r.command.recipients.map((m) => contactFor(r.command.projectId, m.email, r.command.body.subscribed)) };
  });
  return results as (CheckedSend | DomainError)[];
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
  const [checked] = await checkSends(db, [command]);
  if (checked instanceof DomainError) return checked;
  const [prepared] = await renderSends(deps, [checked!]);
  return prepared!;
}

const sameContact = (a: RenderedFor, b: RenderedFor) =>
  a.id === b.id && a.subscribed === b.subscribed && JSON.stringify(a.data) === JSON.stringify(b.data);

/**
 * The second half of POST /v1/send, in the caller's transaction, for any number of prepared requests: attachments,
 * one contact upsert per project, one emails insert. When a contact came out other than it was rendered for (another
 * request created or changed it meanwhile, which is rare), that request is rendered again here. Should that render
 * fail, the request's answer is its error when it is alone (the caller rolls back on an error); in a batch the call
 * throws, so that the caller rolls back and retries each request alone.
 */
export async function storeSends(trx: Knex.Transaction, prepared: readonly PreparedSend[], deps: SendStoreDeps): Promise<(StoredSend | DomainError)[]> {
  const results: (StoredSend | DomainError)[] = [];

  // Attachments are stored once per request and shared by its recipients' emails.
  const attachmentIds = new Map<number, string[]>();
  for (const [i, p] of prepared.entries()) {
    if (p.command.attachments.length === 0) continue;
    const ids: { id: string }[] = await trx('attachments').insert(p.command.attachments.map((a) => ({
      project_id: p.command.projectId,
      filename: a.filename,
      content_type: a.contentType ?? 'application/octet-stream',
      content_id: a.contentId ?? null,
      disposition: a.disposition ?? (a.contentId ? 'inline' : 'attachment'),
      content: a.bytes,
      size: a.bytes.length,
    }))).returning('id');
    attachmentIds.set(i, ids.map((a) => a.id));
  }
  // A submitted message is stored once too, and its recipients' emails name it: one INSERT for the batch's messages.
  const rawIds = new Map<number, string>();
  const raws = [...prepared.entries()].filter(([, p]) => p.command.raw).map(([i, p]) => {
    rawIds.set(i, uuidv7());
    return { id: rawIds.get(i), project_id: p.command.projectId, content: p.command.raw!, size: p.command.raw!.length };
  });
  if (raws.length) await trx('raw_messages').insert(raws);

  // New recipients take the id they were rendered for; existing ones keep theirs and their subscription.
  const contacts = new Map<string, RenderedFor>();
  const byProject = new Map<string, { email: string; id: string; subscribed?: boolean }[]>();
  for (const p of prepared) {
    const list = byProject.get(p.command.projectId) ?? [];
    p.command.recipients.forEach((m, k) => list.push({ email: m.email, id: p.contacts[k]!.id, subscribed: p.command.body.subscribed }));
    byProject.set(p.command.projectId, list);
  }
  for (const [projectId, inputs] of byProject) {
    const unique = [...new Set(inputs.map((c) => c.email))]; // upsertContacts answers one contact per distinct address, in order
    (await upsertContacts(trx, projectId, inputs, false)).forEach(({ contact }, k) => {
      contacts.set(`${projectId}/${unique[k]}`, { id: contact.id, subscribed: contact.subscribed, data: contact.data });
    });
  }

  // The suppression list (audience/suppressions.ts), as it is in this transaction: a suppressed recipient's email is
  // stored SUPPRESSED, never queued, with an email.suppressed event; its entry in the answer says so.
  const suppressedIn = new Map<string, Map<string, SuppressionReason>>();
  for (const [projectId, inputs] of byProject) suppressedIn.set(projectId, await suppressedAmong(trx, projectId, [...new Set(inputs.map((c) => c.email))]));
  const suppressedEvents = new Map<string, NewEvent[]>();

  const rows: Record<string, unknown>[] = [];
  for (const [i, p] of prepared.entries()) {
    const { projectId, body } = p.command;
    const actual = p.command.recipients.map((m) => contacts.get(`${projectId}/${m.email}`)!);
    let messages = p.messages;
    if (!p.command.raw && actual.some((c, k) => !sameContact(c, p.contacts[k]!))) {
      const again = (await deps.render([renderJobOf(deps, p, actual)], projectId))[0]!;
      if ('failed' in again) {
        if (prepared.length > 1) throw new Error('a send failed to render again in a batch; retrying each alone');
        return [renderFailure(body, again.failed)];
      }
      messages = byRecipient(p, actual, again.rendered);
    }
    // Marketing mail goes to subscribed contacts only (as they are now, in this transaction), each with its own
    // unsubscribe headers; a skipped recipient gets no email, and its entry in the answer says why.
    const skipped = actual.map((c) => skipReason(p.marketing, c));
    const emails = p.command.recipients.flatMap((m, k) => {
      if (skipped[k]) return [];
      const id = uuidv7();
      const unsubscribe = marketingHeaders(p.marketing, deps.publicUrl, deps.secret, { projectId, contactId: actual[k]!.id, emailId: id });
      const suppressed = suppressedIn.get(projectId)?.get(m.email);
      const eventId = uuidv7();
      if (suppressed) {
        const list = suppressedEvents.get(projectId) ?? [];
        list.push({ id: eventId, name: 'email.suppressed', contactId: actual[k]!.id, emailId: id, data: { reason: suppressed } });
        suppressedEvents.set(projectId, list);
      }
      return [{
        id,
        event_id: eventId,
        status: suppressed ? 'SUPPRESSED' : 'QUEUED',
        error: suppressed ? `the address is on the suppression list (${suppressed})` : null,
        suppressed,
        project_id: projectId,
        contact_id: actual[k]!.id,
        template_id: p.templateId,
        from_email: p.from.email,
        from_name: p.fromName,
        reply_to: p.replyTo,
        to_email: m.email,
        to_name: m.name || null,
        subject: messages[k]!.subject,
        html: messages[k]!.html,
        headers: JSON.stringify({ ...body.headers, ...unsubscribe }),
        attachment_ids: attachmentIds.get(i) ?? [],
        raw_message_id: rawIds.get(i) ?? null,
        track_opens: p.track.opens,
        track_clicks: p.track.clicks,
      }];
    });
    rows.push(...emails.map(({ suppressed: _reason, ...row }) => row));
    const emailOf = new Map(emails.map((e) => [e.to_email, e]));
    const data: Record<string, unknown> = {
      emails: p.command.recipients.map((m, k) => {
        const e = emailOf.get(m.email);
        const contact = { id: actual[k]!.id, email: m.email };
        if (!e) return { contact, email: null, status: 'SKIPPED', skipped: skipped[k] };
        return { contact, email: e.id, status: e.status, ...(e.suppressed ? { reason: e.suppressed } : {}) };
      }),
      timestamp: new Date().toISOString(),
    };
    if (p.command.recipients.length === 1) Object.assign(data, { contact: actual[0]!.id, event: emails[0]?.event_id ?? null });
    results.push({ data });
  }
  if (rows.length) await trx('emails').insert(rows);
  for (const [projectId, events] of suppressedEvents) await recordEvents(trx, projectId, events);
  return results;
}
