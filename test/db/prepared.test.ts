import { admit, presentKey } from '../../projects/access';
import { hashKey } from '../../projects/keys';
import { createProject, revokeKey } from '../../projects/service';
import { createKnex } from '../../db/database';
import { genericStatementOf, preparedStatement, valuedText, withSettings } from '../../db/prepared';
import { createTestDatabase, type TestDatabase } from '../support/db';

let db: TestDatabase;
beforeAll(async () => { db = await createTestDatabase(); });
afterAll(async () => { await db.close(); });

test('a prepared statement answers as knex.raw does, with ? numbered, arrays bound as PostgreSQL arrays', async () => {
  const sql = 'SELECT x, ?::int AS n, ?::text AS t FROM unnest(?::text[]) AS u(x) ORDER BY x';
  const run = preparedStatement('test_prepared_same', sql);
  const bindings = [7, 'a ? inside a value', ['b', 'a', 'c']];
  const viaKnex = await db.knex.raw(sql, bindings);
  // Twice: the second run uses the statement prepared on its connection.
  for (let i = 0; i < 2; i++) expect((await run(db.knex, bindings)).rows).toEqual(viaKnex.rows);
  expect((await run(db.knex, bindings)).rows).toEqual([{ x: 'a', n: 7, t: 'a ? inside a value' }, { x: 'b', n: 7, t: 'a ? inside a value' }, { x: 'c', n: 7, t: 'a ? inside a value' }]);
});

test('a failing statement rejects and gives its connection back to the pool; knex\'s query event is emitted', async () => {
  const run = preparedStatement('test_prepared_fails', 'SELECT 1 / ?::int AS q');
  const seen: { sql: string; bindings: unknown[] }[] = [];
  const onQuery = (q: { sql: string; bindings: unknown[] }) => seen.push(q);
  db.knex.on('query', onQuery);
  try {
    // More failures than the pool has connections (10): a connection kept after a failure would starve the next call.
    for (let i = 0; i < 15; i++) await expect(run(db.knex, [0])).rejects.toMatchObject({ code: '22012' });
    expect((await run(db.knex, [2])).rows).toEqual([{ q: 0 }]);
  } finally {
    db.knex.off('query', onQuery);
  }
  expect(seen).toHaveLength(16);
  expect(seen[15]).toMatchObject({ sql: 'SELECT 1 / ?::int AS q', bindings: [2] });
});

test('a prepared statement takes only plain placeholders, and as many bindings as it has', async () => {
  expect(() => preparedStatement('test_prepared_identifier', 'SELECT ?? FROM t')).toThrow(/only plain \? placeholders/);
  const run = preparedStatement('test_prepared_count', 'SELECT ?::int + ?::int AS s');
  await expect(run(db.knex, [1])).rejects.toThrow(/2 bindings expected, 1 given/);
});

test('admit with a key presented once (an SMTP session\'s): the live key passes, another hash or a revoked key does not', async () => {
  const project = await createProject('Prepared admission');
  const presented = presentKey(project.secretKey)!;
  expect(presented.hash.equals(hashKey(project.secretKey))).toBe(true);
  const first = await admit(db.knex, presented);
  expect(first).toMatchObject({ projectId: project.id, keyType: 'secret' });
  // The rate is counted at each admission, whichever way the key is presented.
  const second = await admit(db.knex, project.secretKey);
  if ('refused' in first || 'refused' in second) throw new Error('the live key was refused');
  expect(second.rate.points).toBe(first.rate.points + 1);
  expect(await admit(db.knex, { ...presented, hash: hashKey(`${project.secretKey}x`) })).toEqual({ refused: 'invalid' });
  expect(await admit(db.knex, { ...presented, type: 'public' })).toEqual({ refused: 'invalid' });
  await revokeKey(first.keyId);
  expect(await admit(db.knex, presented)).toEqual({ refused: 'invalid' });
});

