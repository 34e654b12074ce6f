import pg from 'pg';

/** pg's own parser of a timestamptz (postgres-date), for what parseTimestamptz does not read itself. */
const parsePostgresDate = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ, 'text') as (text: string) => Date | number | null;

const isDigit = (c: number) => c >= 48 && c <= 57;

/** Two decimal digits at `i`, or NaN. */
function twoDigits(s: string, i: number): number {
  const a = s.charCodeAt(i);
  const b = s.charCodeAt(i + 1);
  return isDigit(a) && isDigit(b) ? (a - 48) * 10 + (b - 48) : NaN;
}

/**
 * A `timestamptz` as PostgreSQL writes it with DateStyle ISO (its default, and what pg asks for), read into a Date.
 *
 * pg's own parser (postgres-date) runs three regular expressions and a parseFloat per value, ~1 µs here: a page of 50
 * emails holds 250 timestamps, and it was the API's largest single cost in reading rows (a V8 profile of GET /emails,
 * BENCHMARKS.md section 63). The form PostgreSQL writes is fixed, `2026-11-30 07:53:17.123456+00` (the fraction of
 * zero to six digits, the offset `±HH`, `±HH:MM` or `±HH:MM:SS` of the session's TimeZone), and read by position it
 * costs ~0.4 µs. Anything else (years before 1000 or after 9999, BC, infinity) goes to postgres-date, as before, and
 * the result is the same Date either way: the fraction is cut to milliseconds, as Date.UTC cuts postgres-date's.
 */
export function parseTimestamptz(text: string): Date | number | null {
  const n = text.length;
  if (n < 22 || n > 35 || text.charCodeAt(4) !== 45 || text.charCodeAt(7) !== 45 || text.charCodeAt(10) !== 32
    || text.charCodeAt(13) !== 58 || text.charCodeAt(16) !== 58 || text.charCodeAt(0) === 48) {
    return parsePostgresDate(text);
  }
  let i = 19;
  let ms = 0;
  if (text.charCodeAt(i) === 46) {
    // Milliseconds: the fraction's first three digits (fewer are tenths and hundredths), the rest cut.
    let scale = 100;
    for (i++; isDigit(text.charCodeAt(i)); i++) {
      if (scale >= 1) ms += (text.charCodeAt(i) - 48) * scale;
      scale /= 10;
    }
  }
  const sign = text.charCodeAt(i);
  const rest = n - i;
  if ((sign !== 43 && sign !== 45) || (rest !== 3 && rest !== 6 && rest !== 9)
    || (rest >= 6 && text.charCodeAt(i + 3) !== 58) || (rest === 9 && text.charCodeAt(i + 6) !== 58)) {
    return parsePostgresDate(text);
  }
  let offset = twoDigits(text, i + 1) * 3600;
  if (rest >= 6) offset += twoDigits(text, i + 4) * 60;
  if (rest === 9) offset += twoDigits(text, i + 7);
  const time = Date.UTC(twoDigits(text, 0) * 100 + twoDigits(text, 2), twoDigits(text, 5) - 1, twoDigits(text, 8),
    twoDigits(text, 11), twoDigits(text, 14), twoDigits(text, 17), ms) - (sign === 43 ? offset : -offset) * 1000;
  // A character that is not a digit where one belongs made NaN (twoDigits): left to postgres-date.
  return Number.isNaN(time) ? parsePostgresDate(text) : new Date(time);
}
