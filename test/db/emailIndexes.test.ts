import type { Knex } from 'knex';
import { emailEventsQuery, emailListQueries, type EmailFilter } from '../../emails/emails';
import { createProject } from '../../projects/service';
import { createTestDatabase, type TestDatabase, vacuumAnalyze } from '../support/db';
import { partitionedPlan } from '../support/plans';

/**
 * Every query path of GET /emails and GET /emails/:id is served by an index (migration 20261124000001 names which).
 * The plans are read from EXPLAIN of the very SQL emails/emails.ts builds, on enough rows (25 projects of 4,000
 * emails) that a sequential scan would lose.
 */
let db: TestDatabase;
let projectId: string;
let afterId: string;
const CAMPAIGN = '01900000-0000-7000-8000-00000000ca01';
// 4,000 emails in each project, one project in 25: a project's page is an index read, never a scan of the table.
const PROJECTS = 25;

beforeAll(async () => {
  db = await createTestDatabase();
  const projects: string[] = [];
  for (let i = 0; i < PROJECTS; i++) projects.push((await createProject(`p${i}`)).id);
  projectId = projects[0]!;
  // Interleaved across projects as they would arrive; five statuses, 400 recipients per project, a quarter in campaigns.
  await db.knex.raw(
    `INSERT INTO emails (project_id, campaign_id, from_email, to_email, subject, html, status, available_at)
     SELECT (:projects::uuid[])[1 + g % :n], CASE WHEN g % 4 = 0 THEN :campaign::uuid END, 'hi@example.com',
            'user' || (g / :n) % 400 || '@example.org', 's', 'h',
            (ARRAY['SENT', 'SENT', 'SENT', 'FAILED', 'QUEUED', 'CANCELLED', 'SENT', 'SENT'])[1 + (g / :n) % 8], now() + interval '1 day'
     FROM generate_series(1, :n * 4000) g`, { projects, n: PROJECTS, campaign: CAMPAIGN });
  // The sent events without the webhook outbox's per-row trigger (no webhook listens; the plans are what is tested):
  // the trigger made this insert a third of the setup, which a loaded CI machine once stretched past the timeout.
  await db.knex.transaction(async (trx) => {
    await trx.raw("SET LOCAL session_replication_role = 'replica'");
    await trx.raw(`INSERT INTO events (project_id, name, email_id, data)
                   SELECT project_id, 'email.sent', id, '{}'::jsonb FROM emails WHERE status = 'SENT'`);
  });
  await vacuumAnalyze(db.knex, ['emails', 'events']);
  afterId = (await db.knex('emails').where({ project_id: projectId }).orderBy('id', 'desc').offset(1000).first('id')).id;
}, 300_000);
afterAll(async () => { await db.close(); });

async function plan(builder: { toSQL(): { sql: string; bindings: readonly unknown[] } }): Promise<string> {
  const { sql, bindings } = builder.toSQL();
  const res = await db.knex.raw(`EXPLAIN ${sql}`, bindings as Knex.RawBinding[]);
  return partitionedPlan(res.rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n'));
}

const since = new Date(Date.now() - 3_600_000);
const until = new Date(Date.now() + 3_600_000);

// A recipient has a few emails: the planner may fetch them all by the index and sort those few (a bitmap scan). Every
// other filter matches many: its page must be the index read in id order, stopping after the page (no sort).
test.each<[string, string, EmailFilter, boolean, boolean]>([
  ['first page', 'emails_pkey', {}, false, false],
  ['page after a cursor', 'emails_pkey', {}, true, false],
  ['date range', 'emails_pkey', { since, until }, true, false],
  ['status', 'emails_project_status_idx', { status: 'FAILED' }, true, false],
  ['status and date range', 'emails_project_status_idx', { status: 'FAILED', since, until }, false, false],
  ['recipient', 'emails_project_to_idx', { to: 'user7@example.org' }, false, true],
  ['recipient after a cursor', 'emails_project_to_idx', { to: 'user7@example.org' }, true, true],
  ['campaign', 'emails_project_campaign_idx', { campaignId: CAMPAIGN }, true, false],
  ['campaign and date range', 'emails_project_campaign_idx', { campaignId: CAMPAIGN, since }, false, false],
])('list page: %s uses %s', async (_name, index, filter, cursor, fewRows) => {
  const { page } = emailListQueries(db.knex, projectId, filter, { limit: 20, afterId: cursor ? afterId : undefined });
  const p = await plan(page);
  expect(p).toContain(index);
  expect(p).not.toMatch(/Seq Scan/);
  if (!fewRows) expect(p).not.toMatch(/Sort/);
});

// The whole project's count: any index that leads with project_id counts it (since the primary key gained the partition
// key, db/partitions.ts, the planner may prefer the as small project-status index for an index-only count). A date
// range is a range of ids (UUIDv7): the primary key reads it as a range, the project-status index, which ends in id,
// as a condition on its index-only entries of the project; which is cheaper turns on the sample ANALYZE drew, and a CI
// run saw the second. Either reads only the project, never the table.
test.each<[string, RegExp, EmailFilter]>([
  ['all', /emails_pkey|emails_project_status_idx/, {}],
  ['status', /emails_project_status_idx/, { status: 'SENT' }],
  ['recipient', /emails_project_to_idx/, { to: 'user7@example.org' }],
  ['campaign', /emails_project_campaign_idx/, { campaignId: CAMPAIGN }],
  ['date range', /emails_pkey|emails_project_status_idx/, { since }],
])('list total (capped): %s reads only the project through %s, at most the cap', async (_name, index, filter) => {
  const { count } = emailListQueries(db.knex, projectId, filter, { limit: 20 });
  const p = await plan(count as never);
  expect(p).toMatch(index);
  expect(p).toMatch(/Limit/);
  expect(p).not.toMatch(/Seq Scan/);
});

test('an email’s timeline reads its events through events_email_idx', async () => {
  const email = await db.knex('emails').where({ project_id: projectId, status: 'SENT' }).first('id');
  const p = await plan(emailEventsQuery(db.knex, projectId, email.id).toKnexQuery());
  expect(p).toContain('events_email_idx');
  expect(p).not.toMatch(/Seq Scan/);
});

test('the capped count and the page answer what the table holds', async () => {
  const { page, count } = emailListQueries(db.knex, projectId, { status: 'FAILED' }, { limit: 20 });
  const rows = (await page) as { status: string }[];
  expect(rows.length).toBe(21);
  expect(rows.every((r) => r.status === 'FAILED')).toBe(true);
  const exact = await db.knex('emails').where({ project_id: projectId, status: 'FAILED' }).count('* as n').first();
  expect(Number((await count)[0]!.n)).toBe(Number(exact!.n));
});
