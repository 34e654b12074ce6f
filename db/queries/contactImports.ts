import type { Knex } from 'knex';
import { from as copyFrom } from 'pg-copy-streams';
import { eventEffects } from './events';

/**
 * The statements of a contact import's batch (contacts/imports/batches.ts): the batch's rows COPYed into a staging
 * table of the transaction, then merged into the contacts by ONE statement, which also records each contact's
 * subscription change as an event with its effects (EVENT_EFFECTS: automations, webhooks, totals), adds the contacts
 * to the import's segment and notes their addresses as seen by the import. contact.created and contact.updated
 * webhooks come from the contacts table's statement triggers (migration 20261124000003), one per contact that was
 * created or really changed, in the same statement.
 */

/** A row of a batch as staged: its line (for a duplicate's error), and the contact it stands for. */
export interface StagedRow {
  line: number;
  email: string;
  subscribed: boolean | null;
  data: Record<string, unknown>;
}

export interface MergeOptions {
  projectId: string;
  importId: string;
  mode: 'create' | 'update' | 'upsert';
  dataMode: 'merge' | 'replace';
  defaultSubscribed: boolean;
  resubscribe: boolean;
  segmentId: string | null;
}

export interface MergeResult {
  created: number;
  updated: number;
  /** Rows that changed nothing: an existing contact in create mode, an unknown one in update mode, the same values. */
  skipped: number;
  /** Rows whose address an earlier batch of the import took: line, and the line that took it. */
  duplicates: { line: number; first: number }[];
  /** Upsert: rows inserted by a concurrent transaction after this statement's snapshot (merged again by the caller). */
  missed: string[];
}

/**
 * A value in COPY's text format: backslash, tab, newline and carriage return escaped. Text, not CSV: a row's data is
 * JSON, full of quotes that CSV would double (measured: a batch's COPY text built 6 times faster).
 */
const COPY_SPECIAL = /[\\\t\n\r]/;
const COPY_SPECIALS = /[\\\t\n\r]/g;
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };
const copyText = (v: string) => (COPY_SPECIAL.test(v) ? v.replace(COPY_SPECIALS, (c) => COPY_ESCAPES[c]!) : v);

/** The rows as the COPY text `stageRows` takes (built apart from the transaction: see contacts/imports/batches.ts). */
export function copyRows(rows: StagedRow[]): string {
  let text = '';
  for (const r of rows) text += `${r.line}\t${copyText(r.email)}\t${r.subscribed === null ? '\\N' : r.subscribed}\t${copyText(JSON.stringify(r.data))}\n`;
  return text;
}

/** Stages rows (`copyRows`' text) in `import_staging`, a temporary table dropped at the transaction's end, by COPY, and analyses them. */
export async function stageRows(trx: Knex.Transaction, copy: string): Promise<void> {
  await trx.raw('CREATE TEMPORARY TABLE import_staging (line integer NOT NULL, email text NOT NULL, subscribed boolean, data jsonb NOT NULL) ON COMMIT DROP');
  if (copy.length === 0) return;
  // The transaction's own connection (knex hands it out without a second checkout).
  const connection = await trx.client.acquireConnection() as { query(stream: unknown): NodeJS.WritableStream };
  await new Promise<void>((resolve, reject) => {
    const stream = connection.query(copyFrom('COPY import_staging (line, email, subscribed, data) FROM STDIN'));
    stream.on('error', reject);
    stream.on('finish', resolve);
    stream.end(copy);
  });
  // Estimates for the merge: a table never analysed has no distinct counts, and the planner, taking thousands of rows
  // joined for millions, chose plans that read every contact of the project. The address is what the merge joins on;
  // the other columns' statistics (the data's above all: jsonb values compared and sorted) cost a third of a batch's
  // staging and changed no plan.
  await trx.raw('ANALYZE import_staging (email)');
}

/**
 * Gathers fresh statistics on contacts after a batch has grown a project's share of the table, so that the next batch's
 * merge plans its per-row lookups on the unique (project_id, email) index. Statistics gathered before the project had
 * contacts expect about one for it, every index that starts with project_id then costs the same, and the planner may
 * take one that filters the project's every contact by address for each row: a batch of 20,000 into a project of
 * 20,000 took two minutes in a test run whose autovacuum had not come round (a young database, or one whose other
 * tables keep autovacuum busy, meets the same). Outside the batch's transaction: ANALYZE holds a lock that another
 * import's ANALYZE waits for, which inside two batches that lock the same contacts could deadlock. Waits at most a
 * second for the lock (a VACUUM of contacts holds it): answers false then, and autovacuum is at work on the table.
 */
