import type { Knex } from 'knex';
import { cappedCount, pageQueries } from '../../db/pages';
import { filteredDeliveries, listDeliveries } from '../../db/queries/webhooks';
import { CLAIM_SQL } from '../../worker/webhookQueue';
import { createProject } from '../../projects/service';
import { createTestDatabase, type TestDatabase, vacuumAnalyze } from '../support/db';
import { analyzedPlanOfCall, partitionedPlan } from '../support/plans';

/**
 * Every query path of webhooks is served by an index (the migration 20261124000003_webhooks names which), read from
 * EXPLAIN on a table large enough that a sequential scan would lose: 50 projects with two endpoints each, 200,000
 * deliveries, nearly all delivered, some due, some in flight.
 */
let db: TestDatabase;
let projectId: string;
let endpointId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const projects: string[] = [];
  for (let i = 0; i < 50; i++) projects.push((await createProject(`w${i}`)).id);
  projectId = projects[0]!;
  await db.knex.raw(
    `INSERT INTO webhook_endpoints (project_id, url, events, enabled, secret)
     SELECT p, 'https://hooks.example.org/' || g, ARRAY['email.sent', 'contact.created'], g % 2 = 0, '\\x00'::bytea
     FROM unnest(?::uuid[]) p, generate_series(1, 2) g`, [projects]);
  const endpoints: { id: string; project_id: string }[] = await db.knex('webhook_endpoints').select('id', 'project_id');
  endpointId = endpoints.find((e) => e.project_id === projectId)!.id;
  await db.knex.raw(
    `INSERT INTO webhook_deliveries (project_id, endpoint_id, type, payload, status, next_attempt_at, claimed_by)
     SELECT (?::uuid[])[1 + g % ?], (?::uuid[])[1 + g % ?], 'email.sent', '{}'::jsonb,
            CASE WHEN g % 100 = 0 THEN 'PENDING' WHEN g % 301 = 0 THEN 'DELIVERING' ELSE 'SUCCEEDED' END,
            now() - (g % 7) * interval '1 minute', CASE WHEN g % 301 = 0 THEN 'w1' END
     FROM generate_series(1, 200000) g`,
    [endpoints.map((e) => e.project_id), endpoints.length, endpoints.map((e) => e.id), endpoints.length],
  );
  await db.knex.raw('INSERT INTO webhook_attempts (delivery_id, attempt, status_code, latency_ms) SELECT id, 1, 200, 3 FROM webhook_deliveries');
  await vacuumAnalyze(db.knex, ['webhook_endpoints', 'webhook_deliveries', 'webhook_attempts']);
}, 120_000);
afterAll(async () => { await db.close(); });

