import { loadSegments } from '../../audience/compile';
import { memberCountCap, segmentMemberQueries, segmentMembers } from '../../audience/segments';
import { cappedCount, cappedTotal, pageQueries, pageStatement, pageWithTotal } from '../../db/pages';
import { readsContactRowOnly } from '../../audience/check';
import { segmentContacts } from '../../audience/segmentQueries';
import { createProject } from '../../projects/service';
import { createTestDatabase, type TestDatabase, vacuumAnalyze } from '../support/db';
import { belowTheTop, genericPlanOf, planNodes, type AnalyzedNode } from '../support/plans';

/**
 * A dynamic segment's first page is read once, in its count's plan (db/pages.ts firstPageOfCount), and answers what a
 * page and a count read apart answer. And a page deep in a static segment's members reads its members from the cursor down (segment_members_pkey bounded by
 * the cursor: audience/segmentQueries.ts `before`), not every member above the cursor first, which a merge join from
 * the newest member did (21 ms a page at 100,000 members; BENCHMARKS.md section 54). Read from EXPLAIN ANALYZE of the
 * statement segmentMembers sends: how many member entries the page read.
 */
let db: TestDatabase;
let projectId: string;
let segmentId: string;
let cursor: string;

beforeAll(async () => {
  db = await createTestDatabase();
  projectId = (await createProject('segments')).id;
  await db.knex.raw(`INSERT INTO contacts (project_id, email) SELECT ?, 'user' || g || '@example.org' FROM generate_series(1, 30000) g`, [projectId]);
  segmentId = (await db.knex('segments').insert({ project_id: projectId, name: 'Imported', type: 'STATIC' }).returning('id'))[0].id;
  // Every other contact is a member: 15,000, the cursor 10,000 members down.
  await db.knex.raw(`INSERT INTO segment_members (project_id, segment_id, contact_id)
                     SELECT project_id, ?, id FROM (SELECT project_id, id, row_number() OVER (ORDER BY id) AS n FROM contacts WHERE project_id = ?) c WHERE n % 2 = 0`, [segmentId, projectId]);
  await vacuumAnalyze(db.knex, ['contacts', 'segment_members']);
  cursor = (await db.knex('segment_members').where({ project_id: projectId, segment_id: segmentId }).orderBy('contact_id', 'desc').offset(10_000).first('contact_id')).contact_id;
}, 120_000);
afterAll(async () => { await db.close(); });


test('a page deep in a static segment reads its members from the cursor down', async () => {
  const all = await loadSegments(db.knex, projectId);
  const { page, count, options } = segmentMemberQueries(db.knex, projectId, all.get(segmentId)!, all, { limit: 50, afterId: cursor });
  const { sql, bindings } = pageStatement(page, count, options).toSQL();
  const res = await db.knex.raw(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, bindings as never[]);
  const read = planNodes(res.rows[0]['QUERY PLAN'][0].Plan as AnalyzedNode).filter((n) => n['Relation Name'] === 'segment_members');
  // The page's read of the members (the count's reads its 1,001 from the top, as a count does).
  const pageRead = Math.min(...read.map((n) => n['Actual Rows']));
  expect(pageRead).toBeLessThan(500);

  const listed = await segmentMembers(db.knex, projectId, segmentId, { limit: 50, afterId: cursor });
  expect(listed.rows).toHaveLength(51);
  expect(listed.rows.every((c) => c.id < cursor)).toBe(true);
  expect(listed).toMatchObject({ total: 1000, totalExact: false });
  const expected = await db.knex('segment_members').where({ project_id: projectId, segment_id: segmentId }).where('contact_id', '<', cursor).orderBy('contact_id', 'desc').limit(51).pluck('contact_id');
  expect(listed.rows.map((c) => c.id)).toEqual(expected);
});

