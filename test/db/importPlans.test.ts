import { copyRows, mergeBindings, mergeStatement, refreshContactStatistics, stageRows, type MergeOptions } from '../../db/queries/contactImports';
import { statisticsDue } from '../../contacts/imports/batches';
import { createProject } from '../../projects/service';
import { createTestDatabase, type TestDatabase } from '../support/db';

/**
 * A contact import's merge (db/queries/contactImports.ts) is one statement of CTEs over a batch of up to 20,000 rows.
 * The planner estimates each CTE from the one before it, and those estimates can be wrong by the whole batch: it
 * takes `ins` (the new contacts) for fresh − old rows, 1 when it expects every address to be known already, and a new
 * project's first batch inserts all 20,000. A membership test over a CTE that the planner may make a nested loop
 * (NOT EXISTS, a join) then scans the CTE once per row: 20,000 × 10,000 comparisons took two minutes in a test run.
 * So no nested loop may scan the import's own CTEs on its inner side, whatever the estimates: checked on the plan
 * PostgreSQL makes for a new project's first batch, and for a batch whose addresses are all known.
 */
let db: TestDatabase;
const IMPORT_CTES = ['seen', 'fresh', 'dups', 'old', 'ins', 'upd', 'missed'];

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.close());

interface PlanNode { 'Node Type': string; 'CTE Name'?: string; Plans?: PlanNode[] }

/** Every nested loop of `plan` whose inner side scans one of the import's CTEs: "Nested Loop … over CTE ins". */
function loopsOverCtes(node: PlanNode, found: string[] = []): string[] {
  const inner = node['Node Type'].startsWith('Nested Loop') ? node.Plans?.[1] : undefined;
  const scanned = (n: PlanNode | undefined): string | undefined => {
    if (!n) return undefined;
    if (n['Node Type'] === 'CTE Scan') return n['CTE Name'];
    return n.Plans?.length === 1 ? scanned(n.Plans[0]) : undefined;
  };
  const cte = scanned(inner);
  if (cte && IMPORT_CTES.includes(cte)) found.push(`${node['Node Type']} over CTE ${cte}`);
  for (const child of node.Plans ?? []) loopsOverCtes(child, found);
  return found;
}

async function mergePlan(known: number, { analyzed = true, refreshed = false } = {}): Promise<{ loops: string[]; text: string }> {
  const project = await createProject(`Import plans ${known}${analyzed ? '' : ' unanalyzed'}`);
  // Statistics that know the project's contacts, or (analyzed: false) ones gathered before it had any.
  if (!analyzed) await db.knex.raw('ANALYZE contacts');
  await db.knex.raw(`INSERT INTO contacts (project_id, email, subscribed, data)
    SELECT ?::uuid, 'plan' || g || '@example.org', true, '{}'::jsonb FROM generate_series(0, ? - 1) g`, [project.id, known]);
  if (analyzed) await db.knex.raw('ANALYZE contacts');
  if (refreshed) expect(await refreshContactStatistics(db.knex)).toBe(true);
  const [imp] = await db.knex('contact_imports').insert({
    project_id: project.id, status: 'RUNNING', format: 'csv', file_bytes: 1, mode: 'upsert', data_mode: 'merge', columns: JSON.stringify([]), default_subscribed: true,
  }).returning('id');
  const o: MergeOptions = { projectId: project.id, importId: imp.id, mode: 'upsert', dataMode: 'merge', defaultSubscribed: true, resubscribe: false, segmentId: null };
  const rows = Array.from({ length: 20_000 }, (_, i) => ({ line: i + 2, email: `plan${i}@example.org`, subscribed: null, data: { plan: 'pro' } }));
  // Staged in a transaction that is rolled back: the plans are all this needs.
  const trx = await db.knex.transaction();
  try {
    await stageRows(trx, copyRows(rows));
    const json = await trx.raw(`EXPLAIN (FORMAT JSON) ${mergeStatement(o)}`, mergeBindings(o));
    const text = await trx.raw(`EXPLAIN ${mergeStatement(o)}`, mergeBindings(o));
    const plan = (json.rows[0]['QUERY PLAN'] as { Plan: PlanNode }[])[0]!.Plan;
    return { loops: loopsOverCtes(plan), text: (text.rows as { 'QUERY PLAN': string }[]).map((r) => r['QUERY PLAN']).join('\n') };
  } finally {
    await trx.rollback();
  }
}

test('a new project\'s first batch (20,000 new addresses): no nested loop scans the merge\'s CTEs', async () => {
  const { loops, text } = await mergePlan(0);
  expect(loops).toEqual([]);
  // The upsert's missed addresses are found by hashing what was found and what was inserted.
  expect(text).toMatch(/hashed SubPlan/);
});

test('a batch of 20,000 known addresses: no nested loop scans the merge\'s CTEs', async () => {
  const { loops } = await mergePlan(20_000);
  expect(loops).toEqual([]);
});

// A project that grew since contacts was last analysed (an import's earlier batches, a young database whose autovacuum
// has not come round): the statistics expect about one contact in the project, every index that starts with project_id
// looks as cheap as the unique (project_id, email) one, and looked up by contacts_project_subscribed_id_idx, each staged
// address read the project's every contact (a CI run's batch of 20,000 took two minutes). The import refreshes the
// statistics as it grows the project (from 1,000 contacts on, at each doubling); with them, the unique index.
test('a batch into a project whose growth the import has told the statistics: each address is looked up by the unique (project_id, email) index', async () => {
  const { text } = await mergePlan(20_000, { analyzed: false, refreshed: true });
  const old = text.slice(text.indexOf('CTE old'), text.indexOf('CTE ins'));
  expect(old).toMatch(/Index Scan using contacts_project_email_key on contacts/);
  expect(old).not.toMatch(/Filter: \(email = /);
});

test('a batch into a project grown since the last ANALYZE, before any refresh (another import grew it): the unique index all the same', async () => {
  const { text } = await mergePlan(20_000, { analyzed: false });
  const old = text.slice(text.indexOf('CTE old'), text.indexOf('CTE ins'));
  expect(old).toMatch(/Index Scan using contacts_project_email_key on contacts/);
  expect(old).not.toMatch(/Filter: \(email = /);
});

test('the statistics are refreshed from 1,000 created contacts on, each time the count doubles', () => {
  expect(statisticsDue(0, 999)).toBe(false);
  expect(statisticsDue(0, 1000)).toBe(true);
  expect(statisticsDue(0, 20_000)).toBe(true);
  expect(statisticsDue(1000, 1999)).toBe(false);
  expect(statisticsDue(1999, 2000)).toBe(true);
  expect(statisticsDue(20_000, 40_000)).toBe(true);
  expect(statisticsDue(40_000, 60_000)).toBe(false);
  // A batch that created nothing (every address known) asks for nothing.
  expect(statisticsDue(5000, 5000)).toBe(false);
  // 1,000,000 rows in batches of 20,000: six refreshes (1,000 to 16,000 are crossed by the first batch).
  let n = 0;
  for (let c = 0; c < 1_000_000; c += 20_000) if (statisticsDue(c, c + 20_000)) n++;
  expect(n).toBe(6);
});
