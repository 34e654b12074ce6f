import type { Knex } from 'knex';
import { preparedStatement } from '../prepared';
import { isTransaction } from '../database';
import { sqlState } from '../errors';
import { verifiedSenderSql } from './domains';
import { eventEffects } from './events';

/**
 * The two statements of a send (sending/sends.ts), each for a whole batch of requests: the context read before
 * rendering, and the store after. Named (prepared) statements: their text is the same whatever the batch, so each
 * connection plans them once.
 */

export interface SendContextWanted {
  templates: { projectId: string; id: string }[];
  /** The requests' own senders; the templates' senders are checked too. */
  senders: { projectId: string; email: string }[];
  projectIds: string[];
  contacts: { projectId: string; email: string }[];
}

export interface TemplateRow {
  project_id: string;
  id: string;
  subject: string;
  body: string;
  from_email: string | null;
  from_name: string | null;
  reply_to: string | null;
  type: string;
  body_type: string;
}

export interface ContactAsRead {
  id: string;
  subscribed: boolean;
  data: Record<string, unknown>;
  /** The data's digest as stored (md5 of its text): what the store compares, not the data, which JSON may round. */
  version: string;
}

export interface SendContext {
  /** By `projectId/id`. */
  templates: Map<string, TemplateRow>;
  /** `projectId/email` of the senders (the requests' and the templates') at a verified domain of their project. */
  verifiedSenders: Set<string>;
  /** By project: its transactional tracking defaults. */
  tracking: Map<string, { opens: boolean; clicks: boolean }>;
  /** By `projectId/email`: the recipients that are contacts already. */
  contacts: Map<string, ContactAsRead>;
}

// One jsonb parameter: jsonb_to_recordset's row estimate does not depend on its value, so after a few runs the
// statement keeps one generic plan instead of planning each batch anew (arrays' lengths would tell the planner each
// time). The LATERAL ... LIMIT 1 probes read each row through its key whatever the estimate (see storeSql).
const CONTEXT_SQL = `WITH input AS (SELECT ?::jsonb AS j),
  picked AS (
    SELECT t.* FROM input, jsonb_to_recordset(j->'templates') AS w(project_id uuid, id uuid), LATERAL (
      SELECT t.project_id, t.id, t.subject, t.body, t.from_email, t.from_name, t.reply_to, t.type, t.body_type
      FROM templates t WHERE t.project_id = w.project_id AND t.id = w.id LIMIT 1) t
  ),
  senders AS (
    SELECT DISTINCT s.project_id, s.email FROM (
      SELECT w.project_id, w.email FROM input, jsonb_to_recordset(j->'senders') AS w(project_id uuid, email text)
      UNION ALL SELECT project_id, from_email FROM picked WHERE from_email IS NOT NULL) s
  )
  SELECT
    (SELECT coalesce(jsonb_agg(to_jsonb(p)), '[]') FROM picked p) AS templates,
    (SELECT coalesce(array_agg(s.project_id || '/' || s.email), '{}') FROM senders s
     WHERE ${verifiedSenderSql('s.project_id', 's.email')}
    ) AS senders,
    (SELECT coalesce(jsonb_agg(jsonb_build_array(p.id, p.track_send_opens, p.track_send_clicks)), '[]')
     FROM input, jsonb_array_elements_text(j->'projects') AS w(id),
       LATERAL (SELECT * FROM projects p WHERE p.id = w.id::uuid LIMIT 1) p
    ) AS tracking,
    (SELECT coalesce(jsonb_agg(jsonb_build_array(c.project_id, c.email, c.id, c.subscribed, c.data, md5(c.data::text))), '[]')
     FROM input, jsonb_to_recordset(j->'contacts') AS w(project_id uuid, email text),
       LATERAL (SELECT * FROM contacts c WHERE c.project_id = w.project_id AND c.email = w.email LIMIT 1) c
    ) AS contacts`;

/** Named, and run without knex's scan of its text at each batch (db/prepared.ts). */
const runContext = preparedStatement('herald_send_context', CONTEXT_SQL);

/** Everything a batch of sends is checked and rendered against, in one statement: templates, senders, tracking, contacts. */
export async function sendContext(db: Knex | Knex.Transaction, wanted: SendContextWanted): Promise<SendContext> {
  const input = {
    templates: wanted.templates.map((t) => ({ project_id: t.projectId, id: t.id })),
    senders: wanted.senders.map((t) => ({ project_id: t.projectId, email: t.email })),
    projects: wanted.projectIds,
    contacts: wanted.contacts.map((t) => ({ project_id: t.projectId, email: t.email })),
  };
  const { rows: [row] } = await runContext(db, [JSON.stringify(input)]);
  return {
    templates: new Map((row.templates as TemplateRow[]).map((t) => [`${t.project_id}/${t.id}`, t])),
    verifiedSenders: new Set(row.senders as string[]),
    tracking: new Map((row.tracking as [string, boolean, boolean][]).map(([id, opens, clicks]) => [id, { opens, clicks }])),
    contacts: new Map((row.contacts as [string, string, string, boolean, Record<string, unknown>, string][])
      .map(([projectId, email, id, subscribed, data, version]) => [`${projectId}/${email}`, { id, subscribed, data, version }])),
  };
}

