import type { Knex } from 'knex';
import pg from 'pg';
import * as emailFirst from '../../db/migrations/20261212000001_contact_search_email_first';
import { KEYLESS_SHARE, addressesInByteOrder, filteredContacts, listContacts, projectShare, searchPattern, searchPositionOf, searchStatement } from '../../db/queries/contacts';
import { runListStatement } from '../../db/pages';
import { createProject } from '../../projects/service';
import { createTestDatabase, type TestDatabase, vacuumAnalyze } from '../support/db';

/**
 * The contact search's trigram index leads with the address (migration 20261212000001): a search for a rare term reads
 * the index pages of its matches, not every contact of its project. Read as pages (EXPLAIN's shared buffers), which do
 * not depend on the machine's speed: the same search against the index in the former order, built in a transaction
 * that is rolled back.
 */
let db: TestDatabase;
let big: string;
let small: string;

beforeAll(async () => {
  db = await createTestDatabase();
  big = (await createProject('Big')).id;
  small = (await createProject('Small')).id;
  await db.knex.raw(
    `INSERT INTO contacts (project_id, email)
     SELECT CASE WHEN g % 20 = 0 THEN ?::uuid ELSE ?::uuid END,
            (ARRAY['joan', 'anita', 'jude', 'lynn', 'grace', 'omar', 'wei', 'sofia', 'ravi', 'ines'])[1 + g % 10] || '.' || substr(md5(g::text), 1, 6) || g || '@example.com'
     FROM generate_series(1, 200000) g`,
    [small, big]);
  await vacuumAnalyze(db.knex, ['contacts']);
});
afterAll(async () => { await db.close(); });

const definition = async (knex: Knex) =>
  (await knex.raw(`SELECT pg_get_indexdef('contacts_email_trgm_idx'::regclass) AS def, (SELECT reloptions FROM pg_class WHERE relname = 'contacts_email_trgm_idx') AS options`)).rows[0] as { def: string; options: string[] };

