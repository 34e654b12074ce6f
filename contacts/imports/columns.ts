import { normaliseEmail, parseIsoDate } from '../../core/values';
import type { ImportRecord } from './format';

/**
 * An import's column map (issue 30): which column of the file is the email, which is `subscribed`, which become typed
 * `data.*` keys, which are ignored; how a row becomes a contact under it, or why it is refused; and the map proposed
 * from a file's first rows (POST /contacts/imports/preview).
 */

export const DATA_TYPES = ['string', 'number', 'boolean', 'date'] as const;
export type DataType = (typeof DATA_TYPES)[number];
export const COLUMN_TARGETS = ['email', 'subscribed', 'data', 'ignore'] as const;
export type ColumnTarget = (typeof COLUMN_TARGETS)[number];

/** One column of the map. A CSV column is named by its header; a JSON Lines one by its top-level key. */
export interface ColumnMapping {
  column: string;
  to: ColumnTarget;
  /** `data`: the key it is stored under (default: the column's name) … */
  key?: string;
  /** … and its type (default string). */
  type?: DataType;
}

/** A `data` value may be at most this long (as text); a contact's whole data obeys the API's limit too. */
export const MAX_VALUE_CHARS = 10_000;
export const MAX_DATA_KEYS = 200;
export const MAX_KEY_CHARS = 100;

/** What a row becomes: the contact's address, its subscription (null: none given) and data. */
export interface ImportedContact {
  email: string;
  subscribed: boolean | null;
  data: Record<string, unknown>;
}

/** The map resolved against a file: where each target's value comes from. */
export interface ColumnPlan {
  format: 'csv' | 'jsonl';
  /** CSV: the header's width (a row must have as many fields). */
  width: number;
  email: string | number;
  subscribed?: string | number;
  data: { from: string | number; key: string; type: DataType }[];
}

export class ColumnMapError extends Error {}

/**
 * Checks a map and resolves it against the CSV header (columns by position) or for JSON Lines (by key). One email
 * column, at most one subscribed, data keys unique and within the limits; a CSV column the header lacks is an error.
 */
export function planColumns(map: ColumnMapping[], format: 'csv' | 'jsonl', header: string[]): ColumnPlan {
  const where = (column: string): string | number => {
    if (format === 'jsonl') return column;
    const i = header.indexOf(column);
    if (i < 0) throw new ColumnMapError(`the file has no column "${column}" (its columns: ${header.map((h) => `"${h}"`).join(', ')})`);
    return i;
  };
  const emails = map.filter((m) => m.to === 'email');
  if (emails.length !== 1) throw new ColumnMapError(emails.length === 0 ? 'no column is mapped to the email' : 'only one column may be mapped to the email');
  const subscribed = map.filter((m) => m.to === 'subscribed');
  if (subscribed.length > 1) throw new ColumnMapError('only one column may be mapped to subscribed');
  const data = map.filter((m) => m.to === 'data').map((m) => ({ from: where(m.column), key: (m.key ?? m.column).trim(), type: m.type ?? 'string' }));
  const keys = new Set<string>();
  for (const d of data) {
    if (d.key.length === 0 || d.key.length > MAX_KEY_CHARS) throw new ColumnMapError(`a data key must have 1 to ${MAX_KEY_CHARS} characters ("${d.key}")`);
    if (keys.has(d.key)) throw new ColumnMapError(`two columns are mapped to the data key "${d.key}"`);
    keys.add(d.key);
  }
  if (data.length > MAX_DATA_KEYS) throw new ColumnMapError(`at most ${MAX_DATA_KEYS} columns may be mapped to data`);
  return {
    format, width: header.length, email: where(emails[0]!.column), data,
    ...(subscribed[0] ? { subscribed: where(subscribed[0].column) } : {}),
  };
}

const TRUE = new Set(['true', 't', 'yes', 'y', '1', 'on']);
const FALSE = new Set(['false', 'f', 'no', 'n', '0', 'off']);
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

function asBoolean(v: unknown): boolean | undefined {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v === 1 ? true : v === 0 ? false : undefined;
  if (typeof v !== 'string') return undefined;
  const s = v.trim().toLowerCase();
  return TRUE.has(s) ? true : FALSE.has(s) ? false : undefined;
}

/** Why a value is not of its column's type. */
const notOfType = (v: unknown, type: DataType, column: string) => ({ error: `"${column}" is not a ${type}: ${JSON.stringify(v).slice(0, 60)}` });

/**
 * A value as its type, or why it is not one. Empty text is no value (undefined): the key is not written. Every value
 * of every row passes here: nothing is allocated for a value that is right but its answer (no closure per call).
 */
function typed(v: unknown, type: DataType, column: string): { value?: unknown; error?: string } {
  if (v === undefined || v === null || v === '') return {};
  switch (type) {
    case 'string': {
      if (typeof v === 'string') return v.length > MAX_VALUE_CHARS ? { error: `"${column}" is over the limit of ${MAX_VALUE_CHARS} characters` } : { value: v };
      if (typeof v === 'object') return notOfType(v, type, column);
      const s = String(v);
      return s.length > MAX_VALUE_CHARS ? { error: `"${column}" is over the limit of ${MAX_VALUE_CHARS} characters` } : { value: s };
    }
    case 'number': {
      if (typeof v === 'number') return Number.isFinite(v) ? { value: v } : notOfType(v, type, column);
      if (typeof v !== 'string' || !NUMBER.test(v.trim())) return notOfType(v, type, column);
      const n = Number(v.trim());
      return Number.isFinite(n) ? { value: n } : notOfType(v, type, column);
    }
    case 'boolean': {
      const b = asBoolean(v);
      return b === undefined ? notOfType(v, type, column) : { value: b };
    }
    case 'date': {
      const d = typeof v === 'string' ? parseIsoDate(v.trim()) : null;
      return d ? { value: d.toISOString() } : notOfType(v, type, column);
    }
  }
}

