import type { Knex } from 'knex';
import { Readable } from 'node:stream';
import { conflict, invalid, notFound, refused, tooLarge, unsupportedMedia } from '../../core/errors';
import { isUuid } from '../../core/values';
import { listPage, type Listed, type PageRequest } from '../../db/pages';
import { audited, type Actor } from '../../audit/log';
import type { Engine } from '../../engine/types';
import type { Logger } from '../../logging/logger';
import { workflowId } from '../../workflows/registry';
import type { ImportStatus } from '../../workflows/types';
import { CHUNK_BYTES, endImport } from './batches';
import { ColumnMapError, duplicateOf, planColumns, proposeColumns, rowToContact, type ColumnMapping, type ProposedColumn } from './columns';
import { BOM, detectDelimiter, MAX_ROW_BYTES, parseCsvRecord, readLines, RecordReader, type ImportFormat, type ImportRecord } from './format';

/**
 * Contact imports (issue 30, point 1): a CSV or JSON Lines file uploaded as a stream and stored in the database in
 * 1 MiB pieces as it arrives (never whole in memory), in the transaction that creates the import: a file refused on
 * the way (over the limit, not CSV or JSON Lines, a column map that does not fit its header) leaves nothing stored.
 * Then the engine's importContacts workflow merges it batch by batch (contacts/imports/batches.ts).
 */

/** The body as the API hands it over: a stream of bytes, its media type and its announced length, if any. */
export interface Upload {
  stream: AsyncIterable<Buffer> & { resume?(): unknown };
  contentType: string;
  length?: number;
}

export type ImportMode = 'create' | 'update' | 'upsert';

export interface ImportOptions {
  mode: ImportMode;
  dataMode: 'merge' | 'replace';
  columns: ColumnMapping[];
  /** A new contact's subscription when its row gives none. */
  defaultSubscribed: boolean;
  /** Unsubscribed (or suppressed) contacts may be subscribed by the file: needs the admin permission, audited. */
  resubscribe: boolean;
  segmentId?: string;
  fileName?: string;
}