/** The index pages the bitmap scan of the search's statement read. */
async function indexPages(knex: Knex, projectId: string, search: string, asIs = false): Promise<{ index: string; pages: number; rows: number }> {
  const { sql, bindings } = (asIs ? knex('contacts').where('project_id', projectId).where('email', 'like', `%${search}%`) : filteredContacts(knex, projectId, { search })).select('id').toSQL();
  const { rows } = await knex.raw(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`, bindings as Knex.RawBinding[]);
  const found: { index: string; pages: number; rows: number }[] = [];
  const walk = (node: Record<string, unknown>) => {
    if (node['Node Type'] === 'Bitmap Index Scan') found.push({ index: node['Index Name'] as string, pages: node['Shared Hit Blocks'] as number + (node['Shared Read Blocks'] as number), rows: node['Actual Rows'] as number });
    for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
  };
  walk(rows[0]['QUERY PLAN'][0].Plan);
  expect(found).toHaveLength(1);
  return found[0]!;
}

test('the index leads with the address and keeps its pending-list limit', async () => {
  const { def, options } = await definition(db.knex);
  expect(def).toContain('USING gin (email gin_trgm_ops, project_id)');
  expect(options).toContain('gin_pending_list_limit=8192');
});

test('a rare term reads fewer pages than with the project first in a large project, about as many in a small one', async () => {
  // A support person's paste: an address of each project.
  const address = async (projectId: string) => (await db.knex('contacts').where({ project_id: projectId }).orderBy('id').offset(4242).first('email')).email as string;
  const rare = { big: await address(big), small: await address(small) };
  const now = { big: await indexPages(db.knex, big, rare.big), small: await indexPages(db.knex, small, rare.small) };
  const trx = await db.knex.transaction();
  let before: typeof now;
  try {
    await trx.raw('DROP INDEX contacts_email_trgm_idx');
    await trx.raw('CREATE INDEX contacts_email_trgm_idx ON contacts USING gin (project_id, email gin_trgm_ops)');
    before = { big: await indexPages(trx, big, rare.big), small: await indexPages(trx, small, rare.small) };
  } finally {
    await trx.rollback();
  }
  for (const side of ['big', 'small'] as const) {
    expect(now[side].index).toBe('contacts_email_trgm_idx');
    // The same matches either way (user4242, user42420…, user424200 and so on: the LIKE's candidates)…
    expect(now[side].rows).toBe(before[side].rows);
  }
  // …found in fewer pages in the large project (64 against 106 here at 190,000 contacts; 141 against 362 at 1,000,000),
  // and in about as many in the small one beside it (78 against 72: the trigrams' matches of both projects lead).
  expect(now.big.pages).toBeLessThan(before.big.pages * 0.75);
  expect(now.small.pages).toBeLessThan(before.small.pages * 1.25);
});

test('a term of two words asks for their inner trigrams: fewer pages than the term as it is, the same matches', async () => {
  // A name, a dot and the first three characters of a word that begins with an e, as `example` does: the term as it is
  // asks for `  e` and ` e?` of the word's edge too, in nearly every address of the project.
  const { email } = await db.knex('contacts').where({ project_id: big }).whereRaw("email ~ '^[a-z]+\\.e[0-9a-f]{2}'").orderBy('id').first('email');
  const term = email.slice(0, email.indexOf('.') + 4);
  const apart = await indexPages(db.knex, big, term);
  const asIs = await indexPages(db.knex, big, term, true);
  const matches = async (q: Knex.QueryBuilder) => (await q.select('id').orderBy('id')).map((r: { id: string }) => r.id);
  expect(await matches(filteredContacts(db.knex, big, { search: term }))).toEqual(await matches(db.knex('contacts').where('project_id', big).where('email', 'like', `%${term}%`)));
  expect(apart.index).toBe('contacts_email_trgm_idx');
  // 61 pages against 118 here (`lynn.ecc`: 31 candidates against 10, each checked by strpos); at 1,000,000 contacts
  // such a search took 3-6 ms against 13-17 (BENCHMARKS.md section 63).
  expect(apart.pages).toBeLessThan(asIs.pages * 0.7);
});

/** Every node of a plan (EXPLAIN … FORMAT JSON), depth first, with the InitPlans and CTEs under it. */
function nodesOf(plan: Record<string, unknown>): Record<string, unknown>[] {
  return [plan, ...((plan.Plans as Record<string, unknown>[] | undefined) ?? []).flatMap(nodesOf)];
}

async function explained(knex: Knex, statement: Knex.Raw): Promise<Record<string, unknown>[]> {
  const { sql, bindings } = statement.toSQL();
  const { rows } = await knex.raw(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`, bindings as Knex.RawBinding[]);
  return nodesOf(rows[0]['QUERY PLAN'][0].Plan);
}

/** The scans of a plan node's own subtree, without its InitPlans (the count of `pre` beside `rest`, say). */
const readsOf = (node: Record<string, unknown>): Record<string, unknown>[] =>
  [node, ...((node.Plans as Record<string, unknown>[] | undefined) ?? []).filter((c) => !String(c['Subplan Name'] ?? '').startsWith('InitPlan')).flatMap(readsOf)]
    .filter((n) => n['Relation Name'] === 'contacts' || n['Index Name'] !== undefined);

test('a term that begins 101 addresses or more is answered from the address B-tree: the other matches are never read', async () => {
  // `grace.0`: 1,250 addresses of the large project begin with it (a name and a hex digit), as a person types one.
  const term = 'grace.0';
  const nodes = await explained(db.knex, searchStatement(db.knex, big, { search: term }, { limit: 50 }));
  // The rest (the addresses that hold the term elsewhere) is not read: whichever plan it has, none of its scans ran.
  const rest = readsOf(nodes.find((n) => n['Subplan Name'] === 'CTE rest')!);
  expect(rest.length).toBeGreaterThan(0);
  for (const n of rest) expect(n['Actual Loops']).toBe(0);
  const range = nodes.filter((n) => n['Index Name'] === 'contacts_project_email_key');
  expect(range.map((n) => n['Node Type'])).toEqual(['Index Scan']);
  expect(range[0]!['Actual Rows']).toBe(101);
  // Newest first among every match, as a search read before, the trigram index handed over all of them and their rows.
  const matches = Number((await db.knex('contacts').where('project_id', big).where('email', 'like', `%${term}%`).count('* as n').first())!.n);
  expect(matches).toBeGreaterThan(1000);
});