/** A page and its count read apart, as every list reads them (the way a dynamic first page was read before). */
async function readApart(segment: string, limit: number) {
  const all = await loadSegments(db.knex, projectId);
  const def = all.get(segment)!;
  const { page } = pageQueries(() => segmentContacts(db.knex, projectId, def, all).select('c.*'), { limit }, 'c.id');
  const count = cappedCount(() => segmentContacts(db.knex, projectId, def, all), memberCountCap(def), 'c.id');
  const { rows, total } = await pageWithTotal(page, count, { column: 'c.id' });
  return { ids: rows.map((r) => r.id as string), ...cappedTotal(total, memberCountCap(def)) };
}

describe('a dynamic segment\'s first page', () => {
  const segments: Record<string, string> = {};
  beforeAll(async () => {
    // The oldest two thirds of the contacts opened an email in the last days, the newest third none: a page of the
    // newest members must look past 10,000 contacts to find any, as a list of recent openers does after an import.
    await db.knex.raw(`INSERT INTO events (project_id, contact_id, name, created_at)
                       SELECT project_id, id, 'email.opened', now() - interval '2 days' FROM (SELECT project_id, id, row_number() OVER (ORDER BY id) AS n FROM contacts WHERE project_id = ?) c
                       WHERE n <= 20000 AND n % 3 <> 0`, [projectId]);
    await db.knex.raw('ANALYZE events');
    const make = async (name: string, condition: object) => {
      segments[name] = (await db.knex('segments').insert({ project_id: projectId, name, type: 'DYNAMIC', condition: JSON.stringify(condition) }).returning('id'))[0].id;
    };
    await make('opened', { logic: 'AND', groups: [{ filters: [{ field: 'event.email.opened', operator: 'triggeredWithin', value: 30, unit: 'days' }] }] });
    await make('few', { logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'contains', value: 'user2999' }] }] });
    await make('none', { logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'contains', value: 'nobody-at-all' }] }] });
    await make('all', { logic: 'AND', groups: [{ filters: [{ field: 'subscribed', operator: 'equals', value: true }] }] });
  });

  test('reads the events once, in the count\'s plan, not once per contact for the page', async () => {
    const all = await loadSegments(db.knex, projectId);
    const { page, count, options } = segmentMemberQueries(db.knex, projectId, all.get(segments.opened!)!, all, { limit: 10 });
    const { sql, bindings } = pageStatement(page, count, options).toSQL();
    const res = await db.knex.raw(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, bindings as never[]);
    const eventReads = planNodes(res.rows[0]['QUERY PLAN'][0].Plan as AnalyzedNode).filter((n) => /^events/.test(n['Relation Name'] ?? ''));
    expect(eventReads.length).toBeGreaterThan(0);
    expect(Math.max(...eventReads.map((n) => n['Actual Loops']))).toBe(1);
  });

  test('a next page\'s count to 100 is planned as one to 1,000: the events read once, and stopped at the 101st member', async () => {
    const all = await loadSegments(db.knex, projectId);
    const first = await segmentMembers(db.knex, projectId, segments.opened!, { limit: 10 });
    const { count } = segmentMemberQueries(db.knex, projectId, all.get(segments.opened!)!, all, { limit: 10, afterId: first.rows[9]!.id });
    const { sql, bindings } = count.toSQL();
    const res = await db.knex.raw(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, bindings as never[]);
    const nodes = planNodes(res.rows[0]['QUERY PLAN'][0].Plan as AnalyzedNode);
    const eventReads = nodes.filter((n) => /^events/.test(n['Relation Name'] ?? ''));
    expect(eventReads.length).toBeGreaterThan(0);
    expect(Math.max(...eventReads.map((n) => n['Actual Loops']))).toBe(1);
    expect(nodes.find((n) => n['Node Type'] === 'CTE Scan')?.['Actual Rows']).toBe(101);
    expect(first).toMatchObject({ total: 100, totalExact: false });
  });

  test.each([['opened', 10], ['opened', 1], ['opened', 100], ['few', 10], ['few', 5], ['none', 10], ['all', 50]])(
    '%s, limit %i: the rows and total of a page and a count read apart', async (name, limit) => {
      const listed = await segmentMembers(db.knex, projectId, segments[name]!, { limit });
      const apart = await readApart(segments[name]!, limit);
      expect(listed.rows.map((c) => c.id)).toEqual(apart.ids);
      expect({ total: listed.total, totalExact: listed.totalExact }).toEqual({ total: apart.total, totalExact: apart.totalExact });
      expect(listed.rows.length).toBeLessThanOrEqual(limit + 1);
    });

  test('the next page after it is read as any page is', async () => {
    const first = await segmentMembers(db.knex, projectId, segments.opened!, { limit: 10 });
    const next = await segmentMembers(db.knex, projectId, segments.opened!, { limit: 10, afterId: first.rows[9]!.id });
    const apart = await readApart(segments.opened!, 20);
    expect([...first.rows.slice(0, 10), ...next.rows.slice(0, 10)].map((c) => c.id)).toEqual(apart.ids.slice(0, 20));
  });
});

