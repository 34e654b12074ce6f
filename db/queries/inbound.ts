import type { Knex } from 'knex';
import { preparedStatement } from '../prepared';
import { eventEffects } from './events';

/**
 * The store of received messages (inbound/receive.ts), as ONE statement: for each message and project, its raw bytes,
 * its attachments, a parsed row per route it matched and their `email.received` events with their effects (webhook
 * outbox rows included). The listener gathers the messages that are ready together into one call (group commit,
 * db/batch.ts groupStatement): one statement is atomic without BEGIN and COMMIT, so a batch is one round trip and one
 * commit, and a named (prepared) one is planned once per connection (bench/inbound.ts: five statements per message cost
 * 7.5 ms of PostgreSQL time, 3 of them planning the events' statement anew each time). The ids come from the caller (the
 * webhook payload's signed links name the rows before they exist).
 */

export interface InboundWrite {
  projectId: string;
  raw: { id: string; content: Buffer };
  attachments: { id: string; filename: string; contentType: string; contentId: string | null; disposition: string; content: Buffer }[];
  /** inbound_messages rows: the columns as named in MESSAGE_COLUMNS (json values as JSON, not strings). */
  messages: Record<string, unknown>[];
  /**
   * `bodiesOf`: the id of one of `messages`, whose text and html the statement adds to the event's data (as `text` and
   * `html`), so that a message's bodies travel to PostgreSQL once, in its row, not twice (bench/inbound.ts).
   */
  events: { name: string; contactId: string | null; data: Record<string, unknown>; bodiesOf?: string }[];
}

/** inbound_messages' columns and their types, as jsonb_to_recordset reads them. */
const MESSAGE_COLUMNS: [string, string][] = [
  ['id', 'uuid'], ['route_id', 'uuid'], ['recipient', 'text'], ['mail_from', 'text'], ['remote_address', 'text'], ['helo', 'text'],
  ['from_address', 'text'], ['from_name', 'text'], ['to_addresses', 'jsonb'], ['cc_addresses', 'jsonb'], ['reply_to', 'jsonb'], ['subject', 'text'],
  ['sent_at', 'timestamptz'], ['message_id', 'text'], ['in_reply_to', 'text'], ['references', 'text[]'], ['text', 'text'], ['html', 'text'],
  ['headers', 'jsonb'], ['attachments', 'jsonb'], ['auth', 'jsonb'], ['warnings', 'text[]'], ['reply_email_id', 'uuid'], ['reply_contact_id', 'uuid'], ['size', 'integer'],
];
const quoted = (c: string) => `"${c}"`;

