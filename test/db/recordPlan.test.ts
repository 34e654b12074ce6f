import pg from 'pg';
import { RECORD_SQL } from '../../sending/delivery';
import { HITS_SQL } from '../../tracking/record';
import { createProject } from '../../projects/service';
import { monthStart } from '../../db/partitions';
import { createTestDatabase, type TestDatabase } from '../support/db';

/**
 * The delivery outcome write (sending/delivery.ts RECORD_SQL) finds its emails by the primary key alone, whatever the
 * statistics its generic plan was made from. A worker prepares the write once per connection and runs it with its
 * generic plan; made while a campaign's partition still held a few hundred rows, the plan found each email by a skip
 * scan of an index whose third column is the id (emails_contact_idx), one descent per contact once the partition was
 * full: 25 ms a write of 20 at 100,000 emails (BENCHMARKS.md section 53). Here the write is prepared on 300 rows, the
 * partition filled to 20,000, and the plan it then runs with (EXPLAIN EXECUTE of the prepared statement) is read.
 */
let db: TestDatabase;
let client: pg.Client;
let projectId: string;
let campaignId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  projectId = (await createProject('Plans')).id;
  await db.knex.raw(`INSERT INTO contacts (project_id, email) SELECT ?::uuid, 'c' || g || '@example.org' FROM generate_series(1, 20000) g`, [projectId]);
  campaignId = (await db.knex.raw(
    `INSERT INTO campaigns (project_id, name, status, subject, body, from_email, audience_type) VALUES (?, 'News', 'SENDING', 's', 'b', 'news@example.com', 'ALL') RETURNING id`,
    [projectId],
  )).rows[0].id;
  client = new pg.Client({ connectionString: db.url });
  await client.connect();
});
afterAll(async () => {
  await client.end();
  await db.close();
});

/**
 * A campaign's emails for contacts [from, to) of the project, claimed (SENDING), all with the campaign's partition key:
 * noon of today, not midnight. The write looks for each email within a millisecond of its key, and from midnight on
 * the first of a month that millisecond reaches into the month before, an empty partition analysed in the template,
 * which a plan reads by a sequential scan of nothing (the test failed so at 00:10 UTC on 1 December, in a run whose
 * template was made on 30 November).
 */
const fill = (from: number, to: number) => db.knex.raw(
  `INSERT INTO emails (project_id, contact_id, campaign_id, from_email, to_email, subject, html, status, partition_at)
   SELECT c.project_id, c.id, ?::uuid, 'news@example.com', c.email, 's', 'h', 'SENDING', date_trunc('day', now()) + interval '12 hours'
   FROM (SELECT * FROM contacts WHERE project_id = ?::uuid ORDER BY id OFFSET ? LIMIT ?) c`,
  [campaignId, projectId, from, to - from],
);

/**
 * The reads of the emails' partitions that a plan ran (EXPLAIN ANALYZE, FORMAT JSON): their node, and index if any (a
 * bitmap read's, from its Bitmap Index Scans: one entry for each).
 */
function emailScans(root: Record<string, unknown>): { index?: string; node: string }[] {
  const scans: { index?: string; node: string }[] = [];
  const walk = (node: Record<string, unknown>) => {
    const children = (node.Plans as Record<string, unknown>[] | undefined) ?? [];
    if (typeof node['Relation Name'] === 'string' && (node['Relation Name'] as string).startsWith('emails_p') && node['Actual Loops'] !== 0) {
      if (node['Node Type'] === 'Bitmap Heap Scan') {
        for (const c of children) scans.push({ node: 'Bitmap Heap Scan', index: c['Index Name'] as string | undefined });
        return;
      }
      scans.push({ node: node['Node Type'] as string, index: node['Index Name'] as string | undefined });
    }
    for (const child of children) walk(child);
  };
  walk(root);
  return scans;
}

/**
 * The plan a write runs with when its generic plan was made on a partition before it grew: `sql` prepared as `name`
 * under force_generic_plan and run once (rolled back) on `before`'s rows, then `grow()`, then EXPLAIN ANALYZE of its
 * execution (rolled back) on `after`'s rows. `args` makes an execution's arguments from rows.
 */
async function planAfterGrowth<R>(name: string, sql: string, args: (rows: R[]) => string, before: () => Promise<R[]>, grow: () => Promise<unknown>, after: () => Promise<R[]>): Promise<Record<string, unknown>> {
  let n = 0;
  await client.query('SET plan_cache_mode = force_generic_plan');
  await client.query(`PREPARE ${name} AS ${sql.replace(/\?/g, () => `$${++n}`)}`);
  // Run once now: the generic plan is made from the statistics of the small partition.
  await client.query('BEGIN');
  await client.query(`EXECUTE ${name}(${args(await before())})`);
  await client.query('ROLLBACK');
  await grow();
  const rows = await after();
  await client.query('BEGIN');
  try {
    return (await client.query(`EXPLAIN (ANALYZE, COSTS OFF, FORMAT JSON) EXECUTE ${name}(${args(rows)})`)).rows[0]['QUERY PLAN'][0];
  } finally {
    await client.query('ROLLBACK');
  }
}

