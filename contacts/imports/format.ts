import { isUtf8 } from 'node:buffer';

/**
 * Reading an import's file (issue 30): CSV (RFC 4180: quoted fields, doubled quotes, line breaks inside quotes, CRLF or
 * LF, comma or semicolon, UTF-8 with or without BOM) or JSON Lines, as records with their line number and their exact
 * size in bytes, so that a batch can end at a record boundary and the next one start there (the import's checkpoint).
 *
 * Why not csv-parse: its recovery from a bad record (`skip_records_with_error`) goes on in the broken quote's state:
 * measured, a stray quote on line 3 swallowed the good lines 4 to 6 into one refused record. Here a bad record is
 * refused alone and reading goes on at the next line: an unclosed quote is refused once the record has grown past
 * MAX_ROW_BYTES, and the lines it had taken in are read again as records of their own.
 */

export type ImportFormat = 'csv' | 'jsonl';

/** A row (a record, with the lines a quoted field spans) may be at most this long. */
export const MAX_ROW_BYTES = 64 * 1024;
/** What a refused row keeps of its text for the errors download. */
export const MAX_RAW_CHARS = 1000;

export interface Line {
  /** Without its `\n` (a CRLF line keeps its `\r`). */
  text: string;
  /** Its size in the file, `\n` included. */
  bytes: number;
  /** 1-based. */
  line: number;
  /** Longer than MAX_ROW_BYTES: only its beginning is kept. */
  tooLong?: true;
  notUtf8?: true;
}

/**
 * The lines of a byte stream that starts at a line boundary, a chunk's lines at a time (a turn of the async iterator per
 * line cost as much as parsing it); `firstLine` is the number of its first line. A line longer than MAX_ROW_BYTES is
 * given with only its beginning (never held whole: a file without line breaks is not a reason to fill the memory).
 */
export async function* readLines(chunks: AsyncIterable<Buffer>, firstLine = 1): AsyncGenerator<Line[]> {
  let parts: Buffer[] = [];
  let held = 0; // bytes in parts
  let skipped = 0; // bytes of an over-long line dropped beyond what parts hold
  let line = firstLine;
  const emit = (tail: Buffer, terminated: boolean): Line => {
    const buf = parts.length === 0 ? tail : Buffer.concat([...parts, tail]);
    const bytes = skipped + buf.length + (terminated ? 1 : 0);
    const tooLong = bytes - (terminated ? 1 : 0) > MAX_ROW_BYTES;
    const kept = tooLong ? buf.subarray(0, MAX_RAW_CHARS) : buf;
    const out: Line = { text: kept.toString('utf8'), bytes, line: line++ };
    if (tooLong) out.tooLong = true;
    else if (!isUtf8(buf)) out.notUtf8 = true;
    parts = [];
    held = 0;
    skipped = 0;
    return out;
  };
  for await (const chunk of chunks) {
    const lines: Line[] = [];
    let at = 0;
    for (let nl = chunk.indexOf(10, at); nl >= 0; nl = chunk.indexOf(10, at)) {
      lines.push(emit(chunk.subarray(at, nl), true));
      at = nl + 1;
    }
    if (lines.length > 0) yield lines;
    if (at < chunk.length) {
      const rest = chunk.subarray(at);
      if (held > MAX_ROW_BYTES) {
        skipped += rest.length; // the beginning is kept; the rest of an over-long line is only counted
      } else {
        parts.push(Buffer.from(rest)); // a copy: the chunk may be reused by its reader
        held += rest.length;
      }
    }
  }
  if (held > 0 || skipped > 0) yield [emit(Buffer.alloc(0), false)];
}

/** One row of the file, as an import sees it. */
export interface ImportRecord {
  /** The first line of the row … */
  line: number;
  /** … and its last (a quoted field may span lines). */
  endLine: number;
  /** Its size in the file (all its lines, their line breaks included). */
  bytes: number;
  /** The row's text (cut to MAX_RAW_CHARS), for the errors download. */
  raw: string;
  /** An empty line: no row, only bytes to step over. */
  empty?: true;
  /** CSV: the fields. */
  fields?: string[];
  /** JSON Lines: the object. */
  object?: Record<string, unknown>;
  /** Why the row is refused. */
  error?: string;
}

type Parsed = { fields: string[] } | { error: string } | { open: true };

/** One CSV record's fields (RFC 4180), or why it is broken, or `open`: a quoted field runs on past the text's end. */
export function parseCsvRecord(text: string, delimiter: string): Parsed {
  const fields: string[] = [];
  const n = text.length;
  let i = 0;
  for (;;) {
    if (text.charCodeAt(i) === 34 /* " */) {
      let value = '';
      i++;
      for (;;) {
        const q = text.indexOf('"', i);
        if (q < 0) return { open: true };
        value += text.slice(i, q);
        if (text.charCodeAt(q + 1) === 34) {
          value += '"';
          i = q + 2;
          continue;
        }
        i = q + 1;
        break;
      }
      fields.push(value);
      if (i === n) return { fields };
      if (text[i] !== delimiter) return { error: `broken quote: "${text[i]}" after the closing quote of field ${fields.length}` };
      i++;
    } else {
      const d = text.indexOf(delimiter, i);
      const end = d < 0 ? n : d;
      const value = text.slice(i, end);
      if (value.includes('"')) return { error: `broken quote: a quote inside the unquoted field ${fields.length + 1}` };
      fields.push(value);
      if (d < 0) return { fields };
      i = d + 1;
    }
    if (i === n) {
      fields.push('');
      return { fields };
    }
  }
}

