import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { createKnex } from '../../db/database';
import { MATCH_COUNT_CAP, cappedCount, pageQueries, runListStatement, shapedPageCache, shapedStatementCache, wholeOf, type PageRequest } from '../../db/pages';
import { addressesInByteOrder, listContacts, searchPositionOf, searchStatement, type ContactPageRequest } from '../../db/queries/contacts';
import { createProject } from '../../projects/service';
import { createTestDatabase, type TestDatabase } from '../support/db';

/**
 * db/pages.ts shapedPageCache and shapedStatementCache: a list's statement built and compiled once per shape, each run
 * binding the request's own values where the shape's stand-ins were bound (listEmails runs its pages so, listContacts
 * its searches).
 */
let db: TestDatabase;
const [a, b] = [randomUUID(), randomUUID()];

beforeAll(async () => {
  db = await createTestDatabase();
  await db.knex.raw('CREATE TABLE shaped_items (id uuid PRIMARY KEY, project_id uuid NOT NULL, kind text NOT NULL)');
  // Ids in order of insertion (a time-ordered uuid), 30 items in each project, every third a "red" one.
  await db.knex.raw(`INSERT INTO shaped_items
    SELECT herald_uuidv7(), p, CASE WHEN i % 3 = 0 THEN 'red' ELSE 'blue' END FROM unnest(?::uuid[]) AS p, generate_series(1, 30) AS i`, [[a, b]]);
});
afterAll(async () => { await db.close(); });

type Bounds = { projectId: string; kind: string | undefined };

const filtered = (knex: Knex, v: Bounds) => () => {
  const q = knex('shaped_items').where('project_id', v.projectId).select('id', 'project_id', 'kind');
  if (v.kind !== undefined) q.where('kind', v.kind);
  return q;
};
const build = (knex: Knex) => (v: Bounds, r: PageRequest) => {
  const { page } = pageQueries(filtered(knex, v), r);
  return { page, count: cappedCount(filtered(knex, v), 1000, 'id'), options: { genericPlan: true, whole: wholeOf(r) } };
};

test('each project, filter and cursor answers its own rows through one compiled statement per shape', async () => {
  const pages = shapedPageCache<Bounds>();
  const built: string[] = [];
  const counting = (knex: Knex) => (v: Bounds, r: PageRequest) => { built.push(JSON.stringify(r)); return build(knex)(v, r); };
  const direct = async (v: Bounds, r: PageRequest) => {
    const q = db.knex('shaped_items').where('project_id', v.projectId).modify((x) => { if (v.kind) x.where('kind', v.kind); if (r.afterId) x.where('id', '<', r.afterId); });
    return (await q.clone().select('id', 'project_id', 'kind').orderBy('id', 'desc').limit(r.limit + 1)) as Record<string, unknown>[];
  };
  for (const projectId of [a, b, a]) {
    for (const kind of [undefined, 'red', 'blue']) {
      const first = await pages(db.knex, { limit: 4 }, { projectId, kind }, counting(db.knex));
      expect(first.rows).toEqual(await direct({ projectId, kind }, { limit: 4 }));
      expect(first.rows.every((r) => r.project_id === projectId && (kind === undefined || r.kind === kind))).toBe(true);
      expect(first.total).toBe(kind === undefined ? 30 : kind === 'red' ? 10 : 20);
      const afterId = first.rows[3]!.id as string;
      const next = await pages(db.knex, { limit: 4, afterId }, { projectId, kind }, counting(db.knex));
      expect(next.rows).toEqual(await direct({ projectId, kind }, { limit: 4, afterId }));
      expect((next.rows[0]!.id as string) < afterId).toBe(true);
    }
  }
  // Shapes: with or without a kind, first page or after a cursor: four, each built once for 18 pages.
  expect(built).toHaveLength(4);
});

test('a value the statement does not bind, or one written into its text, is refused as the shape is compiled', async () => {
  const pages = shapedPageCache<Bounds>();
  // The kind left out of the statement: its pages would list every kind.
  const forgetful = (v: Bounds, r: PageRequest) => build(db.knex)({ ...v, kind: undefined }, r);
  await expect(pages(db.knex, { limit: 4 }, { projectId: a, kind: 'red' }, forgetful)).rejects.toThrow(/does not bind kind/);
  // Nor the cursor.
  const noCursor = (v: Bounds, r: PageRequest) => build(db.knex)(v, { limit: r.limit });
  await expect(pages(db.knex, { limit: 4, afterId: randomUUID() }, { projectId: a, kind: undefined }, noCursor)).rejects.toThrow(/does not bind the cursor/);
  // A statement planned for its values writes them into its text: one statement per value, not per shape.
  const valued = (v: Bounds, r: PageRequest) => ({ ...build(db.knex)(v, r), options: { plannedOnce: {} } });
  await expect(pages(db.knex, { limit: 4 }, { projectId: a, kind: undefined }, valued)).rejects.toThrow(/binds its values/);
});