async function explain(sql: string, bindings: readonly unknown[]): Promise<string> {
  const res = await db.knex.raw(`EXPLAIN ${sql}`, bindings as Knex.RawBinding[]);
  return partitionedPlan(res.rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n'));
}
const planOf = (q: Knex.QueryBuilder) => {
  const { sql, bindings } = q.toSQL();
  return explain(sql, bindings);
};

test('the claim probes each endpoint\'s due and in-flight deliveries through their partial indexes, never the table', async () => {
  const p = await explain(CLAIM_SQL, [16, 200, 'w2']);
  expect(p).toContain('webhook_deliveries_due_idx');
  expect(p).toContain('webhook_deliveries_claimed_idx');
  expect(p).not.toMatch(/Seq Scan on webhook_deliveries/);
});

test('the triggers\' lookup of a project\'s enabled endpoints uses webhook_endpoints_project_idx', async () => {
  // The statement the triggers run per inserted row's project (db/migrations/20261124000003_webhooks.ts).
  await db.knex.raw('SET enable_seqscan = off'); // the endpoints table is small here; what matters is that an index serves it
  try {
    const p = await explain("SELECT id FROM webhook_endpoints w WHERE w.project_id = ?::uuid AND w.enabled AND 'email.sent' = ANY (w.events)", [projectId]);
    expect(p).toContain('webhook_endpoints_project_idx');
  } finally {
    await db.knex.raw('RESET enable_seqscan');
  }
});

test.each([
  ['first page', false],
  ['after a cursor', true],
])('GET /webhooks/:id/deliveries, %s, and its total, read the endpoint\'s rows by webhook_deliveries_endpoint_idx', async (_n, cursor) => {
  const afterId = cursor ? (await db.knex('webhook_deliveries').where({ endpoint_id: endpointId }).orderBy('id', 'desc').offset(1000).first('id')).id as string : undefined;
  const filtered = filteredDeliveries(db.knex, projectId, endpointId);
  const { page } = pageQueries(filtered, { limit: 20, ...(afterId ? { afterId } : {}) }, 'd.id');
  for (const q of [page, cappedCount(filtered, undefined, 'd.id')]) { // the count as listDeliveries sends it: newest first
    const p = await planOf(q);
    expect(p).toContain('webhook_deliveries_endpoint_idx');
    expect(p).not.toMatch(/Seq Scan/);
  }
  // Each row's attempts, a column of the page: webhook_attempts_delivery_idx, once per delivery of the page.
  expect(await planOf(page)).toMatch(/Index Scan using webhook_attempts_delivery_idx[^\n]*\n\s*Index Cond: \((a\.)?delivery_id = d\.id\)/);
  // As listDeliveries sends it: the endpoint's values written in, the cursor alone a parameter, planned once per
  // connection (db/pages.ts plannedOnce); that plan, made without the cursor's value, reads the endpoint's index too.
  let sent = '';
  const capture = (q: { sql: string }) => { sent = q.sql; };
  db.knex.on('query', capture);
  let listed;
  try {
    listed = await listDeliveries(db.knex, projectId, endpointId, { limit: 20, ...(afterId ? { afterId } : {}) });
  } finally {
    db.knex.off('query', capture);
  }
  expect(sent).toContain(`'${endpointId}'`);
  expect(sent.includes('$1')).toBe(cursor);
  const generic = (await db.knex.raw(`EXPLAIN (GENERIC_PLAN) ${sent}`)).rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
  expect(generic).toContain('webhook_deliveries_endpoint_idx');
  expect(generic).not.toMatch(/Seq Scan/);
  expect(listed.rows).toHaveLength(21);
  for (const r of listed.rows) expect(r.attempt_log).toEqual([{ delivery_id: r.id, attempt: 1, status_code: 200, latency_ms: 3, error: null, created_at: expect.any(Date) }]);
});

test('GET /webhooks reads the project\'s endpoints by webhook_endpoints_project_idx', async () => {
  await db.knex.raw('SET enable_seqscan = off');
  try {
    const { page } = pageQueries(() => db.knex('webhook_endpoints').where('project_id', projectId), { limit: 20 });
    expect(await planOf(page)).toContain('webhook_endpoints_project_idx');
  } finally {
    await db.knex.raw('RESET enable_seqscan');
  }
});

test('an endpoint whose deliveries came after the others\' counts its own newest first, not the table from its start', async () => {
  // A new endpoint's 100,000 deliveries after the 200,000 of the others: a scan of the table in its order would read all
  // of theirs before the first of its own.
  const [{ id: late }] = await db.knex('webhook_endpoints').insert({ project_id: projectId, url: 'https://hooks.example.org/late', events: ['email.sent'], enabled: true, secret: Buffer.alloc(1) }).returning('id');
  await db.knex.raw(
    `INSERT INTO webhook_deliveries (project_id, endpoint_id, type, payload, status, next_attempt_at)
     SELECT ?, ?, 'email.sent', '{}'::jsonb, 'SUCCEEDED', now() FROM generate_series(1, 100000) g`, [projectId, late]);
  await vacuumAnalyze(db.knex, ['webhook_deliveries']);
  const nodes = await analyzedPlanOfCall(db.knex, async () => {
    expect(await listDeliveries(db.knex, projectId, late, { limit: 25 })).toMatchObject({ total: 1000, totalExact: false });
  });
  const reads = nodes.filter((n) => n['Relation Name'] === 'webhook_deliveries' && n['Actual Loops'] > 0);
  expect(reads.map((n) => n['Node Type'])).not.toContain('Seq Scan');
  const counted = reads.find((n) => n['Actual Rows'] === 1001);
  expect(counted?.['Rows Removed by Filter'] ?? 0).toBe(0);
});
