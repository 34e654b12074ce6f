import Joi from 'joi';
import type { FieldError } from '../errors';
import { DATE_RANGE_TEXT, EMAIL_RULE, MAX_DATE, MIN_DATE, parseIsoDate, UUID } from '../../core/values';


/**
 * The value rules every request shares, in one place. Each keeps out a value that PostgreSQL (or the JSON
 * serialisation on the way to it) would refuse, so that such input is a 4xx naming the field instead of a 500:
 * text and jsonb refuse U+0000 and unpaired surrogates, uuid refuses Joi's other GUID spellings, timestamptz
 * refuses year 0000 and beyond, and deep JSON overflows the stack of JSON.stringify and of PostgreSQL's jsonb parser.
 */

/**
 * The values the API reference shows (GET /openapi.json, /docs), given to the schemas with Joi's `.example()` and put
 * together by api/openapi/examples.ts: ids as Herald makes them (UUIDv7), one per kind so that an email's `contactId`
 * is the contact's `id`; instants in ISO 8601; addresses at example.com (RFC 2606). Only the document reads them.
 */
export const EXAMPLE = {
  contactId: '0197a3c4-5e21-7c3a-9b4f-8d2e1a6c0f53',
  emailId: '0197a3c4-6a08-7f19-8e2d-3b5c7a9d1e24',
  eventId: '0197a3c4-6a09-7b42-a1c3-5d7e9f0b2c46',
  campaignId: '0197a1f0-2b7d-7e65-b3a4-6c8d0e2f4a17',
  templateId: '0197a0d2-8c34-7a91-9f6e-1b3d5f7a9c08',
  segmentId: '0197a0e5-4d12-7c80-8a5b-7e9f1c3d5b29',
  workflowId: '0197a11b-9e47-7d26-b8c1-2f4a6c8e0d3b',
  executionId: '0197a3c5-0f18-7a63-9d2e-4b6c8e0a2f5d',
  webhookId: '0197a12c-7b3e-7f04-a6d8-9c1e3a5b7d60',
  deliveryId: '0197a3c4-7c5a-7e38-b2f4-6a8c0e2d4f71',
  domainId: '0197a0c1-3f6b-7b25-9e8a-0c2e4a6b8d93',
  keyId: '0197a0c1-1a2b-7c3d-8e4f-5a6b7c8d9e0f',
  suppressionId: '0197a2d7-5b19-7e4c-9a30-1f2e3d4c5b6a',
  userId: '0197a0b8-2c4d-7e6f-8a1b-3c5d7e9f0a2b',
  projectId: '0197a0b8-4e5f-7a6b-9c8d-7e6f5a4b3c2d',
  sessionId: '0197a3b0-6d7e-7f80-a91b-2c3d4e5f6a7b',
  invitationId: '0197a2f1-8e9f-7a0b-b1c2-d3e4f5a6b7c8',
  auditId: '0197a3c3-9f0a-7b1c-82d3-e4f5a6b7c8d9',
  /** Instants: when something was created, and a moment later. */
  at: '2025-06-02T09:41:07.512Z',
  later: '2025-06-02T09:41:09.204Z',
  email: 'ada@example.com',
  from: 'hello@example.com',
} as const;

/** Replaces a schema's example (Joi's `.example()` alone adds one after those it has). */
export const example = <T extends Joi.Schema>(schema: T, value: unknown): T => schema.example(value, { override: true }) as T;

/** An email address as Herald stores it (core/values.ts: the rule SMTP submission applies too). */
export const emailSchema = EMAIL_RULE.example(EXAMPLE.email);

/**
 * A UUID in its canonical form only: 8-4-4-4-12 hexadecimal digits with hyphens. Upper case is accepted and
 * lower-cased (as the API writes ids); Joi's guid() would also let braces, brackets, colons and missing hyphens
 * through, some of which PostgreSQL's uuid type refuses.
 */
export const uuidSchema = Joi.string().lowercase().pattern(UUID, 'uuid')
  .messages({ 'string.pattern.name': '{{#label}} must be a UUID (8-4-4-4-12 hexadecimal digits with hyphens)' }).example(EXAMPLE.contactId);

/** The instants the API accepts: four-digit years, well inside PostgreSQL's timestamptz (4713 BC to 294276 AD). */

/**
 * A date or date-time that becomes a SQL timestamp: Joi's ISO format, and then the same strict form and range as
 * parseIsoDate, so that `-004714-01-01T00:00:00Z` or `0000-01-01` is a 4xx here rather than a database error.
 */
export const dateSchema = Joi.date().iso().custom((value: Date, helpers) => {
  const original: unknown = helpers.original;
  const ok = typeof original === 'string' ? parseIsoDate(original) !== null : value >= MIN_DATE && value <= MAX_DATE;
  return ok ? value : helpers.error('date.range');
}).messages({ 'date.format': `{{#label}} must be ${DATE_RANGE_TEXT}`, 'date.range': `{{#label}} must be ${DATE_RANGE_TEXT}` }).example(EXAMPLE.at);