/** The write's bindings for these emails, all SENT, as literals for EXECUTE. */
function executeArgs(rows: { project_id: string; id: string; partition_at: Date }[]): string {
  const array = (values: (string | null)[], type: string) => `ARRAY[${values.map((v) => (v === null ? 'NULL' : `'${v}'`)).join(',')}]::${type}[]`;
  return [
    array(rows.map((r) => r.project_id), 'uuid'), array(rows.map((r) => r.id), 'uuid'), array(rows.map(() => 'SENT'), 'text'),
    array(rows.map((r) => `<${r.id}@example.com>`), 'text'), array(rows.map(() => null), 'text'), array(rows.map(() => '0'), 'int'),
    array(rows.map((r) => r.partition_at.toISOString()), 'timestamptz'),
  ].join(', ');
}

test('prepared on a partition of 300 emails and run on 20,000, the outcome write still finds each by its primary key', async () => {
  await fill(0, 300);
  await db.knex.raw('ANALYZE emails');
  const claimed = (order: 'ASC' | 'DESC') => async () =>
    (await client.query(`SELECT project_id, id, partition_at FROM emails WHERE status = 'SENDING' ORDER BY id ${order} LIMIT 20`)).rows;
  const plan = await planAfterGrowth('record_outcomes', RECORD_SQL, executeArgs, claimed('ASC'), () => fill(300, 20000), claimed('DESC'));
  // The emails this write changed were found through the primary key of their partition, and only through it.
  const scans = emailScans(plan.Plan as Record<string, unknown>);
  expect(scans.length).toBeGreaterThan(0);
  for (const scan of scans) expect(scan.index ?? scan.node).toMatch(/^emails_pkey_/);
  // And it changed all 20 (the statement answers the ids it changed).
  expect((plan.Plan as Record<string, unknown>)['Actual Rows']).toBe(20);
});

/**
 * The same for the tracking write (tracking/record.ts HITS_SQL), a named statement that PostgreSQL may run with its
 * generic plan after its first five: made while a month's partition held 300 emails, run once it holds 20,000. The
 * emails are of the middle of next month (ids and partition key on its 15th), in a partition that the first test left
 * empty; the write looks for each in the 8 days before its id's time (db/partitions.ts EMAIL_LOOKUP_LAG_DAYS), which
 * from the 15th stay in that month whatever today is. (Ids of "now + 32 days" made on the 30th had a window reaching
 * into the month before, a partition that was empty and analysed: its plan was a sequential scan of nothing, which is
 * what an empty partition costs, and the test failed for it on that day.)
 */
const aheadAt = new Date(monthStart(new Date(), 1).getTime() + 14 * 86_400_000 + 12 * 3_600_000);
const fillAhead = (from: number, to: number) => db.knex.raw(
  `INSERT INTO emails (id, project_id, contact_id, from_email, to_email, subject, html, status, partition_at)
   SELECT uuidv7(?::timestamptz - clock_timestamp()), c.project_id, c.id, 'news@example.com', c.email, 's', 'h', 'SENT', date_trunc('day', ?::timestamptz)
   FROM (SELECT * FROM contacts WHERE project_id = ?::uuid ORDER BY id OFFSET ? LIMIT ?) c`,
  [aheadAt.toISOString(), aheadAt.toISOString(), projectId, from, to - from],
);

test('prepared with a generic plan on a partition of 300 emails and run on 20,000, the tracking write still finds each by its primary key', async () => {
  const arr = (values: (string | number | boolean)[], type: string) => `ARRAY[${values.map((v) => (typeof v === 'string' ? `'${v}'` : String(v))).join(',')}]::${type}[]`;
  const args = (rows: { project_id: string; id: string }[]) => [
    arr(rows.map((r) => r.project_id), 'uuid'), arr(rows.map((r) => r.id), 'uuid'), arr(rows.map(() => 1), 'int'), arr(rows.map(() => true), 'bool'),
    arr(rows.map(() => 0), 'int'), arr(rows.map(() => false), 'bool'), 'false', 'false',
    arr(rows.map((r) => r.project_id), 'uuid'), arr(rows.map((r) => r.id), 'uuid'), arr(rows.map(() => 'email.opened'), 'text'),
    arr(rows.map(() => '{}'), 'text'), arr(rows.map(() => 'open:person:'), 'text'), '60000',
  ].join(', ');
  await fillAhead(0, 300);
  await db.knex.raw('ANALYZE emails');
  const ahead = (order: 'ASC' | 'DESC') => async () =>
    (await client.query(`SELECT project_id, id FROM emails WHERE partition_at > now() + interval '1 day' ORDER BY id ${order} LIMIT 20`)).rows;
  const plan = await planAfterGrowth('record_hits', HITS_SQL, args, ahead('ASC'), () => fillAhead(300, 20000), ahead('DESC'));
  const scans = emailScans(plan.Plan as Record<string, unknown>);
  expect(scans.length).toBeGreaterThan(0);
  for (const scan of scans) expect(scan.index ?? scan.node).toMatch(/^emails_pkey_/);
});