test('a static segment whose members came after another\'s counts its own through the primary key, not the table', async () => {
  // Another segment's 20,000 rows first in the table, then this one's 20,000: a scan of the table in its order would
  // read all of the other's before the first of its own.
  const other = (await db.knex('segments').insert({ project_id: projectId, name: 'Earlier', type: 'STATIC' }).returning('id'))[0].id;
  const later = (await db.knex('segments').insert({ project_id: projectId, name: 'Later', type: 'STATIC' }).returning('id'))[0].id;
  for (const segment of [other, later]) {
    await db.knex.raw(`INSERT INTO segment_members (project_id, segment_id, contact_id) SELECT project_id, ?, id FROM contacts WHERE project_id = ? ORDER BY id LIMIT 20000`, [segment, projectId]);
  }
  await vacuumAnalyze(db.knex, ['segment_members']);
  const all = await loadSegments(db.knex, projectId);
  const { page, count, options } = segmentMemberQueries(db.knex, projectId, all.get(later)!, all, { limit: 50, afterId: cursor });
  const { sql, bindings } = pageStatement(page, count, options).toSQL();
  const res = await db.knex.raw(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, bindings as never[]);
  const reads = planNodes(res.rows[0]['QUERY PLAN'][0].Plan as AnalyzedNode).filter((n) => n['Relation Name'] === 'segment_members');
  expect(reads.map((n) => n['Node Type'])).not.toContain('Seq Scan');
  // The count's read: its 1,001 rows and nothing of the other segment.
  const counted = reads.find((n) => n['Actual Rows'] === 1001);
  expect(counted).toBeDefined();
  expect(counted?.['Rows Removed by Filter'] ?? 0).toBe(0);
  expect(await segmentMembers(db.knex, projectId, later, { limit: 50, afterId: cursor })).toMatchObject({ total: 1000, totalExact: false });
});