test('with prepared statements off (DATABASE_PREPARED_STATEMENTS=false, behind PgBouncer 1.18), named statements run unnamed and answer the same', async () => {
  const sql = 'SELECT ?::int * 2 AS d';
  const run = preparedStatement('test_prepared_off', sql);
  const prepared = async (knex: typeof db.knex) => (await knex.raw('SELECT name FROM pg_prepared_statements ORDER BY name')).rows.map((r: { name: string }) => r.name);
  // One connection each, so the session asked is the one that ran the statements.
  const on = createKnex(db.url, { poolMax: 1 });
  const off = createKnex(db.url, { poolMax: 1, preparedStatements: false });
  try {
    for (const knex of [on, off]) {
      expect((await run(knex, [21])).rows).toEqual([{ d: 42 }]);
      expect((await knex.raw('SELECT ?::int + 1 AS s', [1]).options({ name: 'test_knex_named' })).rows).toEqual([{ s: 2 }]);
    }
    expect(await prepared(on)).toEqual(['test_knex_named', 'test_prepared_off']);
    expect(await prepared(off)).toEqual([]);
  } finally {
    await on.destroy();
    await off.destroy();
  }
});

test('a statement with its generic plan pinned: the same rows, a generic plan at every execution, the session\'s setting as it was, after a failure too', async () => {
  const sql = 'SELECT x, 10 / ?::int AS q FROM unnest(?::text[]) AS u(x) ORDER BY x';
  const pinned = preparedStatement('test_prepared_generic', sql, { genericPlan: true });
  const plain = preparedStatement('test_prepared_plain', sql);
  // One connection, so the session asked is the one that ran the statements.
  const knex = createKnex(db.url, { poolMax: 1 });
  const plans = async () => (await knex.raw(`SELECT name, generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements
    WHERE name IN ('test_prepared_generic', 'test_prepared_plain') ORDER BY name`)).rows;
  const mode = async (db: typeof knex | Parameters<Parameters<typeof knex.transaction>[0]>[0]) => (await db.raw('SHOW plan_cache_mode')).rows[0].plan_cache_mode;
  try {
    for (let i = 0; i < 3; i++) {
      expect((await pinned(knex, [2, ['b', 'a']])).rows).toEqual([{ x: 'a', q: 5 }, { x: 'b', q: 5 }]);
      expect((await plain(knex, [2, ['b', 'a']])).rows).toEqual([{ x: 'a', q: 5 }, { x: 'b', q: 5 }]);
    }
    // PostgreSQL's own choice makes 5 custom plans first; the pinned statement never has one.
    expect(await plans()).toEqual([{ name: 'test_prepared_generic', generic: 3, custom: 0 }, { name: 'test_prepared_plain', generic: 0, custom: 3 }]);
    expect(await mode(knex)).toBe('auto');
    await expect(pinned(knex, [0, ['a']])).rejects.toMatchObject({ code: '22012' });
    expect(await mode(knex)).toBe('auto');
    // In the caller's transaction: the setting is the transaction's again after the statement, and after its rollback.
    await knex.transaction(async (trx) => {
      await trx.raw('SET LOCAL plan_cache_mode = force_custom_plan');
      expect((await pinned(trx, [5, ['c']])).rows).toEqual([{ x: 'c', q: 2 }]);
      expect(await mode(trx)).toBe('auto'); // RESET: the server's default, not the transaction's SET LOCAL
    });
    await expect(knex.transaction(async (trx) => { await pinned(trx, [0, ['c']]); })).rejects.toMatchObject({ code: '22012' });
    expect(await mode(knex)).toBe('auto');
    // The failed executions were planned too (generic, before they failed).
    expect(await plans()).toEqual([{ name: 'test_prepared_generic', generic: 6, custom: 0 }, { name: 'test_prepared_plain', generic: 0, custom: 3 }]);
    // A value pg cannot send fails before anything is sent, and the connection goes on.
    await expect(pinned(knex, [1, { toPostgres: () => { throw new Error('no value'); } }])).rejects.toThrow('no value');
    expect((await pinned(knex, [1, ['d']])).rows).toEqual([{ x: 'd', q: 10 }]);
  } finally {
    await knex.destroy();
  }
  // Sent unnamed (behind a transaction pooler): planned at each execution, as pg sends it, and the same rows.
  const off = createKnex(db.url, { poolMax: 1, preparedStatements: false });
  try {
    expect((await pinned(off, [2, ['b', 'a']])).rows).toEqual([{ x: 'a', q: 5 }, { x: 'b', q: 5 }]);
    expect((await off.raw('SELECT count(*)::int AS n FROM pg_prepared_statements')).rows).toEqual([{ n: 0 }]);
  } finally {
    await off.destroy();
  }
});

