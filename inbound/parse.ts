import PostalMime, { type Address, type Email } from 'postal-mime';
import { MAX_DATE, MIN_DATE } from '../core/values';

/**
 * A received message read with postal-mime (the MIME parser bounces/reports.ts already uses: maintained, no
 * dependencies, and it bounds what a hostile message can make it do: part nesting and total header size). Nothing a
 * message holds makes this throw: what cannot be read is left empty and said in `warnings`, and the message is stored
 * as it came (its raw bytes are kept whatever the parse gives).
 */

/** Multipart nesting beyond this is not parsed (a "zip bomb" of nested parts): the message is kept raw, with a warning. */
export const MAX_NESTING = 50;
/** Header bytes across all parts (postal-mime's default is 2 MB). */
export const MAX_HEADER_BYTES = 1024 * 1024;
/** Headers kept in the parsed row (all of them stay in the raw message). */
export const MAX_HEADERS = 500;
/** Attachments kept as rows (more are listed in the raw message only). */
export const MAX_ATTACHMENTS = 100;

export interface Mailbox {
  address: string;
  name: string | null;
}

export interface ParsedAttachment {
  filename: string;
  contentType: string;
  disposition: 'attachment' | 'inline';
  contentId: string | null;
  content: Buffer;
}

export interface ParsedMessage {
  from: Mailbox | null;
  to: Mailbox[];
  cc: Mailbox[];
  replyTo: Mailbox[];
  subject: string | null;
  date: Date | null;
  messageId: string | null;
  inReplyTo: string | null;
  /** The message ids of In-Reply-To and References, each once, in order. */
  references: string[];
  text: string | null;
  html: string | null;
  headers: { name: string; value: string }[];
  attachments: ParsedAttachment[];
  warnings: string[];
}

/** With the u flag a surrogate matches only when it is unpaired (a pair is one code point), as api/schemas/common.ts. */
const UNPAIRED = /[\uD800-\uDFFF]/u;

/**
 * Text as PostgreSQL's text and jsonb take it: no NUL, no unpaired surrogate (jsonb refuses both, text the first). A
 * message is bytes from anyone; its decoded parts may hold either.
 */
function clean(text: string | undefined | null, warnings: Set<string>): string | null {
  if (text === undefined || text === null) return null;
  let out = text;
  if (out.includes('\u0000')) {
    out = out.split('\u0000').join('');
    warnings.add('NUL characters were removed from decoded text');
  }
  if (UNPAIRED.test(out)) {
    out = out.replace(/[\uD800-\uDFFF]/gu, '\ufffd');
    warnings.add('Malformed UTF-16 in decoded text was replaced');
  }
  if (out.includes('\ufffd')) warnings.add('Some text could not be decoded in its declared charset or encoding (shown as U+FFFD)');
  return out;
}

function mailboxes(list: Address[] | Address | undefined, warnings: Set<string>): Mailbox[] {
  const all = list === undefined ? [] : Array.isArray(list) ? list : [list];
  const flat = all.flatMap((a) => (a.group ? a.group : [a]));
  return flat.filter((m) => m.address).slice(0, 100).map((m) => ({ address: clean(m.address, warnings)!.toLowerCase(), name: clean(m.name, warnings) || null }));
}

/** Message ids (`<…>`) in a header's value, without the brackets' whitespace. */
export function messageIds(value: string | undefined): string[] {
  return value ? [...value.matchAll(/<[^<>\s]{1,250}>/g)].map((m) => m[0]) : [];
}

const empty = (warnings: string[]): ParsedMessage => ({
  from: null, to: [], cc: [], replyTo: [], subject: null, date: null, messageId: null, inReplyTo: null, references: [], text: null, html: null,
  headers: [], attachments: [], warnings,
});

export async function parseMessage(raw: Buffer): Promise<ParsedMessage> {
  let email: Email;
  try {
    email = await PostalMime.parse(raw, { maxNestingDepth: MAX_NESTING, maxHeadersSize: MAX_HEADER_BYTES, attachmentEncoding: 'arraybuffer' });
  } catch (err) {
    return empty([`The message could not be parsed as MIME (${(err as Error).message.slice(0, 200)}); it is kept as received`]);
  }
  const w = new Set<string>();
  const from = mailboxes(email.from, w)[0] ?? null;
  if (!from) w.add('The message has no From address');
  let date: Date | null = null;
  if (email.date) {
    const d = new Date(email.date);
    if (Number.isNaN(d.getTime()) || d < MIN_DATE || d > MAX_DATE) w.add('The Date header is not a date');
    else date = d;
  }
  if (email.headers.length > MAX_HEADERS) w.add(`Only the first ${MAX_HEADERS} headers are listed (all are in the raw message)`);
  if (email.attachments.length > MAX_ATTACHMENTS) w.add(`Only the first ${MAX_ATTACHMENTS} attachments are kept apart (all are in the raw message)`);
  const inReplyTo = messageIds(email.inReplyTo)[0] ?? null;
  const references = [...new Set([...messageIds(email.inReplyTo), ...messageIds(email.references)])].slice(0, 100);
  const parsed: ParsedMessage = {
    from,
    to: mailboxes(email.to, w),
    cc: mailboxes(email.cc, w),
    replyTo: mailboxes(email.replyTo, w),
    subject: clean(email.subject, w),
    date,
    messageId: clean(messageIds(email.messageId)[0] ?? email.messageId?.slice(0, 250), w),
    inReplyTo: clean(inReplyTo, w),
    references: references.map((r) => clean(r, w)!),
    text: clean(email.text, w),
    html: clean(email.html, w),
    headers: email.headers.slice(0, MAX_HEADERS).map((h) => ({ name: clean(h.originalKey, w)!, value: clean(h.value, w)! })),
    attachments: email.attachments.slice(0, MAX_ATTACHMENTS).map((a, i) => ({
      filename: clean(a.filename, w)?.slice(0, 255) || `attachment-${i + 1}`,
      contentType: clean(a.mimeType, w)?.slice(0, 255) || 'application/octet-stream',
      disposition: a.disposition === 'inline' ? 'inline' : 'attachment',
      contentId: clean(a.contentId, w)?.slice(0, 255) ?? null,
      content: Buffer.from(a.content as ArrayBuffer),
    })),
    warnings: [],
  };
  parsed.warnings = [...w];
  return parsed;
}