describe('the pages planned once, generically', () => {
  const ids: Record<string, string> = {};
  beforeAll(async () => {
    // A static segment of the three oldest contacts: the page a plan made without its values must not reach by reading
    // every contact from the newest down. And dynamic segments over the contact's row alone.
    ids.old = (await db.knex('segments').insert({ project_id: projectId, name: 'Old three', type: 'STATIC' }).returning('id'))[0].id;
    await db.knex.raw(`INSERT INTO segment_members (project_id, segment_id, contact_id) SELECT project_id, ?, id FROM contacts WHERE project_id = ? ORDER BY id LIMIT 3`, [ids.old!, projectId]);
    await db.knex('contacts').where('project_id', projectId).whereRaw("email LIKE 'user1%'").update({ data: db.knex.raw(`jsonb_build_object('plan', 'pro')`) });
    const make = async (name: string, condition: object) => {
      ids[name] = (await db.knex('segments').insert({ project_id: projectId, name, type: 'DYNAMIC', condition: JSON.stringify(condition) }).returning('id'))[0].id;
    };
    await make('pro', { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }, { field: 'subscribed', operator: 'equals', value: true }] }] });
    await make('recent', { logic: 'OR', groups: [{ filters: [{ field: 'createdAt', operator: 'within', value: 30, unit: 'days' }] }] });
    await make('clicked', { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'exists' }, { field: 'event.email.clicked', operator: 'triggered' }] }] });
    await vacuumAnalyze(db.knex, ['contacts', 'segment_members']);
  });

  const statementOf = async (id: string, afterId?: string) => {
    const all = await loadSegments(db.knex, projectId);
    return segmentMemberQueries(db.knex, projectId, all.get(id)!, all, { limit: 50, afterId });
  };

  test('a condition over the contact\'s row alone is planned once; over an address, events or a segment, for its values', () => {
    const rule = (field: string, operator = 'exists', value?: unknown) => ({ logic: 'AND' as const, groups: [{ filters: [{ field, operator, value } as never] }] });
    expect(readsContactRowOnly(rule('data.plan', 'equals', 'pro'))).toBe(true);
    expect(readsContactRowOnly(rule('subscribed', 'equals', false))).toBe(true);
    expect(readsContactRowOnly(rule('createdAt', 'within', 3))).toBe(true);
    expect(readsContactRowOnly(rule('email', 'contains', 'ada'))).toBe(false);
    expect(readsContactRowOnly(rule('event.email.opened', 'triggered'))).toBe(false);
    expect(readsContactRowOnly(rule(`segment.${segmentId}`, 'memberOf'))).toBe(false);
  });

  test.each([['static, first page', 'static', false], ['static, after a cursor', 'static', true], ['old three', 'old', false],
    ['data and subscribed, first page', 'pro', false], ['data and subscribed, after a cursor', 'pro', true], ['createdAt', 'recent', false]])(
    '%s: its generic plan reads the keys newest first and probes the contacts by key; no scan, no merge, no sort', async (_name, key, deep) => {
      const { page, count, options } = await statementOf(key === 'static' ? segmentId : ids[key]!, deep ? cursor : undefined);
      expect(options.genericPlan).toBe(true);
      const p = await genericPlanOf(db.knex, pageStatement(page, count, options));
      expect(p).not.toMatch(/Seq Scan|Bitmap Heap Scan|Merge|Hash|Gather/);
      expect(belowTheTop(p)).not.toMatch(/Sort\s+\(/);
      expect(p).toMatch(key === 'static' || key === 'old' ? /Index Only Scan Backward using segment_members_pkey/ : /Index Scan Backward using contacts_(pkey|project_subscribed_id_idx)/);
      if (!deep || key !== 'pro') expect(p).toMatch(/Index Scan using contacts_pkey on contacts c\s/);
    });

  test('a condition over events is planned for its values', async () => {
    const { options } = await statementOf(ids.clicked!);
    expect(options.genericPlan).toBe(false);
  });

  test.each([['static', 'first page'], ['static', 'after a cursor'], ['old', 'first page'], ['pro', 'first page'], ['pro', 'after a cursor'], ['recent', 'first page']])(
    '%s, %s: the same page and total generically as planned for the values', async (key, at) => {
      const deep = at === 'after a cursor';
      const id = key === 'static' ? segmentId : ids[key]!;
      const run = async (genericPlan: boolean) => {
        const { page, count, options } = await statementOf(id, deep ? cursor : undefined);
        return pageWithTotal(page, count, { ...options, genericPlan });
      };
      // Several times over: PostgreSQL makes a named statement's generic plan at its first runs.
      for (let i = 0; i < 3; i++) expect(await run(true)).toEqual(await run(false));
      const listed = await segmentMembers(db.knex, projectId, id, { limit: 50, afterId: deep ? cursor : undefined });
      expect(listed.rows.length).toBeGreaterThan(0);
      if (key === 'old') expect(listed).toMatchObject({ total: 3, totalExact: true });
    });
});