/** The contact a row stands for under the plan, or why it is refused. */
export function rowToContact(record: ImportRecord, plan: ColumnPlan): ImportedContact | { error: string } {
  // A CSV row's fields by position, a JSON Lines row's object by key: indexed directly (no accessor made per row).
  const source = (plan.format === 'csv' ? record.fields! : record.object!) as Record<string | number, unknown>;
  if (plan.format === 'csv' && record.fields!.length !== plan.width) return { error: `${record.fields!.length} fields where the header has ${plan.width}` };
  const rawEmail = source[plan.email];
  if (rawEmail === undefined || rawEmail === null || rawEmail === '') return { error: 'no email' };
  const email = typeof rawEmail === 'string' ? normaliseEmail(rawEmail) : undefined;
  if (!email) return { error: `invalid email ${JSON.stringify(rawEmail).slice(0, 80)}` };
  let subscribed: boolean | null = null;
  if (plan.subscribed !== undefined) {
    const v = source[plan.subscribed];
    if (v !== undefined && v !== null && v !== '') {
      const b = asBoolean(v);
      if (b === undefined) return { error: `subscribed is not a boolean: ${JSON.stringify(v).slice(0, 60)}` };
      subscribed = b;
    }
  }
  const data: Record<string, unknown> = {};
  for (const d of plan.data) {
    const { value, error } = typed(source[d.from], d.type, typeof d.from === 'number' ? d.key : d.from);
    if (error) return { error };
    if (value !== undefined) {
      if (typeof value === 'string' && value.includes('\u0000')) return { error: 'the row contains a NUL byte' };
      data[d.key] = value;
    }
  }
  return { email, subscribed, data };
}

/** A column as the preview proposes it, with a few of its values. */
/**
 * Why a row is refused as a duplicate (its address is on an earlier line of the file), or undefined, remembering the
 * address's first line in `firstLine` (address → line) otherwise.
 */
export function duplicateOf(firstLine: Map<string, number>, email: string, line: number): string | undefined {
  const first = firstLine.get(email);
  if (first !== undefined) return duplicateReason(first);
  firstLine.set(email, line);
  return undefined;
}

/** Why a row is refused whose address the file has on an earlier line, `first` (in its batch, or an earlier one). */
export const duplicateReason = (first: number) => `duplicate email: the file has it on line ${first} already`;

export interface ProposedColumn extends ColumnMapping {
  samples: string[];
}

const EMAIL_NAME = /^(e-?mail|e-?mail[ _-]?address|address)$/i;
const SUBSCRIBED_NAME = /^(subscribed|subscription|opt[ _-]?in|opted[ _-]?in|consent)$/i;

function guessType(values: unknown[]): DataType {
  const present = values.filter((v) => v !== undefined && v !== null && v !== '');
  if (present.length === 0) return 'string';
  if (present.every((v) => typeof v === 'number' || (typeof v === 'string' && NUMBER.test(v.trim())))) return 'number';
  if (present.every((v) => typeof v === 'boolean' || (typeof v === 'string' && asBoolean(v) !== undefined && !/^[01]$/.test(v.trim())))) return 'boolean';
  if (present.every((v) => typeof v === 'string' && parseIsoDate(v.trim()) !== null)) return 'date';
  return 'string';
}

/**
 * The map proposed for a file from its columns and first rows: the email column by its name, else the first column
 * whose values are addresses; `subscribed` by its name and boolean values; every other column a data key of the type
 * all its sample values have (number, boolean, date, else string).
 */
export function proposeColumns(columns: string[], rows: ((column: string) => unknown)[]): ProposedColumn[] {
  const samplesOf = (c: string) => rows.map((get) => get(c));
  const looksLikeEmails = (c: string) => {
    const present = samplesOf(c).filter((v) => typeof v === 'string' && v !== '');
    return present.length > 0 && present.every((v) => normaliseEmail(v as string) !== undefined);
  };
  const email = columns.find((c) => EMAIL_NAME.test(c.trim())) ?? columns.find(looksLikeEmails);
  const subscribed = columns.find((c) => c !== email && SUBSCRIBED_NAME.test(c.trim()) && samplesOf(c).every((v) => v === '' || v === undefined || asBoolean(v) !== undefined));
  return columns.map((column) => {
    const samples = samplesOf(column).slice(0, 5).map((v) => (v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v)));
    if (column === email) return { column, to: 'email', samples };
    if (column === subscribed) return { column, to: 'subscribed', samples };
    if (column.trim() === '' || column.length > MAX_KEY_CHARS) return { column, to: 'ignore', samples };
    return { column, to: 'data', key: column.trim(), type: guessType(samplesOf(column)), samples };
  });
}