/** How deep any JSON request body may nest (objects and arrays; `{"a":1}` is one level). */
export const MAX_JSON_DEPTH = 32;
/** How deep free-form `data` may nest, counting `data` itself, and its size as JSON. */
export const MAX_DATA_DEPTH = 16;
export const MAX_DATA_BYTES = 64 * 1024;

/**
 * Whether a JSON value nests more than `max` levels (`{"a":1}` is one). Without recursion, and with one iterator per
 * open level, so the cost in memory is the depth, whatever the width.
 */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  const open: Iterator<unknown>[] = [Object.values(value)[Symbol.iterator]()];
  while (open.length) {
    const next = open[open.length - 1]!.next();
    if (next.done) open.pop();
    else if (next.value !== null && typeof next.value === 'object') {
      if (open.length >= max) return true;
      open.push(Object.values(next.value)[Symbol.iterator]());
    }
  }
  return false;
}

/**
 * Free-form data (contacts, events, sends, UPDATE_CONTACT steps): keys merge into what is stored; a `null` value
 * deletes its key. Bounded in keys, depth and size so that a single request cannot bloat a row without limit.
 */
export const contactDataSchema = Joi.object().pattern(Joi.string().min(1).max(100), Joi.any()).max(200)
  .custom((data: Record<string, unknown>, helpers) => {
    // Depth first: it is counted without recursion, and it bounds the recursion of JSON.stringify below.
    if (nestsDeeperThan(data, MAX_DATA_DEPTH)) return helpers.error('data.depth');
    return Buffer.byteLength(JSON.stringify(data)) > MAX_DATA_BYTES ? helpers.error('data.bytes') : data;
  })
  .messages({
    'data.depth': `{{#label}} may nest at most ${MAX_DATA_DEPTH} levels deep`,
    'data.bytes': `{{#label}} may be at most ${MAX_DATA_BYTES / 1024} KB as JSON`,
  })
  .example({ firstName: 'Ada', plan: 'pro' });

/** Text that ends up in a mail header (subject, display names): no CR or LF, which would inject headers. */
export const headerTextSchema = Joi.string().pattern(/^[^\r\n]*$/, 'a single line').messages({
  'string.pattern.name': '{{#label}} must not contain line breaks (CR or LF)',
});

// With the u flag a surrogate matches only when it is unpaired (a pair is one code point).
const BAD_TEXT = /[\0\uD800-\uDFFF]/u;
const REPORT_AT_MOST = 10;

/** What is wrong with a string PostgreSQL would refuse, or null. */
function textProblem(s: string): string | null {
  const m = BAD_TEXT.exec(s);
  if (!m) return null;
  return m[0] === '\0' ? 'must not contain the character U+0000' : 'must be valid Unicode text (it contains an unpaired surrogate)';
}

/** A key as it can be shown in a field path: its refused characters replaced by U+FFFD. */
const shownKey = (key: string) => key.replace(/[\0\uD800-\uDFFF]/gu, '\uFFFD');

interface Level {
  node: Record<string, unknown>;
  keys: string[];
  next: number;
}

/**
 * The checks that apply to every value of every request, whatever its schema: one walk over a parsed JSON body
 * or query, before Joi. Refuses U+0000 and unpaired surrogates in any string and any key, numbers that JSON
 * overflowed to Infinity (`1e999`), and nesting deeper than MAX_JSON_DEPTH. Each problem is named by its dotted
 * path (`data.a.b`), as Joi names its own; at most REPORT_AT_MOST are reported. The walk keeps its own stack of at
 * most `maxDepth` levels, so a body nested 100,000 deep costs no recursion (and never reaches Joi or JSON.stringify).
 */
export function checkJsonValues(root: unknown, maxDepth = MAX_JSON_DEPTH): FieldError[] {
  const errors: FieldError[] = [];
  const path: string[] = []; // the keys from the root to the value being looked at
  const open: Level[] = [];
  const report = (message: string, code: string) => {
    const field = path.join('.');
    errors.push({ field, message: `${field || 'the body'} ${message}`, code });
  };
  /** Checks the value at `path`; enters it if it is an object or array within the depth. Answers whether it did. */
  const visit = (value: unknown): boolean => {
    if (typeof value === 'string') {
      const problem = textProblem(value);
      if (problem) report(problem, 'invalid_string');
    } else if (typeof value === 'number') {
      if (!Number.isFinite(value)) report('must be a finite number', 'too_big');
    } else if (value !== null && typeof value === 'object') {
      if (open.length >= maxDepth) report(`nests deeper than ${maxDepth} levels`, 'too_big');
      else {
        open.push({ node: value as Record<string, unknown>, keys: Object.keys(value), next: 0 });
        return true;
      }
    }
    return false;
  };
  visit(root);
  while (open.length && errors.length < REPORT_AT_MOST) {
    const level = open[open.length - 1]!;
    if (level.next === level.keys.length) {
      open.pop();
      path.pop(); // the key of the finished object or array (none for the root)
      continue;
    }
    const key = level.keys[level.next++]!;
    const problem = textProblem(key);
    path.push(problem ? shownKey(key) : key);
    if (problem) report(`(a key) ${problem}`, 'invalid_string');
    if (!visit(level.node[key])) path.pop();
  }
  return errors.slice(0, REPORT_AT_MOST);
}
