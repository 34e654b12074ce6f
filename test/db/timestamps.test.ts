import pg from 'pg';
import { parseTimestamptz } from '../../db/timestamps';
import { createTestDatabase, type TestDatabase } from '../support/db';

// pg's own parser, the reference (pg-types' dependency, required by name: it ships no types).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const parsePostgresDate = require('postgres-date') as (text: string) => Date | number | null;

/** The same value both ways: a Date of the same time, or the same non-Date (infinity, null). */
const same = (text: string) => {
  const ours = parseTimestamptz(text);
  const theirs = parsePostgresDate(text);
  if (theirs instanceof Date) {
    expect(ours).toBeInstanceOf(Date);
    expect({ text, time: (ours as Date).getTime() }).toEqual({ text, time: theirs.getTime() });
  } else {
    expect({ text, value: ours }).toEqual({ text, value: theirs });
  }
};

test('every millisecond fraction and every fraction length read as pg reads them', () => {
  for (let ms = 0; ms < 1000; ms++) {
    const f = String(ms).padStart(3, '0');
    same(`2026-11-30 07:53:17.${f}+00`);
    same(`2026-11-30 07:53:17.${f}987+00`);
    same(`2026-11-30 07:53:17.${f.slice(0, 1)}+00`);
    same(`2026-11-30 07:53:17.${f.slice(0, 2)}+00`);
  }
  for (const fraction of ['', '.1', '.12', '.123', '.1234', '.12345', '.123456', '.000001', '.999999', '.5']) {
    same(`1999-12-31 23:59:59${fraction}+00`);
  }
});

test('offsets of whole hours, minutes and seconds, both signs', () => {
  for (const offset of ['+00', '+01', '-08', '+05:30', '-03:30', '+13:45', '-00:25:21', '+00:19:32', '+14', '-12']) {
    same(`2026-03-29 01:30:00.25${offset}`);
    same(`2000-02-29 00:00:00${offset}`);
  }
});

test('what is not the common form is left to pg: BC, infinity, short and long years, dates alone', () => {
  for (const text of ['infinity', '-infinity', '2026-11-30 07:53:17+00 BC', '0001-01-01 00:00:00+00', '0099-12-31 23:59:59.999+00',
    '0999-06-15 12:00:00+00', '12345-01-01 00:00:00+00', '2026-11-30', '2026-11-30 07:53:17', '2026-11-30T07:53:17Z']) {
    same(text);
  }
});

test('a character out of place is never read as a digit', () => {
  for (const text of ['2026-11-3a 07:53:17+00', '2026-11-30 07:5x:17+00', '2026-11-30 07:53:17+0x', '2026-11-30 07:53:17+05:3x']) {
    same(text);
  }
});

describe('against PostgreSQL', () => {
  let db: TestDatabase;
  beforeAll(async () => { db = await createTestDatabase(); });
  afterAll(async () => { await db.close(); });

  test('is the parser pg uses, and reads what PostgreSQL writes in any time zone as pg did', async () => {
    expect(pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ, 'text')).toBe(parseTimestamptz);
    const values = ["'2026-11-30 07:53:17.123456+00'", "'1883-11-18 12:00:00+00'", "'1850-06-01 00:00:00.5+00'", "'2026-03-29 01:30:00+00'",
      "'0050-01-01 00:00:00+00'", "'0044-03-15 12:00:00+00 BC'", "'infinity'", "'-infinity'", 'now()'];
    const zones = ['UTC', 'Asia/Kolkata', 'America/St_Johns', 'Europe/Amsterdam', 'Pacific/Kiritimati', 'America/Los_Angeles'];
    await db.knex.transaction(async (trx) => {
      for (const zone of zones) {
        await trx.raw(`SET LOCAL TimeZone = '${zone}'`);
        const { rows } = await trx.raw(`SELECT ${values.map((v, i) => `${v}::timestamptz AS v${i}, ${v}::timestamptz::text AS t${i}`).join(', ')}`);
        const row = rows[0] as Record<string, unknown>;
        values.forEach((_, i) => {
          const text = row[`t${i}`] as string;
          same(text);
          expect(row[`v${i}`]).toEqual(parsePostgresDate(text));
        });
      }
    });
  });
});