export interface ContactImport {
  id: string;
  status: ImportStatus;
  fileName: string | null;
  format: ImportFormat;
  delimiter: string | null;
  fileBytes: number;
  bytesRead: number;
  mode: ImportMode;
  dataMode: 'merge' | 'replace';
  columns: ColumnMapping[];
  defaultSubscribed: boolean;
  resubscribe: boolean;
  segmentId: string | null;
  rows: { read: number; created: number; updated: number; skipped: number; failed: number };
  /** Rows read per second, from its start to its end (or now). */
  rowsPerSecond: number;
  error: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

const CSV_TYPES = ['text/csv', 'application/csv', 'text/plain'];
const JSONL_TYPES = ['application/x-ndjson', 'application/jsonl', 'application/x-jsonlines', 'application/jsonlines'];
export const IMPORT_MEDIA_TYPES = [...CSV_TYPES, ...JSONL_TYPES];

/** The file's format from its media type; anything else is a 415. */
export function formatOf(contentType: string): ImportFormat {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  if (CSV_TYPES.includes(type)) return 'csv';
  if (JSONL_TYPES.includes(type)) return 'jsonl';
  throw unsupportedMedia(`A contact import is a CSV or JSON Lines file, not "${type || 'no Content-Type'}"`,
    'Send the file with "Content-Type: text/csv" (comma or semicolon separated, UTF-8) or "application/x-ndjson" (one JSON object per line).');
}

const notText = (why: string) => invalid([{ field: 'file', code: 'file.format', message: `The file is not CSV or JSON Lines: ${why}` }],
  'Export the list as CSV (UTF-8, with a header row) or as JSON Lines.');

/** What the first line(s) of a file say of it: CSV header and delimiter, or for JSON Lines nothing but that it is text. */
interface FileHead {
  header: string[];
  delimiter: string | null;
  /** Where the rows begin: after the BOM and header line (CSV), after the BOM (JSON Lines). */
  offset: number;
  line: number;
}

/** Reads the file's head from its first bytes (up to MAX_ROW_BYTES and a line), or refuses a file that is not text. */
function headOf(first: Buffer, format: ImportFormat, complete: boolean): FileHead {
  const bom = first.subarray(0, 3).equals(BOM) ? 3 : 0;
  if (format === 'jsonl') return { header: [], delimiter: null, offset: bom, line: 0 };
  const nl = first.indexOf(10, bom);
  if (nl < 0 && !complete) throw notText(`its first line is longer than ${MAX_ROW_BYTES / 1024} KB`);
  const end = nl < 0 ? first.length : nl;
  const bytes = first.subarray(bom, end);
  if (bytes.includes(0)) throw notText('its first line has NUL bytes (a binary file?)');
  const text = bytes.toString('utf8').replace(/\r$/, '');
  if (text.includes('\uFFFD')) throw notText('its first line is not UTF-8 text');
  if (text.trim() === '') throw notText('it has no header row');
  const delimiter = detectDelimiter(text);
  const parsed = parseCsvRecord(text, delimiter);
  if (!('fields' in parsed)) throw notText(`its header row cannot be read (${'error' in parsed ? parsed.error : 'a quote is never closed'})`);
  const header = parsed.fields.map((f) => f.trim());
  return { header, delimiter, offset: nl < 0 ? first.length : nl + 1, line: 1 };
}

/** Checks the first JSON Lines row: a file whose first row is no JSON object is not JSON Lines. */
async function checkJsonl(first: Buffer, offset: number): Promise<void> {
  const reader = new RecordReader(readLines([first.subarray(offset)] as unknown as AsyncIterable<Buffer>), 'jsonl');
  for (let record = await reader.next(); record; record = await reader.next()) {
    if (record.empty) continue;
    if (!record.object) throw notText(`its first row is ${record.error ?? 'not a JSON object'}`);
    return;
  }
}

/** Reads at least `want` bytes (or all there is) from an iterator of chunks; answers them and the rest of the chunk read. */
async function readAtLeast(it: AsyncIterator<Buffer>, want: number): Promise<{ head: Buffer; ended: boolean }> {
  const parts: Buffer[] = [];
  let n = 0;
  for (;;) {
    if (n >= want) return { head: Buffer.concat(parts), ended: false };
    const next = await it.next();
    if (next.done) return { head: Buffer.concat(parts), ended: true };
    const chunk = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value);
    parts.push(chunk);
    n += chunk.length;
  }
}

/** The map proposed for a file from its first rows, and those rows as read (POST /contacts/imports/preview). */
export interface ImportPreview {
  format: ImportFormat;
  delimiter: string | null;
  columns: ProposedColumn[];
  /** The first rows (up to PREVIEW_ROWS): a CSV row's fields, a JSON Lines row's object. */
  rows: (string[] | Record<string, unknown>)[];
  /** The first rows' problems (line and reason), as the import would refuse them. */
  problems: { line: number; reason: string }[];
}

export const PREVIEW_ROWS = 20;
/** What the preview reads of the body at most: the rest of an upload is read and dropped. */
export const PREVIEW_BYTES = 256 * 1024;

export async function previewImport(upload: Upload): Promise<ImportPreview> {
  const format = formatOf(upload.contentType);
  const it = upload.stream[Symbol.asyncIterator]();
  const { head: first, ended } = await readAtLeast(it, PREVIEW_BYTES);
  // Whatever more was sent is not needed: drained, so the answer is not held up by an unread body.
  if (!ended) upload.stream.resume?.();
  if (first.length === 0) throw notText('it is empty');
  const head = headOf(first, format, true);
  if (format === 'jsonl') await checkJsonl(first, head.offset);
  // The head's bytes only; a row cut off at the end of them is not shown.
  const body = first.subarray(head.offset, ended ? first.length : first.lastIndexOf(10) + 1);
  const reader = new RecordReader(readLines([body] as unknown as AsyncIterable<Buffer>, head.line + 1), format, head.delimiter ?? ',');
  const read: ImportRecord[] = [];
  const problems: { line: number; reason: string }[] = [];
  const keys: string[] = [...head.header];
  for (let record = await reader.next(); record && read.length + problems.length < PREVIEW_ROWS; record = await reader.next()) {
    if (record.empty) continue;
    if (record.error) problems.push({ line: record.line, reason: record.error });
    else {
      read.push(record);
      for (const k of Object.keys(record.object ?? {})) if (!keys.includes(k)) keys.push(k);
    }
  }
  const rows = read.map((r) => r.fields ?? r.object!);
  const getters = rows.map((r) => (column: string) => (Array.isArray(r) ? r[head.header.indexOf(column)] : r[column]));
  const columns = proposeColumns(keys, getters);
  return { format, delimiter: head.delimiter, columns, rows, problems: [...problems, ...refusedUnder(columns, read, format, head.header)].sort((a, b) => a.line - b.line) };
}

