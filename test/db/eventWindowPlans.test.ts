import { segmentMembers } from '../../audience/segments';
import { createKnex } from '../../db/database';
import { createMonthlyPartitions, listPartitions, monthStart, partitioned } from '../../db/partitions';
import { createProject } from '../../projects/service';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { analyzedPlanOfCall } from '../support/plans';

/**
 * A segment over a window of events ("opened in the last 30 days") reads the events' partitions (by id) that the window
 * can reach and prunes the months before it (audience/compile.ts with db/queries/events.ts eventIdFloorSql): a bound on
 * `created_at` pruned none, and a page read the older months' index entries of the project whole to find no event of
 * the window (245 ms a page of a million events; BENCHMARKS.md section 68). An email's outcome keeps the id announced
 * when the email was queued, of any age: its windows are read without the bound, and still find it.
 */
let db: TestDatabase;
let projectId: string;
const ids: Record<string, string> = {};
const DAY = 86_400_000;

beforeAll(async () => {
  db = await createTestDatabase();
  projectId = (await createProject('windows')).id;
  await createMonthlyPartitions(db.knex, partitioned('events'), monthStart(new Date(), -4), monthStart(new Date(), 1));
  await db.knex.raw(`INSERT INTO contacts (project_id, email) SELECT ?, 'user' || g || '@example.org' FROM generate_series(1, 2000) g`, [projectId]);
  // Every contact opened an email 100 days ago (a month three or four back); one in four opened one 3 days ago; one in
  // five was sent an email 2 days ago that was queued 60 days ago (its email.sent's id is of then).
  await db.knex.raw(
    `INSERT INTO events (id, project_id, contact_id, name, created_at)
     SELECT uuidv7(-x.age), c.project_id, c.id, x.name, now() - x.created
     FROM (SELECT project_id, id, row_number() OVER (ORDER BY id) AS n FROM contacts WHERE project_id = ?) c
     CROSS JOIN LATERAL (VALUES ('email.opened', interval '100 days', interval '100 days', true),
                                ('email.opened', interval '3 days', interval '3 days', c.n % 4 = 0),
                                ('email.sent', interval '60 days', interval '2 days', c.n % 5 = 0)) AS x(name, age, created, happened)
     WHERE x.happened`, [projectId]);
  await db.knex.raw('ANALYZE events');
  const make = async (name: string, filter: object) => {
    ids[name] = (await db.knex('segments').insert({ project_id: projectId, name, type: 'DYNAMIC', condition: JSON.stringify({ logic: 'AND', groups: [{ filters: [filter] }] }) }).returning('id'))[0].id;
  };
  await make('opened', { field: 'event.email.opened', operator: 'triggeredWithin', value: 30, unit: 'days' });
  await make('notOpened', { field: 'event.email.opened', operator: 'notTriggeredWithin', value: 30, unit: 'days' });
  await make('sent', { field: 'event.email.sent', operator: 'triggeredWithin', value: 7, unit: 'days' });
}, 120_000);
afterAll(async () => { await db.close(); });

/** The contacts of the project in `created_at`'s window, newest first, as SQL over the events alone says. */
const expected = (name: string, days: number, negate = false) => db.knex('contacts as c').where('c.project_id', projectId)
  .whereRaw(`${negate ? 'NOT ' : ''}EXISTS (SELECT 1 FROM events e WHERE e.project_id = c.project_id AND e.contact_id = c.id AND e.name = ? AND e.created_at >= now() - make_interval(days => ?))`, [name, days])
  .orderBy('c.id', 'desc').limit(1000).pluck('c.id');

const members = async (segment: string) => (await segmentMembers(db.knex, projectId, ids[segment]!, { limit: 1000 })).rows.slice(0, 1000).map((c) => c.id);

test('the window\'s members are those of its events\' created_at, the outcome whose id is older than the window among them', async () => {
  const opened = await members('opened');
  expect(opened).toHaveLength(500);
  expect(opened).toEqual(await expected('email.opened', 30));
  expect(await members('notOpened')).toEqual(await expected('email.opened', 30, true));
  const sent = await members('sent');
  expect(sent).toHaveLength(400);
  expect(sent).toEqual(await expected('email.sent', 7));
});

test('a page of the window reads no partition of the months before it', async () => {
  const windowStart = Date.now() - 30 * DAY - 60 * 60 * 1000;
  const parts = await listPartitions(db.knex, partitioned('events'));
  const before = parts.filter((p) => p.to !== null && p.to.getTime() <= windowStart).map((p) => p.name);
  // The partition of 100 days ago, with an event of every contact, is one of them.
  expect(before.length).toBeGreaterThanOrEqual(2);
  for (const segment of ['opened', 'notOpened']) {
    const read = (await analyzedPlanOfCall(db.knex, () => segmentMembers(db.knex, projectId, ids[segment]!, { limit: 10 })))
      .map((n) => n['Relation Name']).filter((r): r is string => r !== undefined && r.startsWith('events'));
    expect(read.length).toBeGreaterThan(0);
    expect(read.filter((r) => before.includes(r))).toEqual([]);
  }
  // An outcome's window is read in every partition: its ids cannot be bounded by its created_at.
  const sentRead = (await analyzedPlanOfCall(db.knex, () => segmentMembers(db.knex, projectId, ids.sent!, { limit: 10 })))
    .map((n) => n['Relation Name']).filter((r): r is string => r !== undefined);
  expect(sentRead.some((r) => before.includes(r))).toBe(true);
});

test('a page of the window is planned for its values once per connection, not at each request', async () => {
  // Its values (project, event name, window) written into its text, the cursor alone a parameter (db/pages.ts
  // pageStatementCache, db/prepared.ts genericStatementOf): PostgreSQL keeps the plan it made for them.
  const knex = createKnex(db.url, { poolMax: 1 });
  try {
    const first = await segmentMembers(knex, projectId, ids.opened!, { limit: 10 });
    for (let i = 0; i < 3; i++) expect(await segmentMembers(knex, projectId, ids.opened!, { limit: 10 })).toEqual(first);
    const after = first.rows[9]!.id;
    const next = await segmentMembers(knex, projectId, ids.opened!, { limit: 10, afterId: after });
    expect(await segmentMembers(knex, projectId, ids.opened!, { limit: 10, afterId: first.rows[4]!.id })).not.toEqual(next);
    expect(next.rows.every((c) => c.id < after)).toBe(true);
    const statements = (await knex.raw(`SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements WHERE name LIKE 'herald_valued_%' ORDER BY generic_plans DESC`)).rows;
    expect(statements.map((s: { generic_plans: number; custom_plans: number }) => [s.generic_plans, s.custom_plans])).toEqual([[4, 0], [2, 0]]);
    expect(statements[0].statement).toContain(`'${projectId}'`);
    expect(statements[0].statement).toContain("'email.opened'");
  } finally {
    await knex.destroy();
  }
});
