import type { Knex } from 'knex';
import { notFound } from '../core/errors';
import { isUuid } from '../core/values';
import { LIST_COUNT_CAP, listCappedPage, shapedCappedPages, type CappedList, type PageRequest } from '../db/pages';
import type { AuthResults } from './auth';
import { fileOfToken, RAW_FILE } from './files';
import type { Mailbox } from './parse';
import { idFloor } from '../db/pages';

/** Received messages as the API reads them (GET /inbound…), their files, and their retention. */

export interface InboundAttachment {
  index: number;
  attachmentId: string;
  filename: string;
  contentType: string;
  disposition: string;
  contentId: string | null;
  size: number;
}

export interface InboundMessage {
  id: string;
  routeId: string | null;
  recipient: string;
  mailFrom: string;
  remoteAddress: string | null;
  from: Mailbox | null;
  to: Mailbox[];
  cc: Mailbox[];
  replyTo: Mailbox[];
  subject: string | null;
  date: Date | null;
  messageId: string | null;
  inReplyToMessageId: string | null;
  references: string[];
  text: string | null;
  html: string | null;
  headers: { name: string; value: string }[];
  attachments: InboundAttachment[];
  auth: AuthResults;
  warnings: string[];
  inReplyTo: { emailId: string; contactId: string | null } | null;
  size: number;
  createdAt: Date;
}

export interface InboundFilter {
  routeId?: string;
  from?: string;
  to?: string;
  since?: Date;
  until?: Date;
}

/** The columns of a list (no bodies, no headers: a page stays small). */
const LIST_COLUMNS = ['id', 'route_id', 'recipient', 'mail_from', 'remote_address', 'from_address', 'from_name', 'to_addresses', 'cc_addresses', 'reply_to', 'subject',
  'sent_at', 'message_id', 'in_reply_to', 'references', 'attachments', 'auth', 'warnings', 'reply_email_id', 'reply_contact_id', 'size', 'created_at'];

function messageOf(r: Record<string, unknown>): InboundMessage {
  return {
    id: r.id as string, routeId: (r.route_id as string | null) ?? null, recipient: r.recipient as string, mailFrom: r.mail_from as string,
    remoteAddress: (r.remote_address as string | null) ?? null,
    from: r.from_address ? { address: r.from_address as string, name: (r.from_name as string | null) ?? null } : null,
    to: r.to_addresses as Mailbox[], cc: r.cc_addresses as Mailbox[], replyTo: r.reply_to as Mailbox[], subject: (r.subject as string | null) ?? null,
    date: (r.sent_at as Date | null) ?? null, messageId: (r.message_id as string | null) ?? null, inReplyToMessageId: (r.in_reply_to as string | null) ?? null,
    references: r.references as string[], text: (r.text as string | null | undefined) ?? null, html: (r.html as string | null | undefined) ?? null,
    headers: (r.headers as { name: string; value: string }[] | undefined) ?? [], attachments: r.attachments as InboundAttachment[], auth: r.auth as AuthResults,
    warnings: r.warnings as string[], inReplyTo: r.reply_email_id ? { emailId: r.reply_email_id as string, contactId: (r.reply_contact_id as string | null) ?? null } : null,
    size: r.size as number, createdAt: r.created_at as Date,
  };
}

export interface InboundMessagesDeps {
  knex: Knex;
  secret: Buffer;
}

/** The filtered, project-scoped query of GET /inbound (exported for the EXPLAIN test of its indexes). */
export function filteredInbound(knex: Knex, projectId: string, filter: InboundFilter): () => Knex.QueryBuilder {
  return inboundOfBounds(knex, boundsOf(projectId, filter));
}

/** What a list of received mail binds, by name: the project and each filter as its statement compares it. */
type InboundBounds = { projectId: string; routeId: string | undefined; from: string | undefined; to: string | undefined; sinceId: string | undefined; untilId: string | undefined };