// One jsonb parameter for the rows (its estimate does not change with its value: a generic plan is kept), and every
// byte (raw messages and attachments, one after the other) in ONE bytea parameter that each row cuts its part of by
// offset. node-postgres sends a Buffer parameter as binary, but an array of Buffers as hex text (twice the bytes, and
// encoded and decoded on each side): one Buffer keeps a 1 MB message at 1 MB on the wire. `input` is NOT MATERIALIZED:
// read by four parts of the statement, PostgreSQL would otherwise copy the parameters into a tuplestore, which past
// work_mem (a batch of 1 MB messages) is a temporary file written and read back for every row's cut (perf of the
// backends: BufFileWrite, BufFileRead). Inlined, each part reads the parameters themselves, parsed once at Bind (the
// casts name their types). bench/inbound.ts's store path alone: PostgreSQL CPU per 1 MB message 20 -> 12 ms.
const STORE_SQL = `WITH input AS NOT MATERIALIZED (SELECT ?::jsonb AS j, ?::bytea AS bytes),
  raw_rows AS (
    INSERT INTO raw_messages (id, project_id, content, size)
    SELECT r.id, r.project_id, substring(bytes FROM r.off + 1 FOR r.len), r.len
    FROM input, jsonb_to_recordset(j->'raws') AS r(id uuid, project_id uuid, off int, len int)
    RETURNING 1),
  attachment_rows AS (
    INSERT INTO attachments (id, project_id, filename, content_type, content_id, disposition, content, size)
    SELECT a.id, a.project_id, a.filename, a.content_type, a.content_id, a.disposition, substring(bytes FROM a.off + 1 FOR a.len), a.len
    FROM input, jsonb_to_recordset(j->'attachments') AS a(id uuid, project_id uuid, filename text, content_type text, content_id text, disposition text, off int, len int)
    RETURNING 1),
  messages AS MATERIALIZED (
    SELECT m.* FROM input, jsonb_to_recordset(j->'messages') AS m(project_id uuid, raw_message_id uuid, ${MESSAGE_COLUMNS.map(([c, t]) => `${quoted(c)} ${t}`).join(', ')})),
  message_rows AS (
    INSERT INTO inbound_messages (project_id, raw_message_id, ${MESSAGE_COLUMNS.map(([c]) => quoted(c)).join(', ')})
    SELECT m.project_id, m.raw_message_id, ${MESSAGE_COLUMNS.map(([c]) => `m.${quoted(c)}`).join(', ')} FROM messages m
    RETURNING 1),
  new_events AS (
    SELECT NULL::uuid AS id, e.project_id, e.name, e.contact_id, NULL::uuid AS email_id,
           CASE WHEN e.bodies_of IS NULL THEN e.data ELSE e.data || jsonb_build_object('text', b.text, 'html', b.html) END AS data
    FROM input CROSS JOIN jsonb_to_recordset(j->'events') AS e(project_id uuid, name text, contact_id uuid, data jsonb, ord bigint, bodies_of uuid)
    LEFT JOIN messages b ON b.id = e.bodies_of
    ORDER BY e.ord),
  ${eventEffects()}
  SELECT (SELECT count(*) FROM raw_rows)::int AS raws, (SELECT count(*) FROM attachment_rows)::int AS attachments,
         (SELECT count(*) FROM message_rows)::int AS messages, (SELECT count(*) FROM inserted)::int AS events`;

/** Named, and run without knex's scans of its long text at each batch (db/prepared.ts). */
const runStore = preparedStatement('herald_store_inbound', STORE_SQL);

/** Stores every write in one statement: all of them or (it throws) none. */
export async function storeInbound(db: Knex | Knex.Transaction, writes: readonly InboundWrite[]): Promise<void> {
  const parts: Buffer[] = [];
  let off = 0;
  const place = (content: Buffer) => {
    parts.push(content);
    off += content.length;
    return { off: off - content.length, len: content.length };
  };
  const raws: Record<string, unknown>[] = [];
  const attachments: Record<string, unknown>[] = [];
  const messages: Record<string, unknown>[] = [];
  const events: Record<string, unknown>[] = [];
  for (const w of writes) {
    raws.push({ id: w.raw.id, project_id: w.projectId, ...place(w.raw.content) });
    for (const a of w.attachments) {
      attachments.push({ id: a.id, project_id: w.projectId, filename: a.filename, content_type: a.contentType, content_id: a.contentId, disposition: a.disposition, ...place(a.content) });
    }
    for (const m of w.messages) messages.push({ ...m, project_id: w.projectId, raw_message_id: w.raw.id });
    for (const e of w.events) events.push({ ord: events.length + 1, project_id: w.projectId, name: e.name, contact_id: e.contactId, data: e.data, bodies_of: e.bodiesOf ?? null });
  }
  const bytes = parts.length === 1 ? parts[0]! : Buffer.concat(parts, off);
  const { rows: [row] } = await runStore(db, [JSON.stringify({ raws, attachments, messages, events }), bytes]);
  // The statement inserts every row it is given or fails as a whole; a count short of that is a bug in the SQL.
  if (row.raws !== raws.length || row.attachments !== attachments.length || row.messages !== messages.length || row.events !== events.length) {
    throw new Error(`storeInbound wrote ${JSON.stringify(row)} for ${raws.length} raw, ${attachments.length} attachments, ${messages.length} messages, ${events.length} events`);
  }
}
