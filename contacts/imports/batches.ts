import type { Knex } from 'knex';
import { recountSegments } from '../../audience/segmentQueries';
import { copyRows, fileFrom, forgetSeen, mergeStaged, refreshContactStatistics, stageRows, type StagedRow } from '../../db/queries/contactImports';
import { duplicateOf, duplicateReason, planColumns, rowToContact, type ColumnMapping, type ColumnPlan } from './columns';
import { readRecords, type ImportFormat, type RecordReader } from './format';
import type { ImportBatchResult, ImportRef, ImportStatus } from '../../workflows/types';

/** The file is stored in pieces of this size (contact_import_chunks). */
export const CHUNK_BYTES = 1024 * 1024;
/** Rows per batch: one COPY and one merge statement each, and a checkpoint. */
export const IMPORT_BATCH_ROWS = 20000;

/**
 * Rows read between two turns of the event loop while a batch is prepared: reading and checking rows is the import's
 * JavaScript, on the thread that also answers the API (measured: a whole batch at once held /v1/send for tens of ms).
 */
const ROWS_PER_TURN = 250;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Whether a batch that took the import's created contacts from `before` to `after` is followed by fresh statistics on
 * contacts (refreshContactStatistics): from 1,000 contacts on, each time the count doubles. The statistics then never
 * know fewer than half of what the import created: six ANALYZEs for 1,000,000 rows in batches of 20,000.
 */
export function statisticsDue(before: number, after: number): boolean {
  const step = (n: number) => (n < STATISTICS_FROM ? -1 : Math.floor(Math.log2(n / STATISTICS_FROM)));
  return step(after) > step(before);
}
const STATISTICS_FROM = 1000;

/** A refused row, as contact_import_errors keeps it. */
interface Refused {
  line: number;
  reason: string;
  raw: string;
}

/** A batch read from the file and checked, its good rows written as COPY text: what its transaction needs. */
interface PreparedBatch {
  /** Where it starts: the checkpoint it was read from. */
  offset: number;
  line: number;
  /** Its size in the file, its last line, its rows (empty lines apart), and whether the file ends with it. */
  bytes: number;
  endLine: number;
  read: number;
  done: boolean;
  /** The good rows, in address order (two imports lock the same addresses in the same order), as COPY text. */
  copy: string;
  refused: Refused[];
  /** The good rows' text by line, for a row the merge finds a duplicate of an earlier batch's. */
  raws: Map<number, string>;
  /** The file read on from the batch's end: the next batch's rows. */
  reader: RecordReader;
}

/**
 * Reads and checks the next IMPORT_BATCH_ROWS rows of `reader`, which stands at (offset, line). Refuses the bad rows
 * and the second of two rows with the same address; writes the good ones as COPY text. Touches no table but the file's.
 */
async function prepareBatch(reader: RecordReader, plan: ColumnPlan, offset: number, line: number): Promise<PreparedBatch> {
  const good: StagedRow[] = [];
  const refused: Refused[] = [];
  const firstLine = new Map<string, number>();
  const raws = new Map<number, string>();
  let bytes = 0;
  let endLine = line;
  let read = 0;
  let done = false;
  while (good.length + refused.length < IMPORT_BATCH_ROWS) {
    if (read > 0 && read % ROWS_PER_TURN === 0) await nextTurn();
    const record = await reader.next();
    if (!record) {
      done = true;
      break;
    }
    bytes += record.bytes;
    endLine = record.endLine;
    if (record.empty) continue;
    read++;
    const contact = record.error ? { error: record.error } : rowToContact(record, plan);
    if ('error' in contact) {
      refused.push({ line: record.line, reason: contact.error, raw: record.raw });
      continue;
    }
    const duplicate = duplicateOf(firstLine, contact.email, record.line);
    if (duplicate) {
      refused.push({ line: record.line, reason: duplicate, raw: record.raw });
      continue;
    }
    raws.set(record.line, record.raw);
    good.push({ line: record.line, ...contact });
  }
  good.sort((a, b) => (a.email < b.email ? -1 : a.email > b.email ? 1 : 0));
  await nextTurn();
  return { offset, line, bytes, endLine, read, done, copy: copyRows(good), refused, raws, reader };
}

/**
 * The next batch of each import this process runs, read while the current one is in PostgreSQL (its COPY, merge and
 * commit): the batch's JavaScript and the database's work overlap instead of taking turns. Only a cache: a batch takes
 * it only when it starts exactly where the read-ahead did (the committed checkpoint); anything else (a retry after a
 * crash or a failed batch, another worker, a cancel) reads the file from the checkpoint as before. The file and the
 * column map of an import never change, so the same checkpoint gives the same rows.
 */
