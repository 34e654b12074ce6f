import type { Knex } from 'knex';
import { newId } from '../core/ids';
import { batched, batchedByGroup, groupStatement } from '../db/batch';
import { preparedStatement } from '../db/prepared';
import { storeInbound, type InboundWrite } from '../db/queries/inbound';
import { domainOf } from '../mail/message';
import type { Authenticator, AuthResults } from './auth';
import { FILE_LINK_TTL_MS, fileUrl, RAW_FILE } from './files';
import { firstMatch, splitRecipient, type MatchKind } from './matching';
import type { ParsedMessage } from './parse';
import { inProcess, type Analyser } from './analysis';
import { emailOfReplyRecipient } from './replyAddress';
import type { RouteAction } from './domains';

/**
 * The listener's side of inbound routing (smtp/inbound.ts calls it): which route takes a recipient (asked at RCPT TO,
 * so that an unknown recipient is refused before any data: no backscatter), and the storing of a message that was
 * accepted. A message is stored at once, whole or not at all: per project, its raw bytes, its attachments, a parsed row per
 * route it matched and the `email.received` event of each (EVENT_EFFECTS writes the webhook outbox rows in the same
 * statement), all in one statement (db/queries/inbound.ts): the listener answers 250 only once that has committed
 * (PostgreSQL's synchronous commit: on disk). Under load the database work is grouped (db/batch.ts): the recipients
 * of a domain asked together are looked up with one query, the emails that messages ready together reply to with
 * one, and those messages are stored by ONE statement (group commit; a batch that fails is retried message by message,
 * so a bad one fails alone). bench/inbound.ts measures it.
 */

/** Bodies (text and HTML together) up to this size travel in the webhook payload; larger ones are left out (the links and GET /inbound/:id have them). */
export const INLINE_BODY_BYTES = 64 * 1024;

/** Messages stored by one statement at most (group commit): 32 of the largest (16 MB) stay under PostgreSQL's 1 GB a value. */
export const STORE_BATCH = 32;

export type Resolution =
  | { kind: 'route'; projectId: string; routeId: string; action: Exclude<RouteAction, 'reject'>; endpointId: string | null; tag: string | null }
  | { kind: 'reject'; message: string };

export interface Envelope {
  mailFrom: string;
  remoteAddress: string;
  helo: string;
}

export interface ReceiverDeps {
  knex: Knex;
  secret: Buffer;
  publicUrl: string;
  authenticate: Authenticator;
  /** Where messages are parsed and authenticated (inbound/analysis.ts); unset: in this thread, with `authenticate`. */
  analyse?: Analyser;
}

interface EmailRow {
  id: string;
  contact_id: string | null;
  from_email: string;
}

interface RouteRow {
  id: string;
  project_id: string;
  kind: MatchKind;
  local_part: string | null;
  action: RouteAction;
  endpoint_id: string | null;
  reject_message: string | null;
}

/** Herald's own Message-IDs are `<email id@sending domain>` (mail/message.ts messageIdOf). */
const OWN_ID = /^<([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})@([^<>@\s]+)>$/i;

/** The routes of a VERIFIED inbound domain in their order (exported for the EXPLAIN test of its index). */
export function verifiedRoutes(knex: Knex, domain: string): Knex.QueryBuilder {
  return knex('inbound_domains as d')
    .join('inbound_routes as r', function on() { this.on('r.project_id', 'd.project_id').andOn('r.domain_id', 'd.id'); })
    .where({ 'd.domain': domain, 'd.status': 'VERIFIED' }).orderBy([{ column: 'r.priority' }, { column: 'r.id' }])
    .select('r.id', 'r.project_id', 'r.kind', 'r.local_part', 'r.action', 'r.endpoint_id', 'r.reject_message');
}

/** The emails (by project and id) that replies name; one shape whatever the batch's size (two array parameters). */
const runEmailsById = preparedStatement('herald_inbound_replied_emails',
  'SELECT project_id, id, contact_id, from_email FROM emails WHERE (project_id, id) IN (SELECT * FROM unnest(?::uuid[], ?::uuid[]))');