test('a term that begins more addresses than a page holds, under the cap, leaves the others unread and its count "at least"', async () => {
  // A name, a dot and two hex digits: ~78 addresses of the large project begin with each, as the bench's terms do.
  const { term, n } = (await db.knex.raw(
    `SELECT left(email, 8) AS term, count(*)::int AS n FROM contacts WHERE project_id = ? GROUP BY 1 HAVING count(*) BETWEEN 52 AND 100 ORDER BY 1 LIMIT 1`, [big])).rows[0] as { term: string; n: number };
  const nodes = await explained(db.knex, searchStatement(db.knex, big, { search: term }, { limit: 50 }));
  const rest = readsOf(nodes.find((n) => n['Subplan Name'] === 'CTE rest')!);
  expect(rest.length).toBeGreaterThan(0);
  for (const node of rest) expect(node['Actual Loops']).toBe(0);
  const first = await listContacts(db.knex, big, { search: term }, { limit: 50 });
  expect(first).toMatchObject({ total: n, totalExact: false });
  // The page after the last of the first reads past them: exact.
  const last = first.rows[49]!;
  const second = await listContacts(db.knex, big, { search: term }, { limit: 50, ...searchPositionOf(term, last) });
  expect(second.rows.length).toBe(n - 50);
  expect(second).toMatchObject({ total: n, totalExact: true });
});

test('a term that begins no address reads the others', async () => {
  const { email } = await db.knex('contacts').where({ project_id: big }).orderBy('id').offset(777).first('email');
  const term = email.slice(0, email.indexOf('.') + 4);
  const nodes = await explained(db.knex, searchStatement(db.knex, big, { search: term.slice(1) }, { limit: 50 }));
  const rest = readsOf(nodes.find((n) => n['Subplan Name'] === 'CTE rest')!);
  expect(rest.some((n) => (n['Actual Loops'] as number) > 0)).toBe(true);
});

test('the migration goes down to the former order and up again, and a second run up changes nothing', async () => {
  await emailFirst.down(db.knex);
  expect((await definition(db.knex)).def).toContain('USING gin (project_id, email gin_trgm_ops)');
  await emailFirst.up(db.knex);
  const once = await definition(db.knex);
  const oid = (await db.knex.raw(`SELECT 'contacts_email_trgm_idx'::regclass::oid AS oid`)).rows[0].oid;
  await emailFirst.up(db.knex);
  expect(await definition(db.knex)).toEqual(once);
  expect((await db.knex.raw(`SELECT 'contacts_email_trgm_idx'::regclass::oid AS oid`)).rows[0].oid).toBe(oid);
  expect(once.def).toContain('USING gin (email gin_trgm_ops, project_id)');
  expect(once.options).toContain('gin_pending_list_limit=8192');
});

test('a term of two words whose looser pattern the statistics find common is still read through the trigram index', async () => {
  // 5 % of the large project hold `omar` and then `zed` (`omar.3f2a1c17.zed@…`), none of them `omar.zed`: the column's
  // histogram has entries that hold `%omar%zed%`, the pattern the trigram index is asked with (searchPattern). One
  // address holds the whole term, not at its start (so the part that begins with it finds nothing and the rest is read).
  await db.knex.raw(
    `INSERT INTO contacts (project_id, email)
     SELECT ?::uuid, 'omar.' || substr(md5(g::text), 1, 8) || '.zed' || g || '@example.org' FROM generate_series(1, 10000) g`, [big]);
  const [one] = await db.knex('contacts').insert({ project_id: big, email: 'x.omar.zed@example.org' }).returning('id');
  await vacuumAnalyze(db.knex, ['contacts']);
  const term = 'omar.zed';
  expect(searchPattern(term)).toBe('%omar%zed%');
  const nodes = await explained(db.knex, searchStatement(db.knex, big, { search: term }, { limit: 50 }));
  // The whole term's check is estimated from its letters (a long literal: rare), so the few matches are taken from the
  // index's candidates; with strpos's default third, PostgreSQL expected ~1,000 matches and read the project newest
  // first, every one of its 200,000 contacts, to find 101.
  const rest = readsOf(nodes.find((n) => n['Subplan Name'] === 'CTE rest')!).filter((n) => (n['Actual Loops'] as number) > 0);
  expect(rest.map((n) => n['Index Name']).filter(Boolean)).toEqual(['contacts_email_trgm_idx']);
  const page = await listContacts(db.knex, big, { search: term }, { limit: 50 });
  expect(page.rows.map((c) => c.id)).toEqual([one.id]);
  expect(page).toMatchObject({ total: 1, totalExact: true });
});