test('a generic plan\'s planner settings are in force at the statement and as they were after it, after a failure too', async () => {
  const run = preparedStatement('test_prepared_settings', "SELECT current_setting('enable_sort') AS sort, current_setting('enable_bitmapscan') AS bitmap, 10 / ?::int AS q",
    { genericPlan: true, plannerSettings: { enable_sort: 'off', enable_bitmapscan: 'off' } });
  const knex = createKnex(db.url, { poolMax: 1 });
  const shown = async () => (await knex.raw("SELECT current_setting('enable_sort') AS sort, current_setting('enable_bitmapscan') AS bitmap")).rows[0];
  try {
    expect((await run(knex, [2])).rows).toEqual([{ sort: 'off', bitmap: 'off', q: 5 }]);
    expect(await shown()).toEqual({ sort: 'on', bitmap: 'on' });
    await expect(run(knex, [0])).rejects.toMatchObject({ code: '22012' });
    expect(await shown()).toEqual({ sort: 'on', bitmap: 'on' });
    expect((await run(knex, [5])).rows).toEqual([{ sort: 'off', bitmap: 'off', q: 2 }]);
  } finally {
    await knex.destroy();
  }
  expect(() => preparedStatement('test_prepared_bad', 'SELECT 1', { genericPlan: true, plannerSettings: { 'enable_sort; DROP TABLE x': 'off' } })).toThrow(/a planner setting/);
});

test('a statement planned for its values runs with its settings in force, and the session\'s as they were after it', async () => {
  const sql = "SELECT current_setting('max_parallel_workers_per_gather') AS workers, 10 / $1::int AS q, $2::text AS t";
  const shown = async (k: typeof db.knex) => (await k.raw("SELECT current_setting('max_parallel_workers_per_gather') AS workers")).rows[0].workers;
  for (const preparedStatements of [true, false]) {
    const knex = createKnex(db.url, { poolMax: 1, ...(preparedStatements ? {} : { preparedStatements: false }) });
    try {
      const before = await shown(knex);
      expect(before).not.toBe('0');
      expect((await withSettings(knex, sql, [2, 'x'], { max_parallel_workers_per_gather: '0' })).rows).toEqual([{ workers: '0', q: 5, t: 'x' }]);
      expect(await shown(knex)).toBe(before);
      await expect(withSettings(knex, sql, [0, 'x'], { max_parallel_workers_per_gather: '0' })).rejects.toMatchObject({ code: '22012' });
      expect(await shown(knex)).toBe(before);
      // In a transaction: on its connection, and the transaction goes on.
      await knex.transaction(async (trx) => {
        await trx.raw('SELECT 1');
        expect((await withSettings(trx, sql, [1, 'y'], { max_parallel_workers_per_gather: '0' })).rows).toEqual([{ workers: '0', q: 10, t: 'y' }]);
        expect(await shown(trx as unknown as typeof knex)).toBe(before);
      });
      for (let i = 0; i < 6; i++) expect((await withSettings(knex, sql, [i + 1, 'z'], { max_parallel_workers_per_gather: '0' })).rows[0].q).toBe(Math.floor(10 / (i + 1)));
      // Prepared once on the connection and planned for its values at every run, past the five after which PostgreSQL's
      // own choice (plan_cache_mode auto) may take the generic plan (8 plans: the run of 10 / 0 failed in its planning, where
      // PostgreSQL folds the constant); behind a pooler, sent unnamed and nothing prepared.
      const statements = (await knex.raw(`SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name LIKE 'herald_custom_%'`)).rows;
      expect(statements).toEqual(preparedStatements ? [{ generic_plans: 0, custom_plans: 8 }] : []);
    } finally {
      await knex.destroy();
    }
  }
  await expect(withSettings(db.knex, 'SELECT 1', [], { 'work_mem = 1; DROP TABLE x; --': '1' })).rejects.toThrow(/a planner setting/);
});