export function inboundReceiver({ knex, secret, publicUrl, authenticate, analyse = inProcess(authenticate) }: ReceiverDeps) {
  // The listener's two lookups run as named statements, without knex compiling a query builder for each (db/prepared.ts;
  // bench/inbound.ts: ~0.1 ms of the listener's CPU a message). The routes' text is verifiedRoutes' own.
  const routesSql = verifiedRoutes(knex, '').toSQL();
  if (JSON.stringify(routesSql.bindings) !== '["","VERIFIED"]') throw new Error(`verifiedRoutes binds ${JSON.stringify(routesSql.bindings)}`);
  const runRoutes = preparedStatement('herald_inbound_routes', routesSql.sql);
  const routesOf = async (domain: string) => (await runRoutes(knex, [domain, 'VERIFIED'])).rows as RouteRow[];
  /** The route that takes each address (all of one domain): one query of the domain's routes for all of them. */
  const resolving = batchedByGroup<{ local: string; domain: string }, Resolution | undefined>((r) => r.domain, async (recipients) => {
    const routes = (await routesOf(recipients[0]!.domain)).map((row) => ({ ...row, localPart: row.local_part }));
    return recipients.map((r) => {
      const hit = firstMatch(routes, r.local);
      if (!hit) return undefined;
      const { route } = hit;
      if (route.action === 'reject') return { kind: 'reject', message: route.reject_message ?? 'Rejected' };
      return { kind: 'route', projectId: route.project_id, routeId: route.id, action: route.action, endpointId: route.endpoint_id, tag: hit.tag };
    });
  });

  /** The route that takes `address` at a VERIFIED inbound domain; undefined: nobody takes it. */
  async function resolve(address: string): Promise<Resolution | undefined> {
    const r = splitRecipient(address);
    return r ? resolving.load(r) : undefined;
  }

  /** Emails by project and id (the ones replies name), those of the messages ready together in one query. */
  const emailsById = batched<string, EmailRow | null>(async (keys) => {
    const pairs = keys.map((k) => k.split('/') as [string, string]);
    const { rows } = await runEmailsById(knex, [pairs.map((p) => p[0]), pairs.map((p) => p[1])]) as { rows: (EmailRow & { project_id: string })[] };
    const byKey = new Map(rows.map((r) => [`${r.project_id}/${r.id}`, r]));
    return keys.map((k) => byKey.get(k) ?? null);
  });

  /**
   * The email of this project a reply names: by the signed reply address it was sent to (inbound/replyAddress.ts), else
   * by In-Reply-To, then References from the latest (Herald's own Message-IDs, at the email's From domain).
   */
  async function repliedTo(projectId: string, parsed: ParsedMessage, recipients: string[]): Promise<{ emailId: string; contactId: string | null } | null> {
    const signed = recipients.map((a) => emailOfReplyRecipient(secret, a)).filter((id): id is string => id !== undefined);
    const ordered = [...(parsed.inReplyTo ? [parsed.inReplyTo] : []), ...[...parsed.references].reverse()];
    const candidates = ordered.map((id) => OWN_ID.exec(id)).filter((m): m is RegExpExecArray => m !== null).map((m) => ({ id: m[1]!.toLowerCase(), domain: m[2]!.toLowerCase() }));
    if (!signed.length && !candidates.length) return null;
    const rows = (await Promise.all([...new Set([...signed, ...candidates.map((c) => c.id)])].map((id) => emailsById.load(`${projectId}/${id}`))))
      .filter((e): e is EmailRow => e !== null);
    const bySigned = signed.map((id) => rows.find((row) => row.id === id)).find((e) => e !== undefined);
    if (bySigned) return { emailId: bySigned.id, contactId: bySigned.contact_id };
    for (const c of candidates) {
      const e = rows.find((row) => row.id === c.id && domainOf(row.from_email).toLowerCase() === c.domain);
      if (e) return { emailId: e.id, contactId: e.contact_id };
    }
    return null;
  }

  // The messages ready together: one statement, each answered once it has committed (db/queries/inbound.ts). At most
  // STORE_BATCH messages a statement: its bytes are one parameter, which PostgreSQL takes up to 1 GB (16 MB messages).
  const storing = groupStatement<InboundWrite[], true>(knex, async (db, batch) => {
    await storeInbound(db, batch.flat());
    return batch.map(() => true as const);
  }, STORE_BATCH);

  /**
   * Stores an accepted message for its recipients (each resolved to a route at RCPT TO). Answers the parsed rows'
   * ids. Throws only when the database does (the listener answers 451 and the sender tries again: nothing was kept).
   */
  async function store(raw: Buffer, envelope: Envelope, recipients: { address: string; to: Extract<Resolution, { kind: 'route' }> }[]): Promise<string[]> {
    const { parsed, auth } = await analyse(raw, { ip: envelope.remoteAddress, helo: envelope.helo, sender: envelope.mailFrom });
    const byProject = new Map<string, Map<string, { address: string; to: Extract<Resolution, { kind: 'route' }> }>>();
    for (const r of recipients) {
      const routes = byProject.get(r.to.projectId) ?? new Map();
      if (!routes.has(r.to.routeId)) routes.set(r.to.routeId, r); // one row per route: its first recipient names it
      byProject.set(r.to.projectId, routes);
    }
    const expiresAt = new Date(Date.now() + FILE_LINK_TTL_MS);
    const writes: InboundWrite[] = [];
    for (const [projectId, routes] of byProject) {
      // Ids made here: the payload's signed links name the rows, which one statement then writes (db/queries/inbound.ts).
      const rawId = newId();
      const files = parsed.attachments.map((a) => ({ id: newId(), filename: a.filename, contentType: a.contentType, contentId: a.contentId, disposition: a.disposition, content: a.content }));
      const attachments = parsed.attachments.map((a, i) => ({ index: i, attachmentId: files[i]!.id, filename: a.filename, contentType: a.contentType, disposition: a.disposition, contentId: a.contentId, size: a.content.length }));
      const reply = await repliedTo(projectId, parsed, [...routes.values()].map((r) => r.address));
      const messages = [...routes.values()].map(({ address, to }) => ({ id: newId(), address: address.toLowerCase(), to }));
      writes.push({
        projectId,
        raw: { id: rawId, content: raw },
        attachments: files,
        messages: messages.map(({ id, address, to }) => ({
          id, route_id: to.routeId, recipient: address, mail_from: envelope.mailFrom,
          remote_address: envelope.remoteAddress, helo: envelope.helo.slice(0, 255), from_address: parsed.from?.address ?? null, from_name: parsed.from?.name ?? null,
          to_addresses: parsed.to, cc_addresses: parsed.cc, reply_to: parsed.replyTo, subject: parsed.subject,
          sent_at: parsed.date?.toISOString() ?? null, message_id: parsed.messageId, in_reply_to: parsed.inReplyTo, references: parsed.references, text: parsed.text, html: parsed.html,
          headers: parsed.headers, attachments, auth, warnings: parsed.warnings,
          reply_email_id: reply?.emailId ?? null, reply_contact_id: reply?.contactId ?? null, size: raw.length,
        })),
        events: messages.map(({ id, address, to }) => {
          const links = (file: number) => fileUrl(publicUrl, secret, { projectId, messageId: id, file, expiresAt });
          const data = receivedPayload({
            id, routeId: to.routeId, endpointId: to.action === 'webhook' ? to.endpointId : null, recipient: address, tag: to.tag,
            mailFrom: envelope.mailFrom, parsed, auth, size: raw.length, inReplyTo: reply,
            rawUrl: links(RAW_FILE), attachments: attachments.map((a) => ({ ...a, url: links(a.index) })), linksExpireAt: expiresAt,
          });
          // Inline bodies are the row's own text and html: the statement copies them from the row into the event's data
          // (db/queries/inbound.ts bodiesOf) instead of receiving them twice.
          const bodiesOf = data.bodiesOmitted ? undefined : id;
          if (bodiesOf) {
            delete data.text;
            delete data.html;
          }
          return { name: 'email.received', contactId: reply?.contactId ?? null, data, bodiesOf };
        }),
      });
    }
    // Every project's write of this message in the same statement: all stored or none.
    await storing.load(writes);
    return writes.flatMap((w) => w.messages.map((m) => m.id as string));
  }

  return { resolve, store };
}