const readAhead = new Map<string, { offset: number; line: number; batch: Promise<PreparedBatch | undefined> }>();
/** Imports read ahead at once at most (each holds a batch and a chunk of its file: about 2 MB). */
const READ_AHEAD_IMPORTS = 8;

function startReadAhead(importId: string, from: PreparedBatch, plan: ColumnPlan): void {
  readAhead.delete(importId);
  if (from.done) return;
  if (readAhead.size >= READ_AHEAD_IMPORTS) readAhead.delete(readAhead.keys().next().value!);
  const offset = from.offset + from.bytes;
  // A failed read-ahead is no batch: the batch reads the file itself and meets the error, if it lasts, there.
  const batch = prepareBatch(from.reader, plan, offset, from.endLine).catch(() => undefined);
  readAhead.set(importId, { offset, line: from.endLine, batch });
}

async function takeReadAhead(importId: string, offset: number, line: number): Promise<PreparedBatch | undefined> {
  const ahead = readAhead.get(importId);
  if (!ahead) return undefined;
  readAhead.delete(importId);
  if (ahead.offset !== offset || ahead.line !== line) return undefined;
  return ahead.batch;
}

/** An import's row as the batches need it. */
interface ImportRow {
  id: string;
  project_id: string;
  status: ImportStatus;
  format: ImportFormat;
  delimiter: string | null;
  header: string[];
  columns: ColumnMapping[];
  mode: 'create' | 'update' | 'upsert';
  data_mode: 'merge' | 'replace';
  default_subscribed: boolean;
  resubscribe: boolean;
  segment_id: string | null;
  byte_offset: string | number;
  line: number;
  /** Contacts the import has created so far (bigint: a string from pg). */
  created: string | number;
}

/**
 * Ends an import: its status, and its file and list of seen addresses deleted (the refused rows stay for the errors
 * download). Only from QUEUED or RUNNING; answers the status it has afterwards.
 */
export async function endImport(trx: Knex.Transaction, ref: ImportRef, status: 'COMPLETED' | 'CANCELLED' | 'FAILED', error?: string): Promise<ImportStatus | undefined> {
  const [row] = await trx('contact_imports').where({ project_id: ref.projectId, id: ref.importId }).whereIn('status', ['QUEUED', 'RUNNING'])
    .update({ status, error: error ?? null, finished_at: trx.fn.now(), updated_at: trx.fn.now() }).returning(['status', 'segment_id']);
  readAhead.delete(ref.importId);
  if (row) {
    // The static segment it added to has its kept member count counted again (audience/segments.ts withCounts).
    if (row.segment_id) await recountSegments(trx, ref.projectId, [{ id: row.segment_id, type: 'STATIC', condition: null }]);
    await trx('contact_import_chunks').where('import_id', ref.importId).delete();
    await trx('contact_import_seen').where('import_id', ref.importId).delete();
    return status;
  }
  const current = await trx('contact_imports').where({ project_id: ref.projectId, id: ref.importId }).first('status');
  return current?.status as ImportStatus | undefined;
}