test('a statement with its values written in answers as with them bound: quotes, backslashes, NULL, arrays, dates, JSON, bytes', async () => {
  const text = `SELECT $1::text AS quote, $2::text AS slash, $3::int AS none, $4::text[] AS arr, $5::timestamptz AS at, $6::jsonb AS doc,
                       $7::bytea AS bytes, $8::int + 1 AS n, $9::uuid AS kept, $10::text AS again, $9::uuid AS kept2, make_interval(days => $11) AS i`;
  const cursor = '01a22b63-5e27-7df2-b4c9-3501f244730a';
  const bindings = ["it's a '; DROP TABLE contacts; --", 'C:\\path\\$1 and ?', null, ['a', "b'c", null], new Date('2026-12-01T02:03:04.005Z'),
    { plan: "pro'", nested: [1, '\\'] }, Buffer.from([0, 1, 255]), 41, cursor, 'x', 30];
  const bound = (await withSettings(db.knex, text, bindings, {})).rows;
  const { text: valued, params } = valuedText(text, bindings, (v) => v === cursor);
  // The cursor alone is a parameter, numbered $1 wherever it stood; every other value is a literal in the text (the one
  // `$1` inside a literal is text, not a parameter).
  expect(params).toEqual([cursor]);
  expect(valued).not.toMatch(/\$([02-9]|1\d)/);
  expect(valued).toContain("'it''s a ''; DROP TABLE contacts; --'");
  expect((await withSettings(db.knex, valued, params, {})).rows).toEqual(bound);
  expect(() => valuedText('SELECT $2', [1], () => false)).toThrow(/\$2 has no binding/);
});

test('valued statements: planned once per connection, and each connection keeps the last few it ran, closing the others', async () => {
  const knex = createKnex(db.url, { poolMax: 1 });
  const prepared = async () => (await knex.raw(`SELECT name, generic_plans, custom_plans FROM pg_prepared_statements WHERE name LIKE 'test_valued_%'`)).rows as { name: string; generic_plans: number; custom_plans: number }[];
  try {
    const run = (k: number) => genericStatementOf('test_valued', `SELECT ${k} AS k, $1::int AS v`, { perConnection: 3 });
    for (let round = 0; round < 2; round++) {
      for (let k = 0; k < 5; k++) expect((await run(k)(knex, [round])).rows).toEqual([{ k, v: round }]);
    }
    // Five texts run twice, a connection that keeps three: the last three are prepared, each with its one plan used since.
    const kept = await prepared();
    expect(kept).toHaveLength(3);
    expect(kept.every((s) => s.custom_plans === 0 && s.generic_plans === 1)).toBe(true);
    // The same text again: no new statement; an old one again: prepared anew, the least recently run closed.
    expect((await run(4)(knex, [9])).rows).toEqual([{ k: 4, v: 9 }]);
    expect((await run(0)(knex, [8])).rows).toEqual([{ k: 0, v: 8 }]);
    expect(await prepared()).toHaveLength(3);
    expect((await prepared()).map((s) => s.generic_plans).sort()).toEqual([1, 1, 2]);
  } finally {
    await knex.destroy();
  }
});

test('valued statements behind a transaction pooler (DATABASE_PREPARED_STATEMENTS=false) run unnamed, answer the same and leave nothing prepared', async () => {
  // Sent as pg sends an unnamed statement, planned at each execution (SettingsQuery), as the other named statements are there.
  const off = createKnex(db.url, { poolMax: 1, preparedStatements: false });
  try {
    for (let round = 0; round < 2; round++) {
      for (let k = 0; k < 4; k++) {
        const run = genericStatementOf('test_valued_off', `SELECT ${k} AS k, $1::int AS v, 'it''s' AS t`, { perConnection: 2 });
        expect((await run(off, [k * 10 + round])).rows).toEqual([{ k, v: k * 10 + round, t: "it's" }]);
      }
    }
    expect((await off.raw('SELECT count(*)::int AS n FROM pg_prepared_statements')).rows[0].n).toBe(0);
  } finally {
    await off.destroy();
  }
});