// Ids are UUIDv7, their first 48 bits the time they were made (as the row was stored): a time range is a range of
// the primary key (project_id, id), the same index the page's keyset walks, so no sort and no other index.
const boundsOf = (projectId: string, filter: InboundFilter): InboundBounds => ({
  projectId, routeId: filter.routeId, from: filter.from?.toLowerCase(), to: filter.to?.toLowerCase(),
  sinceId: filter.since && firstIdAt(filter.since), untilId: filter.until && firstIdAt(filter.until),
});

function inboundOfBounds(knex: Knex, b: InboundBounds): () => Knex.QueryBuilder {
  return () => {
    const q = knex('inbound_messages').where('project_id', b.projectId).select(LIST_COLUMNS);
    if (b.routeId !== undefined) q.where('route_id', b.routeId);
    if (b.from !== undefined) q.where('from_address', b.from);
    if (b.to !== undefined) q.where('recipient', b.to);
    if (b.sinceId !== undefined) q.where('id', '>=', b.sinceId);
    if (b.untilId !== undefined) q.where('id', '<', b.untilId);
    return q;
  };
}

/** The pages of received mail with their generic plan (inboundListGeneric), built and compiled once per shape. */
const inboundPages = shapedCappedPages<InboundBounds>();

/**
 * Whether a list of received mail runs with its generic plan (db/pages.ts `genericPlan`): the project's mail, or a time
 * range of it, is a range of its primary key read newest first whatever the values. A sender, a recipient or a route
 * is planned for the value: from one message to many, a few read by a bitmap or many in the order of
 * inbound_messages_from_idx, _recipient_idx or _route_idx.
 */
export const inboundListGeneric = (filter: InboundFilter): boolean => !filter.from && !filter.to && !filter.routeId;

/** The smallest UUID (any version) whose first 48 bits are this time in milliseconds: every UUIDv7 made then or later is ≥ it. */
export function firstIdAt(t: Date): string {
  const ms = Math.min(Math.max(0, t.getTime()), 2 ** 48 - 1).toString(16).padStart(12, '0');
  return `${ms.slice(0, 8)}-${ms.slice(8)}-0000-0000-000000000000`;
}

export function inboundMessageService({ knex, secret }: InboundMessagesDeps) {
  async function find(projectId: string, id: string): Promise<Record<string, unknown>> {
    const row = isUuid(id) ? await knex('inbound_messages').where({ project_id: projectId, id }).first() : undefined;
    if (!row) throw notFound('Inbound message');
    return row;
  }
  async function rawOf(projectId: string, rawId: string): Promise<Buffer> {
    const row = await knex('raw_messages').where({ project_id: projectId, id: rawId }).first('content');
    if (!row) throw notFound('Inbound message');
    return row.content as Buffer;
  }
  async function attachmentOf(projectId: string, row: Record<string, unknown>, n: number): Promise<{ filename: string; contentType: string; content: Buffer }> {
    const meta = (row.attachments as InboundAttachment[]).find((a) => a.index === n);
    const stored = meta ? await knex('attachments').where({ project_id: projectId, id: meta.attachmentId }).first('content') : undefined;
    if (!meta || !stored) throw notFound('Attachment');
    return { filename: meta.filename, contentType: meta.contentType, content: stored.content as Buffer };
  }

  return {
    /** A page, newest first, and its total: exact up to 1,000 (db/pages.ts LIST_COUNT_CAP). */
    list(projectId: string, filter: InboundFilter, page: PageRequest): Promise<CappedList<InboundMessage>> {
      if (inboundListGeneric(filter)) return inboundPages(knex, page, boundsOf(projectId, filter), (b) => inboundOfBounds(knex, b), messageOf);
      return listCappedPage(filteredInbound(knex, projectId, filter), page, LIST_COUNT_CAP, messageOf, 'id');
    },
    get: async (projectId: string, id: string) => messageOf(await find(projectId, id)),
    async raw(projectId: string, id: string): Promise<Buffer> {
      return rawOf(projectId, (await find(projectId, id)).raw_message_id as string);
    },
    async attachment(projectId: string, id: string, n: number) {
      return attachmentOf(projectId, await find(projectId, id), n);
    },
    /**
     * The file a signed link names (inbound/files.ts): the raw message or an attachment. `expired` for a link past its
     * time, undefined for a link Herald did not sign or whose message is gone.
     */
    async byToken(token: string): Promise<{ filename: string; contentType: string; content: Buffer } | 'expired' | undefined> {
      const ref = fileOfToken(secret, token);
      if (!ref) return undefined;
      if (ref.expired) return 'expired';
      try {
        const row = await find(ref.projectId, ref.messageId);
        if (ref.file === RAW_FILE) return { filename: `${ref.messageId}.eml`, contentType: 'message/rfc822', content: await rawOf(ref.projectId, row.raw_message_id as string) };
        return await attachmentOf(ref.projectId, row, ref.file);
      } catch {
        return undefined;
      }
    },
  };
}

