import type { Knex } from 'knex';
import { contactListQueries, listContacts, searchStatement } from '../../db/queries/contacts';
import { createProject } from '../../projects/service';
import { createTestDatabase, type TestDatabase, vacuumAnalyze } from '../support/db';
import { analyzedPlanOfCall, partitionedPlan } from '../support/plans';

/**
 * Every query path of the contacts list is served by an index (the migration names which). The plans are read
 * from EXPLAIN of the very SQL the list code builds, on enough rows (50 projects) that a sequential scan would lose.
 */
let db: TestDatabase;
let projectId: string;
let afterId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  // A multi-tenant table: 50 projects of 2,000 contacts each, inserted interleaved as they would arrive.
  const projects: string[] = [];
  for (let i = 0; i < 50; i++) projects.push((await createProject(`p${i}`)).id);
  projectId = projects[0]!;
  await db.knex.raw(
    `INSERT INTO contacts (project_id, email, subscribed, data)
     SELECT (?::uuid[])[1 + g % 50], 'user' || g || '@' || (CASE WHEN g % 7 = 0 THEN 'acme.io' ELSE 'example.com' END), g % 2 = 0, '{}'::jsonb
     FROM generate_series(1, 100000) g`, [projects]);
  await vacuumAnalyze(db.knex, ['contacts']);
  afterId = (await db.knex('contacts').where({ project_id: projectId }).orderBy('id', 'desc').offset(1000).first('id')).id;
});
afterAll(async () => { await db.close(); });

async function plan(builder: { toSQL(): { sql: string; bindings: readonly unknown[] } }): Promise<string> {
  const { sql, bindings } = builder.toSQL();
  const res = await db.knex.raw(`EXPLAIN ${sql}`, bindings as Knex.RawBinding[]);
  return partitionedPlan(res.rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n'));
}

test.each([
  ['first page', {}, undefined, 'contacts_pkey'],
  ['page after a cursor', {}, 'cursor', 'contacts_pkey'],
  ['subscribed filter', { subscribed: true }, 'cursor', 'contacts_project_subscribed_id_idx'],
])('list page: %s uses %s', async (_name, filter, cursor, index) => {
  const { page } = contactListQueries(db.knex, projectId, filter, { limit: 20, afterId: cursor ? afterId : undefined });
  const p = await plan(page);
  expect(p).toContain(index);
  expect(p).not.toMatch(/Seq Scan/);
});

test.each([
  ['all', {}],
  ['subscribed', { subscribed: false }],
])('list total: %s reads only the project through an index', async (_name, filter) => {
  const { count } = contactListQueries(db.knex, projectId, filter, { limit: 20 });
  const p = await plan(count as never);
  // The project in the index's condition (the search's trigram index leads with the address, then the project).
  expect(p).toMatch(/Index Cond: \(.*\bproject_id = /);
  expect(p).not.toMatch(/Seq Scan/);
});

/** The plan of a search's statement (page and count together), as listContacts runs it. */
async function searchPlan(search: string, after: { afterId?: string; afterEmail?: string } = {}): Promise<string> {
  return plan(searchStatement(db.knex, projectId, { search }, { limit: 20, ...after }));
}

test.each([
  ['one address', 'user4242@', {}],
  ['a broad term', 'acme', {}],
  ['a broad term after an address', 'user1', { afterEmail: 'user1234@example.com' }],
  ['a broad term after an id', 'acme', { afterId: 'cursor' }],
])('a search (%s) reads the addresses that begin with it from the address index, the others through an index, never the table', async (_name, search, after) => {
  const p = await searchPlan(search, 'afterId' in after ? { afterId } : after);
  expect(p).toContain('contacts_project_email_key');
  // Every read names the project in its index's condition: the primary key walked newest first, or the trigram index
  // (which leads with the address, then the project) read by a bitmap and sorted; which one turns on ANALYZE's sample.
  expect(p).toMatch(/Index Cond: \(.*\bproject_id = /);
  expect(p).not.toMatch(/Seq Scan/);
});

test('a search\'s first page reads each part of its matches once: its rows are the first of those its count read', async () => {
  // Each read of contacts that tests the term (a Filter or a bitmap's Recheck Cond with the LIKE, or the range of the
  // addresses that begin with it in an Index Cond): one per part.
  for (const search of ['acme', 'user1999']) {
    const nodes = await analyzedPlanOfCall(db.knex, () => listContacts(db.knex, projectId, { search }, { limit: 20 }));
    const conditions = (n: object) => ['Filter', 'Recheck Cond', 'Index Cond'].map((k) => String((n as Record<string, unknown>)[k] ?? '')).join(' ');
    const tested = nodes.filter((n) => n['Relation Name'] === 'contacts' && /~~|email >= /.test(conditions(n)));
    expect(tested).toHaveLength(2);
  }
  // And the page is what the two parts read apart give, with its total.
  for (const search of ['acme', 'user1']) {
    const listed = await listContacts(db.knex, projectId, { search }, { limit: 20 });
    const scoped = () => db.knex('contacts').where({ project_id: projectId });
    const prefixed = await scoped().where('email', 'like', `${search}%`).orderBy('email').pluck('id');
    const others = await scoped().where('email', 'like', `%${search}%`).whereNot('email', 'like', `${search}%`).orderBy('id', 'desc').pluck('id');
    expect(listed.rows.map((c) => c.id)).toEqual([...prefixed, ...others].slice(0, 21));
    const matching = prefixed.length + others.length;
    expect({ total: listed.total, totalExact: listed.totalExact }).toEqual({ total: Math.min(matching, 100), totalExact: matching <= 100 });
  }
});

test('authentication looks keys up by index', async () => {
  // This file's api_keys holds a few rows, which a sequential scan reads as fast once autovacuum has analysed the
  // table: the question is whether an index serves the lookup, so sequential scans are priced out.
  const res = await db.knex.transaction(async (trx): Promise<{ rows: { 'QUERY PLAN': string }[] }> => {
    await trx.raw('SET LOCAL enable_seqscan = off');
    return await trx.raw("EXPLAIN SELECT k.id FROM api_keys k JOIN projects p ON p.id = k.project_id WHERE k.lookup = 'x' AND k.revoked_at IS NULL");
  });
  expect(res.rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n')).toContain('api_keys_lookup_key');
});

test('upsert conflicts and lookups by email use the unique index', async () => {
  const res = await db.knex.raw('EXPLAIN SELECT id FROM contacts WHERE project_id = ?::uuid AND email = ?', [projectId, 'user5@example.com']);
  expect(res.rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n')).toContain('contacts_project_email_key');
});

test('ids are time-ordered UUIDv7', async () => {
  const ids = (await db.knex('contacts').where({ project_id: projectId }).orderBy('created_at').limit(3).select('id')).map((r) => r.id as string);
  for (const id of ids) expect(id[14]).toBe('7');
  const { id } = (await db.knex.raw('SELECT herald_uuidv7() AS id')).rows[0];
  expect(id > ids[0]!).toBe(true);
});
