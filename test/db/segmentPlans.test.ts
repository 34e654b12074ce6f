import { loadSegments } from '../../audience/compile';
import { segmentMemberQueries, segmentMembers } from '../../audience/segments';
import { pageStatement } from '../../db/pages';
import { createProject } from '../../projects/service';
import { createTestDatabase, type TestDatabase } from '../support/db';

/**
 * A page deep in a static segment's members reads its members from the cursor down (segment_members_pkey bounded by
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
  for (const t of ['contacts', 'segment_members']) await db.knex.raw(`VACUUM ANALYZE ${t}`);
  cursor = (await db.knex('segment_members').where({ project_id: projectId, segment_id: segmentId }).orderBy('contact_id', 'desc').offset(10_000).first('contact_id')).contact_id;
}, 120_000);
afterAll(async () => { await db.close(); });

interface PlanNode { 'Node Type': string; 'Relation Name'?: string; 'Actual Rows': number; Plans?: PlanNode[] }
const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];

test('a page deep in a static segment reads its members from the cursor down', async () => {
  const all = await loadSegments(db.knex, projectId);
  const [page, count] = segmentMemberQueries(db.knex, projectId, all.get(segmentId)!, all, { limit: 50, afterId: cursor });
  const { sql, bindings } = pageStatement(page, count, { column: 'c.id' }).toSQL();
  const res = await db.knex.raw(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, bindings as never[]);
  const read = nodes(res.rows[0]['QUERY PLAN'][0].Plan as PlanNode).filter((n) => n['Relation Name'] === 'segment_members');
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
