import type { Knex } from 'knex';
import { auditListQueries, listAudit, type AuditFilter } from '../../audit/log';
import { createProject } from '../../projects/service';
import { createTestDatabase, type TestDatabase, vacuumAnalyze } from '../support/db';
import { analyzedPlanOfCall } from '../support/plans';

/**
 * Every query path of GET /audit-log and GET /keys is served by an index (20261130000002_keys_audit names which),
 * read from EXPLAIN of the very SQL the list code builds, on 40 projects' entries interleaved as they would arrive.
 */
let db: TestDatabase;
let projectId: string;
let actorId: string;
let afterId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const projects: string[] = [];
  for (let i = 0; i < 40; i++) projects.push((await createProject(`a${i}`)).id);
  projectId = projects[0]!;
  actorId = (await db.knex('api_keys').where({ project_id: projectId, type: 'secret' }).first('id')).id;
  await db.knex.raw(
    `INSERT INTO audit_log (project_id, actor_kind, actor_id, operation, resource_type, resource_id, address, at)
     SELECT (?::uuid[])[1 + g % 40], 'key', CASE WHEN g % 9 = 0 THEN ?::uuid ELSE herald_uuidv7() END,
       (ARRAY['deleteContact', 'createWebhook', 'updateSettings', 'sendCampaign'])[1 + g % 4],
       (ARRAY['contact', 'webhook', 'settings', 'campaign'])[1 + g % 4], 'r' || (g % 5000), '127.0.0.1',
       now() - (g || ' seconds')::interval
     FROM generate_series(1, 80000) g`, [projects, actorId]);
  await vacuumAnalyze(db.knex, ['audit_log']);
  // Keys enough that reading api_keys whole would lose (500 a project): with the 80 of createProject the table is one
  // page, and a sequential scan of it is the planner's right choice.
  await db.knex.raw(
    `INSERT INTO api_keys (project_id, type, lookup, hash, hint, name)
     SELECT (?::uuid[])[1 + g % 40], 'secret', 'bench' || lpad(g::text, 11, '0'), sha256(g::text::bytea), 'abcd', 'k' || g
     FROM generate_series(1, 20000) g`, [projects]);
  await vacuumAnalyze(db.knex, ['api_keys']);
  afterId = (await db.knex('audit_log').where({ project_id: projectId }).orderBy('id', 'desc').offset(500).first('id')).id;
});
afterAll(async () => { await db.close(); });

async function plan(builder: { toSQL(): { sql: string; bindings: readonly unknown[] } }): Promise<string> {
  const { sql, bindings } = builder.toSQL();
  const res = await db.knex.raw(`EXPLAIN ${sql}`, bindings as Knex.RawBinding[]);
  return res.rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
}

test.each<[string, () => AuditFilter, boolean]>([
  ['first page', () => ({}), false],
  ['page after a cursor', () => ({}), true],
  ['actor', () => ({ actor: actorId }), true],
  ['operation', () => ({ operation: 'deleteContact' }), true],
  ['resource type', () => ({ resourceType: 'webhook' }), false],
  ['resource', () => ({ resourceType: 'contact', resourceId: 'r42' }), false],
  ['since/until', () => ({ since: new Date(Date.now() - 3_600_000), until: new Date() }), false],
])('audit log: %s reads the project through an index, never the table', async (_name, filter, cursor) => {
  const { page, count } = auditListQueries(db.knex, projectId, filter(), { limit: 20, afterId: cursor ? afterId : undefined });
  for (const q of [page, count as never]) {
    const p = await plan(q);
    expect(p).toMatch(/audit_log_(pkey|\w+_idx)/);
    expect(p).toMatch(/Index Cond: \(+project_id = /);
    expect(p).not.toMatch(/Seq Scan/);
  }
});

test('GET /keys never reads api_keys sequentially', async () => {
  const p = await plan(db.knex('api_keys').where('project_id', projectId).whereNull('revoked_at').orderBy('id', 'desc').limit(21));
  expect(p).not.toMatch(/Seq Scan on api_keys/);
});

test('a project whose entries came after another\'s counts its own newest first, not the table from its start', async () => {
  // Another project's 40,000 entries first in the table, then this one's 40,000: a scan of the table in its order would
  // read all of the other's before the first of its own.
  const [early, late] = [(await createProject('early')).id, (await createProject('late')).id];
  for (const p of [early, late]) {
    await db.knex.raw(
      `INSERT INTO audit_log (project_id, actor_kind, actor_id, operation, resource_type, resource_id, address, at)
       SELECT ?, 'key', herald_uuidv7(), 'deleteContact', 'contact', 'r' || g, '127.0.0.1', now() FROM generate_series(1, 40000) g`, [p]);
  }
  await vacuumAnalyze(db.knex, ['audit_log']);
  const nodes = await analyzedPlanOfCall(db.knex, async () => {
    expect(await listAudit(db.knex, late, {}, { limit: 50 })).toMatchObject({ total: 1000, totalExact: false });
  });
  const reads = nodes.filter((n) => n['Relation Name'] === 'audit_log' && n['Actual Loops'] > 0);
  expect(reads.map((n) => n['Node Type'])).not.toContain('Seq Scan');
  // The count's read: its 1,001 entries and none of the other project's.
  const counted = reads.find((n) => n['Actual Rows'] === 1001);
  expect(counted?.['Rows Removed by Filter'] ?? 0).toBe(0);
});