/** A recipient's contact as the send expects to leave it: created (`was` null) or, if it exists, as the check read it. */
export interface ContactWrite {
  projectId: string;
  email: string;
  id: string;
  /** The subscription the check read; null for an address that was no contact then (it is created). */
  was: boolean | null;
  /** The digest of the data the check read (ContactAsRead.version); null for a new contact. */
  version: string | null;
  /** The subscription after the send: a new contact's, or an existing one's changed (a contact.(un)subscribed event). */
  subscribed: boolean;
}

export interface EmailWrite {
  id: string;
  event_id: string;
  project_id: string;
  contact_id: string;
  template_id: string | null;
  from_email: string;
  from_name: string | null;
  reply_to: string | null;
  to_email: string;
  to_name: string | null;
  subject: string;
  html: string;
  headers: Record<string, string>;
  attachment_ids: string[];
  raw_message_id: string | null;
  track_opens: boolean;
  track_clicks: boolean;
  /** The recipient's keyed hash (audience/suppressions.ts addressHasher): an erased address is suppressed by it. */
  to_hash: string;
}

export interface FileWrite {
  id: string;
  projectId: string;
  filename: string;
  contentType: string;
  contentId: string | null;
  disposition: string;
  content: Buffer;
}

export interface SendWrites {
  contacts: ContactWrite[];
  emails: EmailWrite[];
  attachments: FileWrite[];
  raws: { id: string; projectId: string; content: Buffer }[];
}

const EMAIL_COLUMNS = `id uuid, event_id uuid, project_id uuid, contact_id uuid, template_id uuid, from_email text, from_name text,
  reply_to text, to_email text, to_name text, subject text, html text, headers jsonb, attachment_ids uuid[], raw_message_id uuid,
  track_opens boolean, track_clicks boolean, to_hash text`;

/*
 * The store, in one statement (autocommit: atomic without BEGIN and COMMIT). The contacts are written only if they are
 * still as the check read them: each new one inserted (not taken meanwhile), each existing one unchanged in this
 * statement's snapshot, each subscription change applied to the row it was read from. Otherwise herald_retry_unless
 * undoes the whole statement (SQLSTATE 40001). A contact deleted after the snapshot fails the emails' foreign key
 * (23503), which undoes it too. Suppressed recipients' emails are stored SUPPRESSED with an email.suppressed event.
 */