/** The delimiter of a CSV file, from its header line: comma or semicolon, whichever it has more of outside quotes. */
export function detectDelimiter(header: string): ',' | ';' {
  let commas = 0;
  let semicolons = 0;
  let quoted = false;
  for (const ch of header) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && ch === ',') commas++;
    else if (!quoted && ch === ';') semicolons++;
  }
  return semicolons > commas ? ';' : ',';
}

const stripCr = (s: string) => (s.endsWith('\r') ? s.slice(0, -1) : s);
const cut = (s: string) => (s.length > MAX_RAW_CHARS ? s.slice(0, MAX_RAW_CHARS) : s);

/**
 * The rows of a file from a row boundary: each with its line, size and fields (CSV) or object (JSON Lines), or the
 * reason it is refused. Every byte read belongs to exactly one record (empty lines are records too), so the sum of the
 * sizes of the records taken is where the next batch starts.
 */
export class RecordReader {
  private readonly back: Line[] = [];
  private readonly lines: AsyncIterator<Line[]>;
  /** The lines of the chunk being read, and the next one's index. */
  private ahead: Line[] = [];
  private at = 0;

  constructor(lines: AsyncIterable<Line[]>, private readonly format: ImportFormat, private readonly delimiter = ',') {
    this.lines = lines[Symbol.asyncIterator]();
  }

  private async pull(): Promise<Line | undefined> {
    const kept = this.back.shift();
    if (kept) return kept;
    if (this.at === this.ahead.length) {
      const next = await this.lines.next();
      if (next.done) return undefined;
      this.ahead = next.value;
      this.at = 0;
    }
    return this.ahead[this.at++];
  }

  async next(): Promise<ImportRecord | undefined> {
    const first = await this.pull();
    if (!first) return undefined;
    const base = { line: first.line, endLine: first.line, bytes: first.bytes, raw: cut(stripCr(first.text)) };
    if (first.tooLong) return { ...base, error: `the row is over the limit of ${MAX_ROW_BYTES / 1024} KB` };
    if (first.notUtf8) return { ...base, error: 'the row is not UTF-8 text' };
    const text = stripCr(first.text);
    if (text.trim() === '') return { ...base, empty: true };
    if (text.includes('\u0000')) return { ...base, error: 'the row contains a NUL byte' };
    return this.format === 'jsonl' ? jsonRecord(base, text) : this.csvRecord(first, base);
  }

  private async csvRecord(first: Line, base: ImportRecord): Promise<ImportRecord> {
    // Line breaks inside a quoted field are kept as the file has them (CRLF or LF); the record's own is not.
    let text = first.text;
    let parsed = parseCsvRecord(stripCr(text), this.delimiter);
    // A quoted field with line breaks: take the next lines in until it closes, within the row limit.
    const taken: Line[] = [];
    let bytes = first.bytes;
    while ('open' in parsed && bytes <= MAX_ROW_BYTES) {
      const more = await this.pull();
      if (!more) break;
      taken.push(more);
      bytes += more.bytes;
      if (more.tooLong || more.notUtf8) break;
      text = `${text}\n${more.text}`;
      parsed = parseCsvRecord(stripCr(text), this.delimiter);
    }
    if ('open' in parsed || taken.some((l) => l.tooLong || l.notUtf8)) {
      // Refused alone: the lines it took in are rows of their own.
      this.back.unshift(...taken);
      return { ...base, error: 'broken quote: a quoted field is never closed' };
    }
    const whole = { ...base, bytes, endLine: taken.length ? taken[taken.length - 1]!.line : first.line, raw: cut(stripCr(text)) };
    if ('error' in parsed) return { ...whole, error: parsed.error };
    if (text.includes('\u0000')) return { ...whole, error: 'the row contains a NUL byte' };
    return { ...whole, fields: parsed.fields };
  }
}

function jsonRecord(base: ImportRecord, text: string): ImportRecord {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ...base, error: `not valid JSON: ${(err as Error).message}` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ...base, error: 'not a JSON object' };
  return { ...base, object: value as Record<string, unknown> };
}

/** The records of a byte stream that starts at a row boundary (line `firstLine`). */
export function readRecords(chunks: AsyncIterable<Buffer>, format: ImportFormat, delimiter: string, firstLine = 1): RecordReader {
  return new RecordReader(readLines(chunks, firstLine), format, delimiter);
}

/** A UTF-8 byte order mark at the very start of a file. */
export const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
