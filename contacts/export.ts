import type { Readable } from 'node:stream';
import type { Knex } from 'knex';
import { checkCondition, classify } from '../audience/check';
import { compileCondition, loadSegments, resolveSegments } from '../audience/compile';
import { conditionSchema, type AudienceCondition } from '../audience/condition';
import { segmentContacts, unusableCondition } from '../audience/segmentQueries';
import { audited, type Actor } from '../audit/log';
import { AudienceError, conflict, invalid, notFound, type FieldError } from '../core/errors';
import { copyOut } from '../db/copyOut';

/**
 * GET /contacts/export (issue 30, point 2): the project's contacts, or a segment's, or a filter's, as CSV or JSON Lines,
 * with the columns asked for. One `COPY (SELECT …) TO STDOUT` (db/copyOut.ts): PostgreSQL formats the rows (RFC 4180
 * quoting of commas, quotes and line breaks in CSV; JSON escaping in JSON Lines), Herald passes the bytes on at the
 * pace the client reads them, and never holds more than a few chunks. One statement is one snapshot: the file is the
 * contacts as they were when it began, in creation order.
 */

export const EXPORT_FORMATS = ['csv', 'jsonl'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** The columns of the record itself; `data.<key>` (up to five keys deep: data.address.city) names a key of `data`. */
export const RECORD_COLUMNS = ['id', 'email', 'subscribed', 'createdAt', 'updatedAt', 'data'] as const;
export const DEFAULT_EXPORT_COLUMNS: readonly string[] = RECORD_COLUMNS;
export const MAX_EXPORT_COLUMNS = 100;

/** Exports running at once in this process, each on a connection of its own: more wait for one to end (a 409). */
export const MAX_CONCURRENT_EXPORTS = 4;

export interface ExportRequest {
  format: ExportFormat;
  columns: readonly string[];
  segmentId?: string;
  filter?: AudienceCondition;
  /** CSV only: start the file with a UTF-8 byte order mark, by which Excel reads it as UTF-8 (else as the system's code page). */
  bom?: boolean;
}

/** U+FEFF in UTF-8. */
const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

export interface ContactExport {
  stream: Readable;
  filename: string;
  contentType: string;
}

/** The problems of a column list, each named `columns` (the query parameter): unknown names, duplicates, too many. */
export function checkColumns(columns: readonly string[]): FieldError[] {
  const errors: FieldError[] = [];
  if (columns.length === 0) errors.push({ field: 'columns', message: 'name at least one column', code: 'too_small' });
  if (columns.length > MAX_EXPORT_COLUMNS) errors.push({ field: 'columns', message: `at most ${MAX_EXPORT_COLUMNS} columns`, code: 'too_big' });
  const seen = new Set<string>();
  for (const c of columns) {
    if (seen.has(c)) errors.push({ field: 'columns', message: `column ${c} is named twice`, code: 'invalid' });
    seen.add(c);
    if (!(RECORD_COLUMNS as readonly string[]).includes(c) && classify(c)?.kind !== 'data') {
      errors.push({ field: 'columns', message: `unknown column "${c}": use ${RECORD_COLUMNS.join(', ')} or data.<key>`, code: 'invalid_field' });
    }
  }
  return errors;
}

const ISO = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * A column's SQL over `contacts AS c`: text for CSV (a data value as its text, an object or array as JSON); the JSON
 * value itself for JSON Lines (a number stays a number).
 */
function columnSql(knex: Knex, column: string, format: ExportFormat): string {
  switch (column) {
    case 'id': return 'c.id';
    case 'email': return 'c.email';
    case 'subscribed': return format === 'csv' ? 'c.subscribed::text' : 'c.subscribed';
    case 'createdAt': return ISO('c.created_at');
    case 'updatedAt': return ISO('c.updated_at');
    case 'data': return format === 'csv' ? 'c.data::text' : 'c.data';
    default: {
      const ref = classify(column);
      if (ref?.kind !== 'data') throw new Error(`unchecked column ${column}`);
      return knex.raw(`c.data ${format === 'csv' ? '#>>' : '#>'} ?::text[]`, [ref.path]).toQuery();
    }
  }
}

/** The SELECT of the export, its values inlined (COPY takes no parameters). Column names are checked: safe as quoted names. */
function exportQuery(knex: Knex, base: Knex.QueryBuilder, req: ExportRequest): string {
  if (req.format === 'csv') {
    base.select(req.columns.map((c) => knex.raw(`${columnSql(knex, c, 'csv')} AS "${c}"`)));
  } else {
    // json_build_object keeps the columns in the order asked; a name is a key as the client wrote it.
    const pairs = req.columns.map((c) => `'${c}', ${columnSql(knex, c, 'jsonl')}`).join(', ');
    base.select(knex.raw(`json_build_object(${pairs})::text AS line`));
  }
  return base.orderBy('c.id').toQuery();
}

/**
 * COPY's options. CSV: a header line, RFC 4180 quoting. JSON Lines: each row is one JSON text; CSV format with a
 * delimiter and a quote character that JSON text never holds raw (PostgreSQL escapes every control character in JSON as
 * \u00XX), so that no line is ever quoted and no backslash doubled, as the text format would.
 */
const COPY_OPTIONS: Record<ExportFormat, string> = {
  csv: 'FORMAT csv, HEADER true',
  jsonl: "FORMAT csv, DELIMITER E'\\x02', QUOTE E'\\x01'",
};

const CONTENT_TYPES: Record<ExportFormat, string> = { csv: 'text/csv; charset=utf-8', jsonl: 'application/x-ndjson; charset=utf-8' };

/** `contacts-2026-12-04T10-30-00Z.csv`: when, in a name every file system takes. */
export function exportFilename(format: ExportFormat, at = new Date()): string {
  return `contacts-${at.toISOString().slice(0, 19).replace(/:/g, '-')}Z.${format}`;
}

/**
 * The contacts the request selects, as a query over `contacts AS c` (the segment's, the filter's, or all). Wrapped in an
 * object: a query builder is thenable, and returning it bare from an async function would run it.
 */
async function selected(knex: Knex, projectId: string, req: ExportRequest): Promise<{ query: Knex.QueryBuilder }> {
  if (req.segmentId) {
    const segments = await loadSegments(knex, projectId);
    const segment = segments.get(req.segmentId.toLowerCase());
    if (!segment) throw notFound('Segment');
    try {
      return { query: segmentContacts(knex, projectId, segment, segments) };
    } catch (err) {
      if (err instanceof AudienceError) throw invalid([{ field: 'segmentId', message: unusableCondition(err), code: 'invalid' }]);
      throw err;
    }
  }
  const query = knex('contacts as c').where('c.project_id', projectId);
  if (req.filter) {
    // The request's text, parsed: its shape first (a path under `filter` names what is wrong), then its rules.
    const shape = conditionSchema.validate(req.filter, { convert: false, errors: { wrap: { label: false } } });
    if (shape.error) throw invalid(shape.error.details.map((d) => ({ field: ['filter', ...d.path].join('.'), message: d.message, code: 'invalid' })));
    const problems = checkCondition(req.filter, 'filter');
    const { segments, errors } = problems.length ? { segments: new Map(), errors: [] } : await resolveSegments(knex, projectId, req.filter, 'filter');
    problems.push(...errors);
    if (problems.length) throw invalid(problems);
    compileCondition(query, req.filter, segments, 'filter');
  }
  return { query };
}

export function contactExportService({ knex }: { knex: Knex }) {
  let running = 0;
  return {
    /**
     * Starts the export and answers its stream once the first bytes are there (a statement that fails at once is an
     * error answer, not a broken download); the export is audited then, as a read of personal data.
     */
    async start(projectId: string, req: ExportRequest, actor: Actor): Promise<ContactExport> {
      const columnErrors = checkColumns(req.columns);
      if (columnErrors.length) throw invalid(columnErrors);
      const query = exportQuery(knex, (await selected(knex, projectId, req)).query, req);
      if (running >= MAX_CONCURRENT_EXPORTS) throw conflict(`${MAX_CONCURRENT_EXPORTS} exports are running already`, 'Retry when one of them has ended.');
      running++;
      let stream: Readable;
      try {
        stream = await copyOut(knex, query, COPY_OPTIONS[req.format], req.bom && req.format === 'csv' ? UTF8_BOM : undefined);
      } catch (err) {
        running--;
        throw err;
      }
      stream.once('close', () => { running--; });
      const filter = req.segmentId ? { segmentId: req.segmentId.toLowerCase() } : req.filter ? { filter: req.filter } : {};
      await audited(knex, projectId, actor, { operation: 'exportContacts', resourceType: 'contact', resourceId: null, details: { format: req.format, columns: req.columns, ...filter, ...(req.bom ? { bom: true } : {}) } }, async () => undefined)
        .catch((err: unknown) => { stream.destroy(); throw err; });
      return { stream, filename: exportFilename(req.format), contentType: CONTENT_TYPES[req.format] };
    },
  };
}

export type ContactExports = ReturnType<typeof contactExportService>;