const storeSql = (flips: boolean) => `WITH want AS (
    SELECT * FROM jsonb_to_recordset(?::jsonb) AS w(project_id uuid, email text, id uuid, was boolean, version text, subscribed boolean)
  ),
  -- Each LATERAL ... LIMIT 1 below is one index probe per row of the batch: a join would let the planner, which
  -- expects 100 rows of jsonb_to_recordset, hash the whole table (and digest every contact's data) instead.
  unchanged AS (
    SELECT count(*) AS n FROM want w, LATERAL (
      SELECT 1 FROM contacts c WHERE c.project_id = w.project_id AND c.email = w.email
        AND c.id = w.id AND c.subscribed = w.was AND md5(c.data::text) = w.version LIMIT 1) c
  ),
  created AS (
    INSERT INTO contacts (id, project_id, email, subscribed, data)
    SELECT w.id, w.project_id, w.email, w.subscribed, '{}'::jsonb FROM want w WHERE w.was IS NULL ORDER BY w.project_id, w.email
    ON CONFLICT (project_id, email) DO NOTHING
    RETURNING 1
  ),
  flipped AS (${flips ? `
    UPDATE contacts c SET subscribed = w.subscribed, updated_at = now()
    FROM want w
    WHERE w.subscribed <> w.was AND c.project_id = w.project_id AND c.id = w.id AND c.subscribed = w.was
    RETURNING c.project_id, c.id, c.subscribed`
    // Without an UPDATE of contacts in the statement, its statement trigger (webhook_outbox_contacts_updated) does not run.
    : 'SELECT NULL::uuid AS project_id, NULL::uuid AS id, NULL::boolean AS subscribed WHERE false'}
  ),
  -- Written whether or not the final SELECT reads them, as every data-modifying WITH is.
  raws AS (
    INSERT INTO raw_messages (id, project_id, content, size)
    SELECT r.id, r.project_id, r.content, length(r.content) FROM unnest(?::uuid[], ?::uuid[], ?::bytea[]) AS r(id, project_id, content)
  ),
  files AS (
    INSERT INTO attachments (id, project_id, filename, content_type, content_id, disposition, content, size)
    SELECT a.id, a.project_id, a.filename, a.content_type, a.content_id, a.disposition, a.content, length(a.content)
    FROM unnest(?::uuid[], ?::uuid[], ?::text[], ?::text[], ?::text[], ?::text[], ?::bytea[])
      AS a(id, project_id, filename, content_type, content_id, disposition, content)
  ),
  rows AS (
    SELECT e.*, s.reason FROM jsonb_to_recordset(?::jsonb) AS e(${EMAIL_COLUMNS})
    -- The address, or its keyed hash (an erased contact's: contacts/erase.ts), in one probe of the key.
    LEFT JOIN LATERAL (SELECT s.reason FROM suppressions s WHERE s.project_id = e.project_id AND s.email IN (e.to_email, e.to_hash) LIMIT 1) s ON true
  ),
  stored AS (
    INSERT INTO emails (id, event_id, status, error, project_id, contact_id, template_id, from_email, from_name, reply_to,
                        to_email, to_name, subject, html, headers, attachment_ids, raw_message_id, track_opens, track_clicks, partition_at)
    SELECT r.id, r.event_id, CASE WHEN r.reason IS NULL THEN 'QUEUED' ELSE 'SUPPRESSED' END,
           'the address is on the suppression list (' || r.reason || ')',
           r.project_id, r.contact_id, r.template_id, r.from_email, r.from_name, r.reply_to,
           r.to_email, r.to_name, r.subject, r.html, r.headers, r.attachment_ids, r.raw_message_id, r.track_opens, r.track_clicks,
           -- The partition of the email's own month: its id's time, so that a lookup by id finds it in one partition.
           herald_uuid_time(r.id)
    FROM rows r
  ),
  new_events AS (
    SELECT r.event_id AS id, r.project_id, 'email.suppressed' AS name, r.contact_id, r.id AS email_id, jsonb_build_object('reason', r.reason) AS data
    FROM rows r WHERE r.reason IS NOT NULL
    UNION ALL
    SELECT NULL, f.project_id, CASE WHEN f.subscribed THEN 'contact.subscribed' ELSE 'contact.unsubscribed' END, f.id, NULL,
           jsonb_build_object('source', 'api')
    FROM flipped f
  ),
  -- Its only events that name an email are email.suppressed (a subscription's change names its contact only), and
  -- its emails are never a campaign's: without the campaign results' look-ups of earlier events.
  ${eventEffects('(SELECT project_id, id, to_email, subject, NULL::uuid AS campaign_id, NULL::smallint AS variant, false AS is_test FROM rows)', { emailEvents: ['email.suppressed'] })}
  SELECT herald_retry_unless(
           (SELECT n FROM unchanged) = (SELECT count(*) FROM want WHERE was IS NOT NULL)
             AND (SELECT count(*) FROM created) = (SELECT count(*) FROM want WHERE was IS NULL)
             AND (SELECT count(*) FROM flipped) = (SELECT count(*) FROM want WHERE subscribed <> was),
           'a recipient''s contact changed while the send was stored') AS fresh,
         (SELECT coalesce(jsonb_agg(jsonb_build_array(r.id, r.reason)), '[]') FROM rows r WHERE r.reason IS NOT NULL) AS suppressed`;

/** Two texts: a batch that changes no subscription (nearly all) has no UPDATE of contacts. */
const STORE_SQL = storeSql(false);
const STORE_WITH_FLIPS = storeSql(true);
/** Named, and run without knex's scan of their long texts at each batch (db/prepared.ts). */
const runStore = preparedStatement('herald_store_sends', STORE_SQL);
const runStoreWithFlips = preparedStatement('herald_store_sends_flips', STORE_WITH_FLIPS);

/**
 * Stores a batch of sends in one statement: raw messages, attachments, contacts, emails, and the events of suppressed
 * recipients and changed subscriptions. Answers the suppressed emails' reasons, by email id. Throws a retryable error
 * (isStaleSend) when a contact is no longer as the send read it; nothing is then written.
 */
export async function storeSendRows(db: Knex | Knex.Transaction, w: SendWrites): Promise<Map<string, string>> {
  const flips = w.contacts.some((c) => c.was !== null && c.was !== c.subscribed);
  const store = async (q: Knex | Knex.Transaction) => (await (flips ? runStoreWithFlips : runStore)(q, [
    JSON.stringify(w.contacts.map((c) => ({ project_id: c.projectId, email: c.email, id: c.id, was: c.was, version: c.version, subscribed: c.subscribed }))),
    w.raws.map((r) => r.id), w.raws.map((r) => r.projectId), w.raws.map((r) => r.content),
    w.attachments.map((a) => a.id), w.attachments.map((a) => a.projectId), w.attachments.map((a) => a.filename),
    w.attachments.map((a) => a.contentType), w.attachments.map((a) => a.contentId), w.attachments.map((a) => a.disposition),
    w.attachments.map((a) => a.content),
    JSON.stringify(w.emails),
  ])).rows[0];
  // In the caller's transaction, under a savepoint: a store undone for a changed contact leaves it usable for the retry.
  const row = isTransaction(db) ? await db.transaction(store) : await store(db);
  return new Map(row.suppressed as [string, string][]);
}

/** A store undone because a contact changed under it (40001), or was deleted under it (23503): read again, retry. */
export function isStaleSend(err: unknown): boolean {
  const code = sqlState(err);
  return code === '40001' || code === '23503';
}
