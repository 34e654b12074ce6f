import type { Knex } from 'knex';
import { fileFrom, mergeStaged, probeStaged, stageRows, type StagedRow } from '../../db/queries/contactImports';
import { planColumns, rowToContact, type ColumnMapping } from './columns';
import { readRecords, type ImportFormat } from './format';
import type { ImportBatchResult, ImportRef, ImportStatus } from '../../workflows/types';

/** The file is stored in pieces of this size (contact_import_chunks). */
export const CHUNK_BYTES = 1024 * 1024;
/** Rows per batch: one COPY and one merge statement each, and a checkpoint. */
export const IMPORT_BATCH_ROWS = 5000;

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
}

/**
 * Ends an import: its status, and its file and list of seen addresses deleted (the refused rows stay for the errors
 * download). Only from QUEUED or RUNNING; answers the status it has afterwards.
 */
export async function endImport(trx: Knex.Transaction, ref: ImportRef, status: 'COMPLETED' | 'CANCELLED' | 'FAILED', error?: string): Promise<ImportStatus | undefined> {
  const [row] = await trx('contact_imports').where({ project_id: ref.projectId, id: ref.importId }).whereIn('status', ['QUEUED', 'RUNNING'])
    .update({ status, error: error ?? null, finished_at: trx.fn.now(), updated_at: trx.fn.now() }).returning('status');
  if (row) {
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
      return knex.transaction(async (trx) => {
        const imp = await trx('contact_imports').where({ project_id: ref.projectId, id: ref.importId }).forUpdate().first() as ImportRow | undefined;
        if (!imp || imp.status !== 'RUNNING') return { status: imp?.status ?? 'CANCELLED', done: true, rows: 0 };
        const plan = planColumns(imp.columns, imp.format, imp.header);
        const offset = Number(imp.byte_offset);
        const reader = readRecords(fileFrom(knex, imp.id, offset, CHUNK_BYTES), imp.format, imp.delimiter ?? ',', imp.line + 1);
        const good: StagedRow[] = [];
        const refused: { line: number; reason: string; raw: string }[] = [];
        const firstLine = new Map<string, number>();
        const raws = new Map<number, string>();
        let bytes = 0;
        let line = imp.line;
        let read = 0;
        let done = false;
        while (good.length + refused.length < IMPORT_BATCH_ROWS) {
          const record = await reader.next();
          if (!record) {
            done = true;
            break;
          }
          bytes += record.bytes;
          line = record.endLine;
          if (record.empty) continue;
          read++;
          const contact = record.error ? { error: record.error } : rowToContact(record, plan);
          if ('error' in contact) {
            refused.push({ line: record.line, reason: contact.error, raw: record.raw });
            continue;
          }
          const first = firstLine.get(contact.email);
          if (first !== undefined) {
            refused.push({ line: record.line, reason: `duplicate email: the file has it on line ${first} already`, raw: record.raw });
            continue;
          }
          firstLine.set(contact.email, record.line);
          raws.set(record.line, record.raw);
          good.push({ line: record.line, ...contact });
        }
        const options = {
          projectId: ref.projectId, importId: imp.id, mode: imp.mode, dataMode: imp.data_mode,
          defaultSubscribed: imp.default_subscribed, resubscribe: imp.resubscribe, segmentId: imp.segment_id,
        };
        good.sort((a, b) => (a.email < b.email ? -1 : a.email > b.email ? 1 : 0));
        await stageRows(trx, good);
        await probeStaged(trx, imp.id);
        let created = 0;
        let updated = 0;
        let skipped = 0;
        for (let round = 0; ; round++) {
          const merged = await mergeStaged(trx, options);
          created += merged.created;
          updated += merged.updated;
          skipped += merged.skipped;
          for (const d of merged.duplicates) {
            refused.push({ line: d.line, reason: `duplicate email: the file has it on line ${d.first} already`, raw: raws.get(d.line) ?? '' });
          }
          if (merged.missed.length === 0) break;
          if (round === 3) throw new Error('contacts kept being created concurrently while the import merged them');
          // Only the rows a concurrent insert got ahead of stay staged: merged again with a new snapshot.
          await trx.raw('DELETE FROM import_staging WHERE NOT (email = ANY(?::text[]))', [merged.missed]);
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
          byte_offset: offset + bytes, line,
          rows_read: knex.raw('rows_read + ?', [read]),
          created: knex.raw('created + ?', [created]),
          updated: knex.raw('updated + ?', [updated]),
          skipped: knex.raw('skipped + ?', [skipped]),
          failed: knex.raw('failed + ?', [refused.length]),
          updated_at: knex.fn.now(),
        });
        return { status: 'RUNNING' as const, done, rows: read };
      });
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