/**
 * The rows the import would refuse under the proposed map, and why, as its batches decide it (a row's width, its
 * address, its values' types, an address the file has already): so that a person sees them before starting, not only
 * the rows that could not be read. None when no email column could be proposed: the map is then for a person to make.
 */
function refusedUnder(columns: ProposedColumn[], records: ImportRecord[], format: ImportFormat, header: string[]): { line: number; reason: string }[] {
  let plan;
  try {
    plan = planColumns(columns.map(({ samples: _samples, ...mapping }) => mapping), format, header);
  } catch (err) {
    if (err instanceof ColumnMapError) return [];
    throw err;
  }
  const firstLine = new Map<string, number>();
  const refusals: { line: number; reason: string }[] = [];
  for (const record of records) {
    const contact = rowToContact(record, plan);
    const reason = 'error' in contact ? contact.error : duplicateOf(firstLine, contact.email, record.line);
    if (reason) refusals.push({ line: record.line, reason });
  }
  return refusals;
}

/** A row of contact_imports as the API shows it. */
function importOf(r: Record<string, unknown>): ContactImport {
  const started = r.started_at as Date | null;
  const finished = r.finished_at as Date | null;
  const read = Number(r.rows_read);
  const seconds = started ? ((finished ?? new Date()).getTime() - started.getTime()) / 1000 : 0;
  return {
    id: r.id as string, status: r.status as ImportStatus, fileName: r.file_name as string | null, format: r.format as ImportFormat,
    delimiter: r.delimiter as string | null, fileBytes: Number(r.file_bytes), bytesRead: Number(r.byte_offset),
    mode: r.mode as ImportMode, dataMode: r.data_mode as 'merge' | 'replace', columns: r.columns as ColumnMapping[],
    defaultSubscribed: r.default_subscribed as boolean, resubscribe: r.resubscribe as boolean, segmentId: r.segment_id as string | null,
    rows: { read, created: Number(r.created), updated: Number(r.updated), skipped: Number(r.skipped), failed: Number(r.failed) },
    rowsPerSecond: seconds > 0 ? Math.round(read / seconds) : 0,
    error: r.error as string | null, createdAt: r.created_at as Date, startedAt: started, finishedAt: finished,
  };
}

export interface ImportDeps {
  knex: Knex;
  engine: Engine;
  log?: Logger;
  /** IMPORT_MAX_BYTES. */
  maxBytes: number;
}

/**
 * Stores the upload and starts its import. Refused before anything is stored: a media type that is not CSV or JSON
 * Lines (415), an announced length over the limit (413), a segment that is not a static segment of the project
 * (404/422), `resubscribe` without the admin permission (403); while it is read, in the same transaction as the
 * import's row: a file over the limit (413), one whose head is not CSV or JSON Lines text, or whose header lacks a
 * mapped column (422). Audited in that transaction.
 */