export type InboundReceiver = ReturnType<typeof inboundReceiver>;

interface PayloadInput {
  id: string;
  routeId: string;
  endpointId: string | null;
  recipient: string;
  tag: string | null;
  mailFrom: string;
  parsed: ParsedMessage;
  auth: AuthResults;
  size: number;
  inReplyTo: { emailId: string; contactId: string | null } | null;
  rawUrl: string;
  attachments: { index: number; filename: string; contentType: string; disposition: string; contentId: string | null; size: number; url: string }[];
  linksExpireAt: Date;
}

/**
 * The `email.received` event's data, which is also its webhook payload's (EVENT_EFFECTS): the parsed message, its
 * authentication, the email it replies to, and links to the raw message and attachments. `endpointId` names the
 * route's endpoint: EVENT_EFFECTS delivers the event there (besides any endpoint subscribed to `email.received`).
 */
export function receivedPayload(p: PayloadInput): Record<string, unknown> {
  const m = p.parsed;
  const bodies = Buffer.byteLength(m.text ?? '') + Buffer.byteLength(m.html ?? '');
  const inline = bodies <= INLINE_BODY_BYTES;
  return {
    inboundId: p.id, routeId: p.routeId, ...(p.endpointId ? { endpointId: p.endpointId } : {}), recipient: p.recipient, tag: p.tag, mailFrom: p.mailFrom,
    from: m.from, to: m.to, cc: m.cc, replyTo: m.replyTo, subject: m.subject, date: m.date?.toISOString() ?? null,
    messageId: m.messageId, inReplyToMessageId: m.inReplyTo, references: m.references,
    text: inline ? m.text : null, html: inline ? m.html : null, bodiesOmitted: !inline,
    attachments: p.attachments.map(({ index, filename, contentType, disposition, contentId, size, url }) => ({ index, filename, contentType, disposition, contentId, size, url })),
    rawUrl: p.rawUrl, linksExpireAt: p.linksExpireAt.toISOString(), size: p.size,
    auth: p.auth, warnings: m.warnings, inReplyTo: p.inReplyTo,
  };
}