test('a statement compiled once per shape binds each request\'s values; a value it does not bind is refused', async () => {
  const statements = shapedStatementCache<Bounds>();
  const built: string[] = [];
  const build = (v: Bounds) => {
    built.push('x');
    return filtered(db.knex, v)().orderBy('id', 'desc');
  };
  for (const projectId of [a, b]) {
    for (const kind of ['red', 'blue', undefined]) {
      const { sql, bindings } = statements('all', { projectId, kind }, build);
      const { rows } = await db.knex.raw(sql.replace(/\$(\d+)/g, '?'), bindings as never[]);
      expect(rows).toEqual(await filtered(db.knex, { projectId, kind })().orderBy('id', 'desc'));
    }
  }
  expect(built).toHaveLength(2); // with a kind, and without
  expect(() => statements('forgetful', { projectId: a, kind: 'red' }, (v) => filtered(db.knex, { ...v, kind: undefined })())).toThrow(/does not bind kind/);
  expect(() => statements('written', { projectId: a, kind: 'red' }, (v) => db.knex('shaped_items').whereRaw(`kind = '${v.kind}'`).where('project_id', v.projectId))).toThrow(/never writes them in/);
});

test('contact searches compiled once per shape answer as the statement built for each request does', async () => {
  const project = await createProject('Searches');
  // With characters a LIKE escapes (`_`, `%`, `\`) and beyond ASCII: the addresses that begin with a term are a range of
  // bytes where the database compares them so (listContacts), `LIKE 'term%'` in the statement built here.
  const names = ['grace', 'grace.hopper', 'adele.e87', 'ruth.a9ea50495030', 'dennis.69', 'evelyn', 'zoë_b.x12', 'a%b\\c', 'ëmile'];
  await db.knex('contacts').insert(Array.from({ length: 120 }, (_, i) => ({
    project_id: project.id, email: `${names[i % names.length]}${i}@${i % 2 ? 'corp' : 'mail'}.example`, subscribed: i % 3 !== 0,
  })));
  const terms = ['grace', 'race', 'adele.e87', 'ruth.a9ea50495030', 'a9ea5', 'dennis.69', 'evelyn1@mail.example', '%', 'nobody',
    'zoë', 'zoë_b.x12', 'ë', '_', 'a%b\\', 'ëmile1', 'zz\u{10FFFF}'];
  // Behind a transaction pooler (DATABASE_PREPARED_STATEMENTS=false) the generic statements are sent unnamed, planned
  // for their values: the same pages.
  const pooled = createKnex(db.url, { poolMax: 1, preparedStatements: false });
  try {
    for (const search of terms) {
      for (const subscribed of [undefined, false]) {
        let page: ContactPageRequest = { limit: 7 };
        for (let n = 0; n < 4; n++) {
          const listed = await listContacts(db.knex, project.id, { search, subscribed }, page);
          const direct = await runListStatement(db.knex, searchStatement(db.knex, project.id, { search, subscribed }, page));
          expect(listed.rows.map((c) => c.id)).toEqual(direct.rows.map((r) => r.id));
          expect(listed.total).toBe(Math.min(direct.total, MATCH_COUNT_CAP));
          const behindPooler = await listContacts(pooled, project.id, { search, subscribed }, page);
          expect(behindPooler.rows.map((c) => c.id)).toEqual(direct.rows.map((r) => r.id));
          expect(behindPooler.total).toBe(listed.total);
          const last = listed.rows.slice(0, page.limit).at(-1);
          if (!last || listed.rows.length <= page.limit) break;
          page = { limit: 7, ...searchPositionOf(search, last) };
        }
      }
    }
    expect((await pooled.raw('SELECT count(*)::int AS n FROM pg_prepared_statements')).rows[0].n).toBe(0);
  } finally {
    await pooled.destroy();
  }
});

test('a shape whose build binds the request\'s own project id, not its stand-in, is refused', async () => {
  const pages = shapedPageCache<Bounds>();
  // The project taken from the caller: the first request's project would be every later request's.
  const captured = (projectId: string) => (v: Bounds, r: PageRequest) => build(db.knex)({ ...v, projectId }, r);
  await expect(pages(db.knex, { limit: 4 }, { projectId: a, kind: undefined }, captured(a))).rejects.toThrow(/binds an id of the request itself/);
  const statements = shapedStatementCache<Bounds>();
  expect(() => statements('captured', { projectId: b, kind: 'red' }, (v) => filtered(db.knex, { ...v, projectId: b })())).toThrow(/binds an id of the request itself/);
});

test('in a database that does not compare addresses byte by byte, a search asks LIKE for the addresses that begin with its term, and finds the same', async () => {
  const project = await createProject('Collated');
  const emails = ['grace.hopper@example.com', 'grace-h@example.com', 'gracé@example.com', 'Grace@example.com', 'x.grace.h@example.com', 'adele.e87@example.com', 'adele-e87@example.com'];
  await db.knex('contacts').insert(emails.map((email) => ({ project_id: project.id, email })));
  const found = async (knex: Knex, search: string) => (await listContacts(knex, project.id, { search }, { limit: 100 })).rows.map((c) => c.email).sort();
  const terms = ['grace', 'grace.h', 'grace-', 'adele.e87', 'e87', 'gracé'];
  const inBytes = await Promise.all(terms.map((t) => found(db.knex, t)));
  expect(await addressesInByteOrder(db.knex)).toBe(true);
  expect(inBytes[1]).toEqual(['grace.hopper@example.com', 'x.grace.h@example.com']);
  const trx = await db.knex.transaction();
  try {
    // An ICU collation (PostgreSQL's own, of a language): `.` and `-` weigh little, and no byte range is a prefix's.
    await trx.raw('ALTER TABLE contacts ALTER COLUMN email TYPE text COLLATE "en-x-icu"');
    expect(await addressesInByteOrder(trx)).toBe(false);
    for (const [i, t] of terms.entries()) expect(await found(trx, t)).toEqual(inBytes[i]);
  } finally {
    await trx.rollback();
  }
});