export async function createImport(deps: ImportDeps, projectId: string, actor: Actor, caller: { mayResubscribe: boolean }, options: ImportOptions, upload: Upload): Promise<ContactImport> {
  const { knex, maxBytes } = deps;
  const format = formatOf(upload.contentType);
  const over = () => tooLarge(`The file is over the limit of ${maxBytes} bytes (IMPORT_MAX_BYTES)`, 'Split the file, or ask the operator to raise IMPORT_MAX_BYTES.');
  if (upload.length !== undefined && upload.length > maxBytes) throw over();
  if (options.resubscribe && !caller.mayResubscribe) {
    throw refused('Only an admin may import with resubscribe: it subscribes contacts who unsubscribed', 'Leave resubscribe out, or ask an admin of the project.');
  }
  if (options.segmentId) {
    const segment = isUuid(options.segmentId) ? await knex('segments').where({ project_id: projectId, id: options.segmentId }).first('type') : undefined;
    if (!segment) throw notFound('Segment');
    if (segment.type !== 'STATIC') throw invalid([{ field: 'segmentId', code: 'segment.static', message: 'segmentId must name a static segment (a dynamic one is defined by its condition)' }]);
  }
  const it = upload.stream[Symbol.asyncIterator]();
  const { head: first, ended } = await readAtLeast(it, MAX_ROW_BYTES + 1);
  if (first.length === 0) throw notText('it is empty');
  const head = headOf(first, format, ended);
  if (format === 'jsonl') await checkJsonl(first, head.offset);
  try {
    planColumns(options.columns, format, head.header);
  } catch (err) {
    if (err instanceof ColumnMapError) throw invalid([{ field: 'columns', code: 'columns.map', message: `columns: ${err.message}` }]);
    throw err;
  }
  const id = await audited(knex, projectId, actor, (importId: string) => ({
    operation: 'createContactImport', resourceType: 'contact_import', resourceId: importId,
    details: { mode: options.mode, data: options.dataMode, resubscribe: options.resubscribe, ...(options.segmentId ? { segmentId: options.segmentId } : {}) },
  }), async (trx) => {
    const [row] = await trx('contact_imports').insert({
      project_id: projectId, file_name: options.fileName ?? null, format, delimiter: head.delimiter, header: JSON.stringify(head.header),
      file_bytes: 0, mode: options.mode, data_mode: options.dataMode, columns: JSON.stringify(options.columns),
      default_subscribed: options.defaultSubscribed, resubscribe: options.resubscribe, segment_id: options.segmentId ?? null,
      byte_offset: head.offset, line: head.line,
    }).returning('id');
    const importId = row.id as string;
    // The file in CHUNK_BYTES pieces, each written before the next is read (the upload waits for the database).
    let pending: Buffer[] = [first];
    let held = first.length;
    let total = first.length;
    let seq = 0;
    const flush = async (all: boolean) => {
      while (held >= CHUNK_BYTES || (all && held > 0)) {
        const buf = Buffer.concat(pending);
        const piece = buf.subarray(0, CHUNK_BYTES);
        await trx('contact_import_chunks').insert({ import_id: importId, seq: seq++, bytes: piece });
        const rest = buf.subarray(piece.length);
        pending = rest.length ? [rest] : [];
        held = rest.length;
      }
    };
    if (total > maxBytes) throw over();
    await flush(ended);
    if (!ended) {
      for (let next = await it.next(); !next.done; next = await it.next()) {
        const chunk = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value);
        total += chunk.length;
        if (total > maxBytes) throw over();
        pending.push(chunk);
        held += chunk.length;
        if (held >= CHUNK_BYTES) await flush(false);
      }
      await flush(true);
    }
    await trx('contact_imports').where('id', importId).update({ file_bytes: total });
    return importId;
  });
  await dispatchImport(deps, projectId, id);
  return getImport(knex, projectId, id);
}

/** Starts the import's workflow and notes that the engine took it; when it did not, the dispatcher retries. */
export async function dispatchImport(deps: Pick<ImportDeps, 'engine' | 'knex' | 'log'>, projectId: string, importId: string): Promise<boolean> {
  try {
    await deps.engine.start('importContacts', { projectId, importId }, { id: workflowId.importContacts({ importId }), summary: `Contact import ${importId} · project ${projectId}` });
  } catch (err) {
    deps.log?.warn({ err, importId }, 'could not start the contact import workflow; the dispatcher will retry');
    return false;
  }
  await deps.knex('contact_imports').where({ project_id: projectId, id: importId }).update({ dispatched_at: deps.knex.fn.now() });
  return true;
}

