import type { Knex } from 'knex';
import { cappedCount, pageQueries, pageStatement } from '../../db/pages';
import { filteredInbound, inboundListGeneric, pruneInboundSql } from '../../inbound/messages';
import { verifiedRoutes } from '../../inbound/receive';
import { createProject } from '../../projects/service';
import { createTestDatabase, type TestDatabase, vacuumAnalyze } from '../support/db';
import { belowTheTop, genericPlanOf, partitionedPlan } from '../support/plans';

/**
 * Inbound mail's reads are index reads (issue 31): GET /inbound's since/until range (a range of the primary key: the ids
 * are UUIDv7, made as the rows are stored)
 * and the listener's lookup of a recipient's domain at RCPT TO (inbound_domains_verified_key). The plans are read from
 * EXPLAIN of the very SQL the code builds, on 50 projects of rows, enough that a sequential scan would lose.
 */
let db: TestDatabase;
let projectId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const projects: string[] = [];
  for (let i = 0; i < 50; i++) projects.push((await createProject(`p${i}`)).id);
  projectId = projects[0]!;
  // A year of mail: 3,000 messages a project, one every 175 minutes, each with its raw message (made just before it).
  await db.knex.raw(
    `WITH src AS MATERIALIZED (
       SELECT p, g, uuidv7(-(g * interval '175 minutes') - interval '1 millisecond') AS raw_id FROM unnest(?::uuid[]) p CROSS JOIN generate_series(1, 3000) g),
     raws AS (INSERT INTO raw_messages (id, project_id, content, size) SELECT raw_id, p, '\\x00'::bytea, 1 FROM src)
     INSERT INTO inbound_messages (id, project_id, raw_message_id, recipient, mail_from, size, created_at)
     SELECT uuidv7(-(g * interval '175 minutes')), p, raw_id, 'support@in' || g || '.example.com', 'a@example.org', 1, now() - g * interval '175 minutes'
     FROM src`, [projects]);
  // Every project has domains; a few are claimed by several projects, one of which is VERIFIED.
  await db.knex.raw(
    `INSERT INTO inbound_domains (project_id, domain, status)
     SELECT p, 'in' || g || '.example.com', CASE WHEN g % 50 = i % 50 THEN 'VERIFIED' ELSE 'PENDING' END
     FROM unnest(?::uuid[]) WITH ORDINALITY AS x(p, i) CROSS JOIN generate_series(1, 40) g`, [projects]);
  await db.knex.raw(
    `INSERT INTO inbound_routes (project_id, domain_id, kind, local_part, action) SELECT project_id, id, 'address', 'support', 'store' FROM inbound_domains`);
  await vacuumAnalyze(db.knex, ['raw_messages', 'inbound_messages', 'inbound_domains', 'inbound_routes']);
}, 120_000);
afterAll(async () => { await db.close(); });

async function planOf(b: { toSQL(): { sql: string; bindings: readonly unknown[] } }): Promise<string> {
  const { sql, bindings } = b.toSQL();
  const res = await db.knex.raw(`EXPLAIN ${sql}`, bindings as Knex.RawBinding[]);
  return partitionedPlan(res.rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n'));
}

test('GET /inbound?since=…&until=…: the page and its count read a range of the project’s arrival times', async () => {
  const filtered = filteredInbound(db.knex, projectId, { since: new Date(Date.now() - 7 * 86_400_000), until: new Date(Date.now() - 86_400_000) });
  const { page, count } = pageQueries(filtered, { limit: 20 });
  for (const p of [await planOf(page), await planOf(count)]) {
    expect(p).toContain('inbound_messages_pkey');
    expect(p).toMatch(/Index Cond: \(\(project_id = .*\) AND \(id >= .*\) AND \(id < /);
    expect(p).not.toMatch(/Seq Scan|Sort/);
  }
  // And the rows are those of the range.
  const rows = await page;
  expect(rows.length).toBeGreaterThan(0);
  expect(rows.every((r: { created_at: Date }) => r.created_at.getTime() >= Date.now() - 7 * 86_400_000 && r.created_at.getTime() < Date.now() - 86_400_000)).toBe(true);
  expect(Number((await count)[0].n)).toBe(Math.floor(6 * 24 * 60 / 175));
});

// GET /inbound runs with its generic plan (inbound/messages.ts inboundListGeneric): the same index read for any project.
test.each<[string, { since?: Date; until?: Date }, boolean]>([
  ['first page', {}, false],
  ['after a cursor', {}, true],
  ['a time range', { since: new Date(Date.now() - 7 * 86_400_000), until: new Date(Date.now() - 86_400_000) }, false],
])('GET /inbound, %s: its generic plan reads inbound_messages_pkey newest first, page and count, no scan, no sort', async (_name, filter, cursor) => {
  expect(inboundListGeneric(filter)).toBe(true);
  const filtered = filteredInbound(db.knex, projectId, filter);
  const afterId = cursor ? '01900000-0000-7000-8000-000000000000' : undefined;
  const p = await genericPlanOf(db.knex, pageStatement(pageQueries(filtered, { limit: 20, afterId }).page, cappedCount(filtered, 1_000, 'id'), { whole: cursor ? undefined : 20 }));
  expect(p).toContain('inbound_messages_pkey');
  expect(p).not.toMatch(/Seq Scan|Bitmap Heap Scan|Gather/);
  expect(belowTheTop(p)).not.toMatch(/Sort\s+\(/);
});

test('GET /inbound of a sender, a recipient or a route is planned for its value', () => {
  expect([{ from: 'a@example.org' }, { to: 'support@in1.example.com' }, { routeId: 'x' }].map(inboundListGeneric)).toEqual([false, false, false]);
});

test('RCPT TO: the routes of a recipient’s domain come through the one VERIFIED row of that domain', async () => {
  const p = await planOf(verifiedRoutes(db.knex, 'in7.example.com'));
  expect(p).toContain('inbound_domains_verified_key');
  expect(p).not.toMatch(/Seq Scan on inbound_domains/);
  const routes = await verifiedRoutes(db.knex, 'in7.example.com');
  expect(routes).toHaveLength(1);
});

test('the prune of a project\'s received mail finds the other rows of each raw message through inbound_messages_raw_idx, from its month on', async () => {
  const cutoff = (await db.knex.raw(`SELECT herald_uuid_shift(uuidv7(), interval '-300 days') AS id`)).rows[0].id as string;
  const res = await db.knex.raw(`EXPLAIN ${pruneInboundSql(true)}`, [projectId, cutoff, 500]);
  const p = partitionedPlan(res.rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n'));
  // The NOT EXISTS of another row of the raw message: an index probe of (project_id, raw_message_id), never the
  // project's every received message through the primary key.
  expect(p).toMatch(/Index (Only )?Scan using inbound_messages_raw_idx\w*/);
  expect(p).toMatch(/Index Cond: \(\(project_id = g\.project_id\) AND \(raw_message_id = g\.raw_message_id\)/);
  expect(p).not.toMatch(/Seq Scan on inbound_messages/);
  // And it deletes: the messages of the first 65 days of the year (in a transaction rolled back).
  const trx = await db.knex.transaction();
  try {
    const { rows } = await trx.raw(pruneInboundSql(true), [projectId, cutoff, 5000]);
    expect(rows[0].n).toBeGreaterThan(400);
    const left = await trx('raw_messages').where({ project_id: projectId }).count({ n: '*' }).first();
    expect(Number(left!.n)).toBe(3000 - rows[0].n);
  } finally {
    await trx.rollback();
  }
});