export async function refreshContactStatistics(knex: Knex): Promise<boolean> {
  try {
    await knex.transaction(async (trx) => {
      await trx.raw("SET LOCAL lock_timeout = '1s'");
      await trx.raw('ANALYZE contacts');
    });
    return true;
  } catch (err) {
    if ((err as { code?: string }).code === '55P03') return false; // lock_not_available
    throw err;
  }
}

/**
 * Merges the staged rows into the project's contacts, in one statement (see the module's comment). An existing
 * contact's subscription only goes from subscribed to unsubscribed, unless `resubscribe`; a new contact whose address is
 * suppressed starts unsubscribed, unless `resubscribe`. Rows are taken in address order, so that two imports of the
 * same addresses lock them in the same order.
 */
export async function mergeStaged(trx: Knex.Transaction, o: MergeOptions): Promise<MergeResult> {
  const { rows } = await trx.raw(mergeStatement(o), mergeBindings(o));
  const r = rows[0] as { created: number; updated: number; fresh: number; duplicates: { line: number; first: number }[]; missed: string[] };
  return { created: r.created, updated: r.updated, skipped: r.fresh - r.created - r.updated - r.missed.length, duplicates: r.duplicates, missed: r.missed };
}

/** mergeStaged's named bindings. */
export function mergeBindings(o: MergeOptions): Record<string, string | boolean | null> {
  return { project: o.projectId, import: o.importId, def: o.defaultSubscribed, segment: o.segmentId };
}

