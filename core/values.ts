import Joi from 'joi';

/**
 * Values every way in shares the rules of: email addresses and ids as the database writes them, and the dates
 * PostgreSQL can hold.
 */

/** An email address as Herald stores it: trimmed and lower-cased (RFC 5321 syntax, any TLD). */
export const EMAIL_RULE = Joi.string().trim().lowercase().max(254).email({ tlds: { allow: false } });

/** The address as Herald stores it, or undefined when it is none (for ways in without a Joi schema: SMTP). */
export function normaliseEmail(address: string): string | undefined {
  const { value, error } = EMAIL_RULE.validate(address);
  return error ? undefined : (value as string);
}

/** A UUID as the database writes it (lower-case, no braces). */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Ids are UUIDs; anything else cannot exist, so it is "not found" rather than a database error. */
export function isUuid(s: string): boolean {
  return UUID.test(s);
}

export const MIN_DATE = new Date('0001-01-01T00:00:00.000Z');
export const MAX_DATE = new Date('9999-12-31T23:59:59.999Z');
export const DATE_RANGE_TEXT = 'an ISO 8601 date or date-time with a four-digit year, from 0001-01-01 to 9999-12-31';

// YYYY-MM-DD, optionally followed by a time (T or a space; seconds and up to 9 fraction digits optional) and an offset.
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/;

const isLeap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
const daysInMonth = (y: number, m: number) => [31, isLeap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]!;

/**
 * The instant an ISO 8601 date or date-time string names, or null when it is not one Herald accepts (see MIN_DATE,
 * MAX_DATE). Stricter than Date.parse, whose fallback parser takes almost anything, so that a string accepted here
 * is also one PostgreSQL parses when it is compared as `?::timestamptz` (audience filters send the text itself).
 * Without an offset the time is read as UTC for the range check.
 */
export function parseIsoDate(text: string): Date | null {
  const m = ISO_DATE.exec(text);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map((s) => Number(s ?? 0)) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month) || hour > 23 || minute > 59 || second > 59) return null;
  let offsetMinutes = 0;
  const tz = m[8];
  if (tz && tz.toUpperCase() !== 'Z') {
    const hours = Number(tz.slice(1, 3));
    const minutes = Number(tz.slice(-2));
    if (hours > 15 || minutes > 59) return null;
    offsetMinutes = (tz.startsWith('-') ? -1 : 1) * (hours * 60 + minutes);
  }
  // setUTCFullYear, not Date.UTC: Date.UTC reads the years 0 to 99 as 1900 to 1999.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute - offsetMinutes, second, Number((m[7] ?? '').slice(0, 3).padEnd(3, '0')));
  return date >= MIN_DATE && date <= MAX_DATE ? date : null;
}