/** Starts the workflows of imports whose start the engine did not confirm within `graceMs` (campaigns/dispatch.ts runs it). */
export async function dispatchPendingImports(deps: Pick<ImportDeps, 'engine' | 'knex' | 'log'>, graceMs = 10_000): Promise<number> {
  const rows: { project_id: string; id: string }[] = await deps.knex('contact_imports')
    .where('status', 'QUEUED').whereNull('dispatched_at').where('created_at', '<', new Date(Date.now() - graceMs)).limit(100).select('project_id', 'id');
  let started = 0;
  for (const r of rows) if (await dispatchImport(deps, r.project_id, r.id)) started++;
  return started;
}

export async function getImport(db: Knex, projectId: string, id: string): Promise<ContactImport> {
  const row = isUuid(id) ? await db('contact_imports').where({ project_id: projectId, id }).first() : undefined;
  if (!row) throw notFound('Contact import');
  return importOf(row);
}

export async function listImports(db: Knex, projectId: string, page: PageRequest): Promise<Listed<ContactImport>> {
  return listPage(() => db('contact_imports').where('project_id', projectId), page, importOf);
}

/**
 * Cancels a QUEUED or RUNNING import: CANCELLED and its file deleted, in a transaction that waits for the batch in
 * flight (it holds the import's row); the workflow stops before its next batch. Rows merged so far stay. An import
 * already ended is a conflict (409).
 */
export async function cancelImport(deps: Pick<ImportDeps, 'engine' | 'knex' | 'log'>, projectId: string, id: string, actor: Actor): Promise<ContactImport> {
  const current = await getImport(deps.knex, projectId, id);
  const status = await audited(deps.knex, projectId, actor, { operation: 'cancelContactImport', resourceType: 'contact_import', resourceId: id },
    async (trx) => {
      await trx('contact_imports').where({ project_id: projectId, id }).forUpdate().first('id');
      return endImport(trx, { projectId, importId: id }, 'CANCELLED');
    });
  if (status !== 'CANCELLED' || current.status === 'CANCELLED') {
    throw conflict(`The import has ended (${status}): there is nothing to cancel`);
  }
  // The database says CANCELLED already; the engine's cancel only saves the workflow its next look.
  await deps.engine.cancel(workflowId.importContacts({ importId: id })).catch((err: unknown) => deps.log?.warn({ err, importId: id }, 'could not cancel the import workflow; it stops at its next batch'));
  return getImport(deps.knex, projectId, id);
}

const csvField = (v: string | number) => {
  const s = String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

/** The refused rows as CSV (line, reason, raw), read from the database a page at a time as the client takes them. */
export async function importErrorsCsv(db: Knex, projectId: string, id: string): Promise<Readable> {
  await getImport(db, projectId, id);
  async function* rows() {
    yield 'line,reason,raw\r\n';
    for (let after = 0; ;) {
      const page: { line: number; reason: string; raw: string }[] = await db('contact_import_errors').where('import_id', id).where('line', '>', after)
        .orderBy('line').limit(1000).select('line', 'reason', 'raw');
      if (page.length === 0) return;
      yield page.map((r) => `${r.line},${csvField(r.reason)},${csvField(r.raw)}\r\n`).join('');
      after = page[page.length - 1]!.line;
    }
  }
  return Readable.from(rows());
}

/** The functions above as one object over the app's database and engine, the API's way in. */
export function contactImportService(deps: ImportDeps) {
  return {
    preview: (upload: Upload) => previewImport(upload),
    create: (projectId: string, actor: Actor, caller: { mayResubscribe: boolean }, options: ImportOptions, upload: Upload) =>
      createImport(deps, projectId, actor, caller, options, upload),
    list: (projectId: string, page: PageRequest) => listImports(deps.knex, projectId, page),
    get: (projectId: string, id: string) => getImport(deps.knex, projectId, id),
    cancel: (projectId: string, id: string, actor: Actor) => cancelImport(deps, projectId, id, actor),
    errors: (projectId: string, id: string) => importErrorsCsv(deps.knex, projectId, id),
  };
}

export type ContactImports = ReturnType<typeof contactImportService>;