/** mergeStaged's statement (exported for the test of its plan), with mergeBindings' names. */
export function mergeStatement(o: MergeOptions): string {
  const newSubscribed = o.resubscribe ? 'coalesce(f.subscribed, :def)' : 'coalesce(f.subscribed, :def) AND NOT f.suppressed';
  // An existing contact (c) and its row's values (o.in_…).
  const keptSubscribed = o.resubscribe ? 'coalesce(o.in_subscribed, c.subscribed)' : 'c.subscribed AND coalesce(o.in_subscribed, true)';
  const newData = o.dataMode === 'merge' ? 'c.data || o.in_data' : 'o.in_data';
  const inserts = o.mode !== 'update';
  const updates = o.mode !== 'create';
  const sql = `
    WITH
    -- The staged addresses this import had not taken yet, noted as taken now: the seen table's key decides, by an insert
    -- that skips the addresses an earlier batch took (no probe of the table before, no statistics to gather: the plan
    -- does not depend on how many rows are fresh or how many the import has seen). An address of the upsert's missed
    -- rows (below) is noted too, and forgotten again by the caller before it merges them again.
    seen AS (
      INSERT INTO contact_import_seen (import_id, email, line)
      SELECT :import, s.email, s.line FROM import_staging s
      ON CONFLICT (import_id, email) DO NOTHING
      RETURNING email),
    fresh AS (
      SELECT s.line, s.email, s.subscribed, s.data,
             EXISTS (SELECT 1 FROM suppressions x WHERE x.project_id = :project AND x.email = s.email) AS suppressed
      FROM import_staging s JOIN seen ON seen.email = s.email),
    -- A duplicate of an earlier batch's row, with that row's line: one lookup by the seen table's key per duplicate
    -- (a scalar subquery, never a join reading every address the import has seen), and duplicates are few.
    dups AS (
      SELECT s.line, (SELECT o.line FROM contact_import_seen o WHERE o.import_id = :import AND o.email = s.email) AS first
      FROM import_staging s WHERE NOT EXISTS (SELECT 1 FROM seen WHERE seen.email = s.email)),
    -- Each row probes the project's contacts by the unique index (LATERAL … LIMIT 1: a lookup per row, which the planner
    -- cannot turn into a hash join reading every contact of the project, as it did with stale statistics on a table that
    -- grows by the batch), in address order (the sorted subquery drives the lookups), so that two imports of the same
    -- addresses lock them in the same order. The project is compared as a value the planner does not look up in the
    -- statistics (an InitPlan): statistics gathered before the project had contacts expect about one for it, every index
    -- that starts with project_id then costs the same as the unique one (less: one condition to check, not two), and
    -- the planner took contacts_project_subscribed_id_idx, filtering the project's every contact by address for each
    -- row (two minutes for a batch of 20,000 into a project of 20,000, in a test run whose autovacuum had not come
    -- round). As an unknown value it gets the table's average per project, and the address decides for the unique
    -- index. The statistics are refreshed besides as an import grows the project (refreshContactStatistics).
    old AS (
      SELECT c.id, c.email, c.subscribed, c.data, f.subscribed AS in_subscribed, f.data AS in_data
      FROM (SELECT email, subscribed, data FROM fresh ORDER BY email) f
      JOIN LATERAL (SELECT c.id, c.email, c.subscribed, c.data FROM contacts c WHERE c.project_id = (SELECT :project::uuid) AND c.email = f.email
                    LIMIT 1 FOR UPDATE) c ON true),
    ins AS (
      ${inserts ? `INSERT INTO contacts (id, project_id, email, subscribed, data)
      SELECT herald_uuidv7(), :project, f.email, ${newSubscribed}, f.data
      FROM fresh f WHERE NOT EXISTS (SELECT 1 FROM old WHERE old.email = f.email)
      ORDER BY f.email
      ON CONFLICT (project_id, email) DO NOTHING
      RETURNING id, email` : 'SELECT NULL::uuid AS id, NULL::text AS email WHERE false'}),
    upd AS (
      ${updates ? `UPDATE contacts c SET
        subscribed = ${keptSubscribed},
        data = ${newData},
        updated_at = CASE WHEN (${keptSubscribed}, ${newData}) IS DISTINCT FROM (c.subscribed, c.data) THEN now() ELSE c.updated_at END
      FROM old o
      WHERE c.project_id = :project AND c.id = o.id
      RETURNING c.id, c.email, c.subscribed, o.subscribed AS was, (c.subscribed, c.data) IS DISTINCT FROM (o.subscribed, o.data) AS changed`
    : 'SELECT NULL::uuid AS id, NULL::text AS email, NULL::boolean AS subscribed, NULL::boolean AS was, false AS changed WHERE false'}),
    -- Upsert: an address neither found by this statement's snapshot nor inserted was inserted meanwhile by another
    -- transaction; the caller merges it again with a new snapshot (as db/queries/contacts.ts upsertContacts does).
    -- NOT IN, not NOT EXISTS: the planner estimates ins at fresh − old rows, 1 when it expects every address to be
    -- known, and with NOT EXISTS then chose a nested loop that scanned ins once per row (20,000 × 10,000 comparisons,
    -- two minutes, for a new project's first batch). NOT IN is always a hashed subplan here; no address is NULL.
    missed AS (
      SELECT f.email FROM fresh f
      WHERE ${o.mode === 'upsert' ? 'true' : 'false'} AND f.email NOT IN (SELECT email FROM old)
        AND f.email NOT IN (SELECT email FROM ins)),
    members AS (
      INSERT INTO segment_members (project_id, segment_id, contact_id)
      SELECT :project, sg.id, w.id FROM (SELECT id FROM ins UNION ALL SELECT id FROM upd) w
      JOIN segments sg ON sg.project_id = :project AND sg.id = :segment AND sg.type = 'STATIC'
      ORDER BY w.id
      FOR KEY SHARE OF sg
      ON CONFLICT DO NOTHING
      RETURNING 1),
    new_events AS (
      SELECT NULL::uuid AS id, :project::uuid AS project_id,
             CASE WHEN u.subscribed THEN 'contact.subscribed' ELSE 'contact.unsubscribed' END AS name,
             u.id AS contact_id, NULL::uuid AS email_id, jsonb_build_object('source', 'import', 'importId', :import::text) AS data
      FROM upd u WHERE u.was IS DISTINCT FROM u.subscribed
      ORDER BY u.id),
    ${eventEffects()}
    SELECT (SELECT count(*) FROM ins)::int AS created,
           (SELECT count(*) FROM upd WHERE changed)::int AS updated,
           (SELECT count(*) FROM fresh)::int AS fresh,
           (SELECT coalesce(json_agg(json_build_object('line', line, 'first', first)), '[]') FROM dups) AS duplicates,
           (SELECT coalesce(array_agg(email), '{}') FROM missed) AS missed,
           (SELECT count(*) FROM members)::int AS members,
           (SELECT count(*) FROM inserted)::int AS events`;
  return sql;
}

/** Forgets that the import took these addresses (the upsert's missed rows, before they are merged again). */
export async function forgetSeen(trx: Knex.Transaction, importId: string, emails: string[]): Promise<void> {
  await trx.raw('DELETE FROM contact_import_seen WHERE import_id = ? AND email = ANY(?::text[])', [importId, emails]);
}

/** The stored file from `offset` on, chunk by chunk (each read when the previous one has been consumed). */
export async function* fileFrom(knex: Knex, importId: string, offset: number, chunkBytes: number): AsyncGenerator<Buffer> {
  let seq = Math.floor(offset / chunkBytes);
  let skip = offset % chunkBytes;
  for (;;) {
    const row = await knex('contact_import_chunks').where({ import_id: importId, seq }).first('bytes');
    if (!row) return;
    const bytes = row.bytes as Buffer;
    if (skip < bytes.length) yield skip ? bytes.subarray(skip) : bytes;
    skip = 0;
    seq++;
  }
}