/** The engine's side of an import (workflows/importContacts.ts): begin, batches, and its ends. */
export function importBatches({ knex }: { knex: Knex }) {
  return {
    /** QUEUED → RUNNING (or resume a RUNNING one); any other status is the answer and the workflow stops. */
    async beginImport(ref: ImportRef): Promise<ImportStatus> {
      const [row] = await knex('contact_imports').where({ project_id: ref.projectId, id: ref.importId }).whereIn('status', ['QUEUED', 'RUNNING'])
        .update({ status: 'RUNNING', started_at: knex.raw('coalesce(started_at, now())'), updated_at: knex.fn.now() }).returning('status');
      if (row) return 'RUNNING';
      const current = await knex('contact_imports').where({ project_id: ref.projectId, id: ref.importId }).first('status');
      return (current?.status ?? 'CANCELLED') as ImportStatus;
    },

    /**
     * The next batch from the checkpoint, in one transaction that holds the import's row: read up to
     * IMPORT_BATCH_ROWS rows of the file, refuse the bad ones, COPY the good ones into staging, merge them (one
     * statement), store the refused rows and advance the checkpoint. A crash before the commit leaves the checkpoint
     * where it was, and the retried batch reads the same rows again; after it, the retry starts past them. A cancel
     * waits for the row, and the next batch sees it.
     */
    async importBatch(ref: ImportRef): Promise<ImportBatchResult> {
      let grew = { before: 0, after: 0 };
      const result = await knex.transaction(async (trx) => {
        const imp = await trx('contact_imports').where({ project_id: ref.projectId, id: ref.importId }).forUpdate().first() as ImportRow | undefined;
        if (!imp || imp.status !== 'RUNNING') return { status: imp?.status ?? 'CANCELLED', done: true, rows: 0 };
        const plan = planColumns(imp.columns, imp.format, imp.header);
        const offset = Number(imp.byte_offset);
        const batch = await takeReadAhead(imp.id, offset, imp.line)
          ?? await prepareBatch(readRecords(fileFrom(knex, imp.id, offset, CHUNK_BYTES), imp.format, imp.delimiter ?? ',', imp.line + 1), plan, offset, imp.line);
        // The next batch is read while this one is merged; it is used only if this one commits (see readAhead).
        startReadAhead(imp.id, batch, plan);
        const { refused, raws } = batch;
        const options = {
          projectId: ref.projectId, importId: imp.id, mode: imp.mode, dataMode: imp.data_mode,
          defaultSubscribed: imp.default_subscribed, resubscribe: imp.resubscribe, segmentId: imp.segment_id,
        };
        await stageRows(trx, batch.copy);
        let created = 0;
        let updated = 0;
        let skipped = 0;
        for (let round = 0; ; round++) {
          const merged = await mergeStaged(trx, options);
          created += merged.created;
          updated += merged.updated;
          skipped += merged.skipped;
          for (const d of merged.duplicates) {
            refused.push({ line: d.line, reason: duplicateReason(d.first), raw: raws.get(d.line) ?? '' });
          }
          if (merged.missed.length === 0) break;
          if (round === 3) throw new Error('contacts kept being created concurrently while the import merged them');
          // Only the rows a concurrent insert got ahead of stay staged, their addresses no longer taken: merged again with a
          // new snapshot.
          await trx.raw('DELETE FROM import_staging WHERE NOT (email = ANY(?::text[]))', [merged.missed]);
          await forgetSeen(trx, imp.id, merged.missed);
        }
        if (refused.length > 0) {
          await trx.raw(
            `INSERT INTO contact_import_errors (import_id, line, reason, raw)
             SELECT ?::uuid, t.line, t.reason, t.raw FROM unnest(?::int[], ?::text[], ?::text[]) AS t(line, reason, raw)
             ON CONFLICT (import_id, line) DO NOTHING`,
            [imp.id, refused.map((r) => r.line), refused.map((r) => r.reason), refused.map((r) => r.raw.split('\u0000').join('\\0')) /* PostgreSQL text holds no NUL */],
          );
        }
        await trx('contact_imports').where('id', imp.id).update({
          byte_offset: offset + batch.bytes, line: batch.endLine,
          rows_read: knex.raw('rows_read + ?', [batch.read]),
          created: knex.raw('created + ?', [created]),
          updated: knex.raw('updated + ?', [updated]),
          skipped: knex.raw('skipped + ?', [skipped]),
          failed: knex.raw('failed + ?', [refused.length]),
          updated_at: knex.fn.now(),
        });
        grew = { before: Number(imp.created), after: Number(imp.created) + created };
        return { status: 'RUNNING' as const, done: batch.done, rows: batch.read };
      });
      // After the last batch too: the project's segments, campaigns and lists are planned on these statistics as well.
      if (statisticsDue(grew.before, grew.after)) await refreshContactStatistics(knex);
      return result;
    },

    /** RUNNING → COMPLETED; the file is deleted. */
    async finishImport(ref: ImportRef): Promise<ImportStatus> {
      return (await knex.transaction((trx) => endImport(trx, ref, 'COMPLETED'))) ?? 'CANCELLED';
    },

    /** Its workflow was cancelled in the engine (the Temporal UI): the same rows as POST /contacts/imports/:id/cancel. */
    async cancelImport(ref: ImportRef): Promise<ImportStatus> {
      return (await knex.transaction((trx) => endImport(trx, ref, 'CANCELLED'))) ?? 'CANCELLED';
    },

    /** Its workflow gave up (a batch failed for good): FAILED with the reason; what was merged stays. */
    async failImport(ref: ImportRef & { error: string }): Promise<ImportStatus> {
      return (await knex.transaction((trx) => endImport(trx, ref, 'FAILED', ref.error))) ?? 'CANCELLED';
    },
  };
}