export type InboundMessages = ReturnType<typeof inboundMessageService>;

/**
 * pruneInbound's statement (exported for EXPLAIN): one batch. Bindings: the project and the cutoff id (`oneProject`) or
 * the days, then the batch's size. A raw message goes once no received message of it is left, a probe of
 * inbound_messages_raw_idx (migration 20261209000001) per message deleted, from its raw message's time on (a
 * received message's id is made with its raw message's, both by the receiving process: a day of slack for clocks that
 * disagree), so the months before are not read.
 */
export function pruneInboundSql(oneProject: boolean): string {
  return `WITH gone AS (
         DELETE FROM inbound_messages m WHERE (m.project_id, m.id) IN (
           ${oneProject
    // One project's: a range of its primary key (ids are UUIDv7, their time first), not the whole table's created_at index.
    ? 'SELECT project_id, id FROM inbound_messages WHERE project_id = ?::uuid AND id < ?::uuid ORDER BY id'
    : 'SELECT project_id, id FROM inbound_messages WHERE created_at < now() - make_interval(days => ?) ORDER BY created_at'}
           LIMIT ? FOR UPDATE SKIP LOCKED)
         RETURNING m.project_id, m.raw_message_id, m.attachments),
       files AS (
         SELECT DISTINCT g.project_id, g.raw_message_id FROM gone g
         WHERE NOT EXISTS (SELECT 1 FROM inbound_messages o WHERE o.project_id = g.project_id AND o.raw_message_id = g.raw_message_id
                             AND o.id >= herald_uuid_shift(g.raw_message_id, interval '-1 day')
                             AND NOT EXISTS (SELECT 1 FROM gone x WHERE x.project_id = o.project_id AND x.raw_message_id = o.raw_message_id))),
       attachments_gone AS (
         DELETE FROM attachments a USING gone g, jsonb_array_elements(g.attachments) j
         WHERE a.project_id = g.project_id AND a.id = (j->>'attachmentId')::uuid
           AND EXISTS (SELECT 1 FROM files f WHERE f.project_id = g.project_id AND f.raw_message_id = g.raw_message_id)
         RETURNING 1),
       raw_gone AS (
         DELETE FROM raw_messages r USING files f WHERE r.project_id = f.project_id AND r.id = f.raw_message_id RETURNING 1)
       SELECT count(*)::int AS n FROM gone`;
}

/**
 * Deletes received messages older than `retentionDays` (every project's, or one project's: a shorter retention of its
 * own, retention/retention.ts), with their raw bytes and attachments once no row of the same message is left. In short
 * batches (db/prune.ts); answers the messages deleted.
 */
export async function pruneInbound(knex: Knex, retentionDays: number, batch = 500, projectId?: string): Promise<number> {
  let total = 0;
  for (;;) {
    const { rows } = await knex.raw(
      pruneInboundSql(projectId !== undefined),
      [...(projectId ? [projectId, idFloor(new Date(Date.now() - retentionDays * 86_400_000))] : [retentionDays]), batch],
    );
    const n = (rows[0] as { n: number }).n;
    total += n;
    if (n < batch) return total;
  }
}
