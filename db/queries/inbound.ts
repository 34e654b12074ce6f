import type { Knex } from 'knex';
import { eventEffects } from './events';

/**
 * The store of one received message for one project (inbound/receive.ts), as ONE statement: its raw bytes, its
 * attachments, a parsed row per route it matched and their `email.received` events with their effects (webhook
 * outbox rows included). One statement is atomic without BEGIN and COMMIT, and a named (prepared) one is planned once
 * per connection: bench/inbound.ts measured the five statements it replaces at 7.5 ms of PostgreSQL time a message, 3
 * of them planning the events' statement anew each time. The ids come from the caller (the webhook payload's signed
 * links name the rows before they exist).
 */

export interface InboundWrite {
  projectId: string;
  raw: { id: string; content: Buffer };
  attachments: { id: string; filename: string; contentType: string; contentId: string | null; disposition: string; content: Buffer }[];
  /** inbound_messages rows: the columns as named in MESSAGE_COLUMNS (json values as JSON, not strings). */
  messages: Record<string, unknown>[];
  events: { name: string; contactId: string | null; data: Record<string, unknown> }[];
}

/** inbound_messages' columns and their types, as jsonb_to_recordset reads them. */
const MESSAGE_COLUMNS: [string, string][] = [
  ['id', 'uuid'], ['route_id', 'uuid'], ['recipient', 'text'], ['mail_from', 'text'], ['remote_address', 'text'], ['helo', 'text'],
  ['from_address', 'text'], ['from_name', 'text'], ['to_addresses', 'jsonb'], ['cc_addresses', 'jsonb'], ['reply_to', 'jsonb'], ['subject', 'text'],
  ['sent_at', 'timestamptz'], ['message_id', 'text'], ['in_reply_to', 'text'], ['references', 'text[]'], ['text', 'text'], ['html', 'text'],
  ['headers', 'jsonb'], ['attachments', 'jsonb'], ['auth', 'jsonb'], ['warnings', 'text[]'], ['reply_email_id', 'uuid'], ['reply_contact_id', 'uuid'], ['size', 'integer'],
];
const quoted = (c: string) => `"${c}"`;

// One jsonb parameter for the rows (its estimate does not change with its value: a generic plan is kept), the bytes as
// bytea parameters (no hex or base64 inside JSON).
const STORE_SQL = `WITH input AS (SELECT ?::jsonb AS j),
  raw_row AS (
    INSERT INTO raw_messages (id, project_id, content, size) SELECT (j->>'rawId')::uuid, (j->>'projectId')::uuid, ?::bytea, (j->>'rawSize')::int FROM input RETURNING 1),
  attachment_rows AS (
    INSERT INTO attachments (id, project_id, filename, content_type, content_id, disposition, content, size)
    SELECT a.id, (j->>'projectId')::uuid, a.filename, a.content_type, a.content_id, a.disposition, b.content, octet_length(b.content)
    FROM input, jsonb_to_recordset(j->'attachments') AS a(id uuid, filename text, content_type text, content_id text, disposition text, ord bigint)
    JOIN unnest(?::bytea[]) WITH ORDINALITY AS b(content, ord) ON b.ord = a.ord
    RETURNING 1),
  message_rows AS (
    INSERT INTO inbound_messages (project_id, raw_message_id, ${MESSAGE_COLUMNS.map(([c]) => quoted(c)).join(', ')})
    SELECT (j->>'projectId')::uuid, (j->>'rawId')::uuid, ${MESSAGE_COLUMNS.map(([c]) => `m.${quoted(c)}`).join(', ')}
    FROM input, jsonb_to_recordset(j->'messages') AS m(${MESSAGE_COLUMNS.map(([c, t]) => `${quoted(c)} ${t}`).join(', ')})
    RETURNING 1),
  new_events AS (
    SELECT NULL::uuid AS id, (j->>'projectId')::uuid AS project_id, e.name, e.contact_id, NULL::uuid AS email_id, e.data
    FROM input, jsonb_to_recordset(j->'events') AS e(name text, contact_id uuid, data jsonb, ord bigint)
    ORDER BY e.ord),
  ${eventEffects()}
  SELECT (SELECT count(*) FROM raw_row)::int AS raws, (SELECT count(*) FROM attachment_rows)::int AS attachments,
         (SELECT count(*) FROM message_rows)::int AS messages, (SELECT count(*) FROM inserted)::int AS events`;

export async function storeInbound(db: Knex | Knex.Transaction, w: InboundWrite): Promise<void> {
  const input = {
    projectId: w.projectId, rawId: w.raw.id, rawSize: w.raw.content.length,
    attachments: w.attachments.map((a, i) => ({ ord: i + 1, id: a.id, filename: a.filename, content_type: a.contentType, content_id: a.contentId, disposition: a.disposition })),
    messages: w.messages,
    events: w.events.map((e, i) => ({ ord: i + 1, name: e.name, contact_id: e.contactId, data: e.data })),
  };
  const { rows: [row] } = await db.raw(STORE_SQL, [JSON.stringify(input), w.raw.content, w.attachments.map((a) => a.content)] as Knex.RawBinding[])
    .options({ name: 'herald_store_inbound' });
  // The statement inserts every row it is given or fails as a whole; a count short of that is a bug in the SQL.
  if (row.raws !== 1 || row.attachments !== w.attachments.length || row.messages !== w.messages.length || row.events !== w.events.length) {
    throw new Error(`storeInbound wrote ${JSON.stringify(row)} for 1 raw, ${w.attachments.length} attachments, ${w.messages.length} messages, ${w.events.length} events`);
  }
}