test('a term read by searchPattern\'s pattern runs with its shape\'s generic plan: the address range, then the trigram index', async () => {
  expect(await addressesInByteOrder(db.knex)).toBe(true); // the test cluster is made with the C locale, as Herald's
  // A name, a dot and three hex digits that begin one address or a few: searchPattern asks `%anita%3f2%`-like.
  const { email } = await db.knex('contacts').where({ project_id: big }).whereRaw("email ~ '^anita\\.[0-9a-f]{3}'").orderBy('id').offset(11).first('email');
  const term = email.slice(0, 'anita.'.length + 3);
  expect(searchPattern(term)).toBeDefined();
  const statements: { sql: string; bindings: unknown[]; name?: string }[] = [];
  const seen = (q: { sql: string; bindings: unknown[]; options?: { name?: string } }) => statements.push({ sql: q.sql, bindings: q.bindings, name: q.options?.name });
  db.knex.on('query', seen);
  let listed;
  try {
    listed = await listContacts(db.knex, big, { search: term }, { limit: 50 });
  } finally {
    db.knex.off('query', seen);
  }
  const search = statements.find((q) => q.sql.includes('pre AS MATERIALIZED'))!;
  expect(search.name).toMatch(/^herald_generic_/);
  // The same contacts as the statement planned for these values, asking LIKE 'term%'.
  const direct = await runListStatement(db.knex, searchStatement(db.knex, big, { search: term }, { limit: 50 }));
  expect(listed.rows.map((c) => c.id)).toEqual(direct.rows.map((r) => r.id));
  expect(listed.rows.length).toBeGreaterThan(0);
  // Its generic plan: the addresses that begin with the term are a range of the address B-tree, the others come from
  // the trigram index (never the project read newest first).
  const nodes = await db.knex.transaction(async (trx) => {
    await trx.raw(`PREPARE generic_search AS ${search.sql}`);
    await trx.raw('SET LOCAL plan_cache_mode = force_generic_plan');
    // EXECUTE takes its values as literals (a utility statement has no parameters): the bindings are all strings here.
    const { rows } = await trx.raw(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE generic_search(${search.bindings.map((v) => pg.escapeLiteral(v as string)).join(', ')})`);
    await trx.raw('DEALLOCATE generic_search');
    return nodesOf(rows[0]['QUERY PLAN'][0].Plan);
  });
  const pre = readsOf(nodes.find((n) => n['Subplan Name'] === 'CTE pre')!);
  expect(pre.map((n) => [n['Index Name'], n['Node Type']])).toEqual([['contacts_project_email_key', 'Index Scan']]);
  expect(String(pre[0]!['Index Cond'])).toMatch(/email >= \$\d+.*email < \$\d+/);
  const rest = readsOf(nodes.find((n) => n['Subplan Name'] === 'CTE rest')!);
  expect(rest.map((n) => n['Index Name']).filter(Boolean)).toEqual(['contacts_email_trgm_idx']);
});

test('a rare term in a project that holds most of the contacts asks the trigram index without its key, in one with a small share with it; each finds its own contacts alone', async () => {
  // The large project holds 95 % of the table, the small one 5 % (pg_stats, after the ANALYZE of beforeAll).
  expect(await projectShare(db.knex, big)).toBeGreaterThanOrEqual(KEYLESS_SHARE);
  expect(await projectShare(db.knex, small)).toBeLessThan(KEYLESS_SHARE);
  // A name, a dot and three hex digits, and one address of each project that holds it further in: the rest is read.
  const { email } = await db.knex('contacts').where({ project_id: big }).whereRaw("email ~ '^anita\\.[0-9a-f]{3}'").orderBy('id').offset(5).first('email');
  const term = email.slice(0, 'anita.'.length + 3);
  const [bigs] = await db.knex('contacts').insert({ project_id: big, email: `yy.${term}@example.net` }).returning('id');
  const [smalls] = await db.knex('contacts').insert({ project_id: small, email: `zz.${term}@example.net` }).returning('id');
  const searched = async (projectId: string, search = term) => {
    const statements: string[] = [];
    const seen = (q: { sql: string }) => { if (q.sql.includes('rest AS MATERIALIZED')) statements.push(q.sql); };
    db.knex.on('query', seen);
    try {
      const page = await listContacts(db.knex, projectId, { search }, { limit: 50 });
      return { ids: page.rows.map((c) => c.id).sort(), asked: statements.length, keyless: statements.length === 1 && /\(project_id = \$\d+\) IS TRUE/.test(statements[0]!) };
    } finally {
      db.knex.off('query', seen);
    }
  };
  const theirs = async (projectId: string) => (await db.knex('contacts').where('project_id', projectId).where('email', 'like', `%${term}%`).select('id')).map((r: { id: string }) => r.id).sort();
  const inBig = await searched(big);
  const inSmall = await searched(small);
  expect(inBig.keyless).toBe(true);
  expect(inSmall.keyless).toBe(false);
  // A term asked with its own pattern keeps the key in any project: planned for its values, a common one may read the
  // project's newest contacts first by it.
  expect(searchPattern('race.')).toBeUndefined();
  expect(await searched(big, 'race.')).toMatchObject({ asked: 1, keyless: false });
  // The same contacts as a plain LIKE over the project's rows: the other project's address is never among them.
  expect(inBig.ids).toEqual(await theirs(big));
  expect(inBig.ids).toContain(bigs.id);
  expect(inBig.ids).not.toContain(smalls.id);
  expect(inSmall.ids).toEqual([smalls.id]);
  // The trigram read without the key: the project is checked on the rows it found.
  const trigramRead = async (keyless: boolean) => (await explained(db.knex, searchStatement(db.knex, big, { search: term }, { limit: 50 }, { byteOrder: true, keyless })))
    .find((n) => n['Index Name'] === 'contacts_email_trgm_idx')!;
  expect(String((await trigramRead(true))['Index Cond'])).not.toContain('project_id');
  expect(String((await trigramRead(false))['Index Cond'])).toContain('project_id');
});

test('a term asked with its own pattern is first asked for the addresses that begin with it, with their statement\'s generic plan: one statement when they fill the page', async () => {
  const statementsOf = async (search: string) => {
    const statements: { sql: string; name?: string }[] = [];
    const seen = (q: { sql: string; options?: { name?: string } }) => { if (q.sql.includes('pre AS MATERIALIZED')) statements.push({ sql: q.sql, name: q.options?.name }); };
    db.knex.on('query', seen);
    let page;
    try {
      page = await listContacts(db.knex, big, { search }, { limit: 50 });
    } finally {
      db.knex.off('query', seen);
    }
    // The same page as the whole statement planned for the term's values.
    const direct = await runListStatement(db.knex, searchStatement(db.knex, big, { search }, { limit: 50 }));
    expect(page.rows.map((c) => c.id)).toEqual(direct.rows.map((r) => r.id));
    expect([page.total, page.totalExact]).toEqual([Math.min(direct.total, 100), direct.total <= 100 && direct.totalWhole !== false]);
    return statements.map((q) => [q.name?.replace(/_[0-9a-f]+$/, ''), q.sql.includes('rest AS')]);
  };
  // `grace.`: thousands of addresses begin with it; the part that begins with it answers, generic, the rest never asked.
  expect(searchPattern('grace.')).toBeUndefined();
  expect(await statementsOf('grace.')).toEqual([['herald_generic', false]]);
  // `race.` begins none: the whole statement follows, planned for its values (herald_custom).
  expect(await statementsOf('race.')).toEqual([['herald_generic', false], ['herald_custom', true]]);
});
