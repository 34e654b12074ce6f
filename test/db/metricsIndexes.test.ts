import type { Knex } from 'knex';
import { DEFAULT_COUNT_CAP, EXECUTIONS_SQL, QUEUE_DEPTH_SQL, QUEUE_OLDEST_SQL, readDatabase } from '../../metrics/database';
import { createProject } from '../../projects/service';
import { createTestDatabase, type TestDatabase, vacuumAnalyze } from '../support/db';
import { partitionedPlan } from '../support/plans';

/**
 * The queries of GET /metrics read indexes, never the large tables: the plans are read from EXPLAIN of the very SQL
 * metrics/database.ts runs, on a table of 200,000 emails (most of them SENT, a few hundred QUEUED) and 20,000
 * automation executions (most of them finished), analysed, where a sequential scan would read everything.
 */
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
  const projectId = (await createProject('Metrics plans')).id;
  await db.knex.raw(
    `INSERT INTO contacts (project_id, email) SELECT ?::uuid, 'c' || g || '@example.org' FROM generate_series(1, 1000) g`, [projectId]);
  const contacts = (await db.knex('contacts').where({ project_id: projectId }).select('id', 'email')) as { id: string; email: string }[];
  await db.knex.raw(
    `INSERT INTO emails (project_id, contact_id, from_email, to_email, subject, html, status, priority)
     SELECT ?::uuid, (?::uuid[])[1 + g % 1000], 'hi@example.com', (?::text[])[1 + g % 1000], 's', 'h',
            CASE WHEN g % 1000 = 0 THEN 'QUEUED' WHEN g % 97 = 0 THEN 'FAILED' ELSE 'SENT' END, g % 2
     FROM generate_series(1, 200000) g`,
    [projectId, contacts.map((c) => c.id), contacts.map((c) => c.email)]);
  const [{ id: automationId }] = await db.knex('automations').insert({ project_id: projectId, name: 'a', trigger_event: 'x', steps: JSON.stringify([]) }).returning('id');
  await db.knex.raw(
    `INSERT INTO automation_executions (project_id, automation_id, contact_id, status, exclusive)
     SELECT ?::uuid, ?::uuid, (SELECT id FROM contacts WHERE project_id = ?::uuid LIMIT 1),
            CASE WHEN g % 500 = 0 THEN 'RUNNING' WHEN g % 100 = 0 THEN 'WAITING' ELSE 'COMPLETED' END, false
     FROM generate_series(1, 20000) g`,
    [projectId, automationId, projectId]);
  await vacuumAnalyze(db.knex, ['emails', 'automation_executions']);
}, 120_000);
afterAll(async () => { await db.close(); });

async function plan(sql: string, bindings: Knex.RawBinding[] = []): Promise<string> {
  const res = await db.knex.raw(`EXPLAIN ${sql}`, bindings);
  return partitionedPlan(res.rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n'));
}

test('the queue depth counts QUEUED entries of an index, capped, never the table', async () => {
  const p = await plan(QUEUE_DEPTH_SQL, [DEFAULT_COUNT_CAP]);
  // The queue's partial index (emails_queue_idx), or, when the statistics count few QUEUED rows, the project-status
  // index by its status condition (PostgreSQL 18 skips through its leading project_id) and a sort of those few: both
  // read only the QUEUED entries. Which one the planner takes turns on ANALYZE's sample (about 30 of the 200).
  // Each partition's index of that name (emails_queue_idx_p202611 on emails_p202611: db/partitions.ts).
  expect(p).toMatch(/Index (Only )?Scan using (emails_queue_idx|emails_project_status_idx)\S* on emails/);
  if (p.includes('emails_project_status_idx')) expect(p).toMatch(/Index Cond: \(status = 'QUEUED'::text\)/);
  expect(p).toMatch(/Limit/);
  expect(p).not.toMatch(/Seq Scan/);
});

test('the oldest queued email is two probes of the same index (one per priority), one per partition', async () => {
  const p = await plan(QUEUE_OLDEST_SQL);
  const partitions = (await db.knex.raw("SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'emails'::regclass")).rows[0].n as number;
  expect(p.match(/emails_queue_idx/g)).toHaveLength(2 * partitions);
  expect(p.match(/Index Scan using \S+/g)!.every((s) => s.includes('emails_queue_idx'))).toBe(true);
  expect(p).not.toMatch(/Seq Scan/);
});

test('live executions are counted through automation_executions_active_idx', async () => {
  const p = await plan(EXECUTIONS_SQL, [DEFAULT_COUNT_CAP]);
  expect(p).toContain('automation_executions_active_idx');
  expect(p).not.toMatch(/Seq Scan/);
});

test('the whole reading: no sequential scan of a large table is ever executed (the sample is skipped)', async () => {
  // The statement readDatabase runs, as it sends it to PostgreSQL.
  let sql = '';
  let bindings: readonly unknown[] = [];
  const capture = (q: { sql: string; bindings: readonly unknown[] }) => { sql = q.sql; bindings = q.bindings; };
  db.knex.on('query', capture);
  const snapshot = await readDatabase(db.knex);
  db.knex.off('query', capture);
  expect(snapshot.emails!.estimated).toBe(true); // 200,000 rows: from the statistics
  expect(snapshot.queueDepth).toBe(200);
  expect(snapshot.executions).toEqual({ RUNNING: 40, WAITING: 160 });
  // Estimates within a few percent of the truth (ANALYZE samples 30,000 rows).
  const { rows } = await db.knex.raw("SELECT count(*)::int AS n FROM emails WHERE status = 'SENT'");
  expect(Math.abs(snapshot.emails!.byStatus.SENT! - rows[0].n) / rows[0].n).toBeLessThan(0.05);

  const p = await plan(sql.replace(/\$\d+/g, '?'), bindings as Knex.RawBinding[]);
  expect(p).toContain('emails_queue_idx');
  expect(p).toContain('automation_executions_active_idx');
  // The small-table sample is a LIMITed scan behind a one-time filter on the statistics…
  const lines = p.split('\n');
  const at = lines.findIndex((l) => /Seq Scan on emails_p/.test(l));
  expect(lines.slice(Math.max(0, at - 8), at).join('\n')).toMatch(/Limit[\s\S]*One-Time Filter/);
  // …which, on this table, is never executed. (Catalog lookups, pg_namespace for current_schema(), are scans of a handful of rows.)
  const analysed = (await db.knex.raw(`EXPLAIN (ANALYZE, COSTS OFF) ${sql.replace(/\$\d+/g, '?')}`, bindings as Knex.RawBinding[])).rows
    .map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']) as string[];
  // (One scan per partition of emails, db/partitions.ts: none of them executed, but the planner's choice for the empty
  // ones, the months made ahead, which it reads whole: nothing.)
  const scans = analysed.filter((l) => /Seq Scan/.test(l) && !/Seq Scan on pg_/.test(l));
  expect(scans.length).toBeGreaterThanOrEqual(1);
  for (const scan of scans) expect(scan).toMatch(/Seq Scan on emails_\w+ .*(never executed|rows=0\.00 loops=1)/);
});
