import { createKnex } from '../../db/database';
import { EMAIL_STATUSES, estimateByStatus } from '../../metrics/database';
import { createMetrics } from '../../metrics/metrics';
import { createProject } from '../../projects/service';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { parseExposition } from '../support/prometheus';

/**
 * The gauges GET /metrics reads from the database (metrics/database.ts), on a real PostgreSQL with rows of every
 * kind: emails of each status (counted exactly, then estimated from the statistics), the queue's depth and oldest
 * age, the live automation executions, the cache, and a database that does not answer.
 */
let db: TestDatabase;
let projectId: string;
let contactId: string;

/** Emails per status in this file's table. */
const COUNTS: Record<string, number> = { QUEUED: 3, SENDING: 1, SENT: 40, FAILED: 5, CANCELLED: 2, BOUNCED: 4, SUPPRESSED: 1 };

beforeAll(async () => {
  db = await createTestDatabase();
  projectId = (await createProject('Metrics')).id;
  [{ id: contactId }] = await db.knex('contacts').insert({ project_id: projectId, email: 'gauges@example.org' }).returning('id');
  for (const [status, n] of Object.entries(COUNTS)) {
    await db.knex.raw(
      `INSERT INTO emails (project_id, contact_id, from_email, to_email, subject, html, status, available_at, created_at)
       SELECT ?::uuid, ?::uuid, 'hi@example.com', 'gauges@example.org', 's', 'h', ?,
              now() + interval '1 day', -- not due: nothing would claim them anyway (no worker here)
              now() - interval '1 hour' + g * interval '1 second'
       FROM generate_series(1, ?::int) g`,
      [projectId, contactId, status, n],
    );
  }
  const [{ id: automationId }] = await db.knex('automations').insert({ project_id: projectId, name: 'a', trigger_event: 'x', steps: JSON.stringify([]) }).returning('id');
  const executions = [...Array(2).fill('RUNNING'), ...Array(3).fill('WAITING'), ...Array(4).fill('COMPLETED'), 'FAILED'];
  await db.knex('automation_executions').insert(executions.map((status) => ({ project_id: projectId, automation_id: automationId, contact_id: contactId, status, exclusive: false })));
});
afterAll(async () => { await db.close(); });

const scrape = async (metrics: ReturnType<typeof createMetrics>) => parseExposition(await metrics.render());

test('a small table: emails counted exactly by status; the queue and the executions as they are', async () => {
  const m = await scrape(createMetrics(db.knex, { cacheMs: 0 }));
  for (const status of EMAIL_STATUSES) expect([status, m.value('herald_emails', { status })]).toEqual([status, COUNTS[status]]);
  expect(m.value('herald_emails_estimated')).toBe(0);
  expect(m.value('herald_delivery_queue_depth')).toBe(3);
  // The oldest QUEUED email was stored an hour ago (minus 1 s); the scrape came a moment later.
  const age = m.value('herald_delivery_queue_oldest_age_seconds')!;
  expect(age).toBeGreaterThan(3590);
  expect(age).toBeLessThan(3600 + 600);
  expect(m.value('herald_automation_executions', { status: 'running' })).toBe(2);
  expect(m.value('herald_automation_executions', { status: 'waiting' })).toBe(3);
  expect(m.value('herald_metrics_database_up')).toBe(1);
});

test('a table at or over the exact threshold is estimated from pg_stats and reltuples, and says so', async () => {
  await db.knex.raw('ANALYZE emails');
  const m = await scrape(createMetrics(db.knex, { cacheMs: 0, exactEmailsBelow: 10 }));
  expect(m.value('herald_emails_estimated')).toBe(1);
  // ANALYZE read every row of this small table: the most common values' frequencies are exact, so the estimates are.
  for (const status of EMAIL_STATUSES) {
    const estimate = m.value('herald_emails', { status })!;
    expect([status, Math.abs(estimate - COUNTS[status]!) <= 1]).toEqual([status, true]);
  }
  const age = m.value('herald_emails_statistics_age_seconds')!;
  expect(age).toBeGreaterThanOrEqual(0);
  expect(age).toBeLessThan(600);
  // The queue is still counted, not estimated.
  expect(m.value('herald_delivery_queue_depth')).toBe(3);
});

test('the depth count is capped: a gauge at the cap means "at least"', async () => {
  const m = await scrape(createMetrics(db.knex, { cacheMs: 0, countCap: 2 }));
  expect(m.value('herald_delivery_queue_depth')).toBe(2);
  expect(m.value('herald_automation_executions', { status: 'running' })! + m.value('herald_automation_executions', { status: 'waiting' })!).toBe(2);
});

test('one reading serves every scrape within the cache time; a new reading after it', async () => {
  const cached = createMetrics(db.knex, { cacheMs: 60_000 });
  const fresh = createMetrics(db.knex, { cacheMs: 0 });
  // One statement per reading, whatever the number of gauges.
  const statements: string[] = [];
  const count = (q: { sql: string }) => statements.push(q.sql);
  db.knex.on('query', count);
  const first = await scrape(cached);
  db.knex.off('query', count);
  expect(statements).toHaveLength(1);
  const [{ id }] = await db.knex('emails').insert({ project_id: projectId, contact_id: contactId, from_email: 'hi@example.com', to_email: 'gauges@example.org', subject: 's', html: 'h', available_at: db.knex.raw("now() + interval '1 day'") }).returning('id');
  try {
    expect((await scrape(cached)).value('herald_delivery_queue_depth')).toBe(first.value('herald_delivery_queue_depth'));
    expect((await scrape(fresh)).value('herald_delivery_queue_depth')).toBe(first.value('herald_delivery_queue_depth')! + 1);
  } finally {
    await db.knex('emails').where({ project_id: projectId, id }).delete();
  }
});

test('a database that does not answer: herald_metrics_database_up 0, and the process\'s own series are still served', async () => {
  const unreachable = createKnex('postgres://herald:herald@127.0.0.1:1/nothing', { poolMax: 1 });
  try {
    const m = await scrape(createMetrics(unreachable, { cacheMs: 0 }));
    expect(m.value('herald_metrics_database_up')).toBe(0);
    expect(m.find('herald_emails')).toEqual([]);
    expect(m.find('herald_emails_accepted_total').length).toBeGreaterThan(0);
    expect(m.value('process_cpu_user_seconds_total')).toBeGreaterThan(0);
  } finally {
    await unreachable.destroy();
  }
});

test('estimates from the statistics: the most common values as they are; the rest shared among the other statuses only when there is a rest', () => {
  // Every status in the list: the others are 0.
  expect(estimateByStatus({ vals: ['SENT', 'FAILED', 'QUEUED'], freqs: [0.9, 0.07, 0.03], distinct: 3, nulls: 0 }, 1_000_000))
    .toEqual({ QUEUED: 30_000, SENDING: 0, SENT: 900_000, FAILED: 70_000, CANCELLED: 0, BOUNCED: 0, SUPPRESSED: 0 });
  // A status too rare for the list (n_distinct 4, 3 listed): the 0.4 % not covered goes to the four statuses outside it, so the figures still add up.
  const e = estimateByStatus({ vals: ['SENT', 'FAILED', 'QUEUED'], freqs: [0.9, 0.066, 0.03], distinct: 4, nulls: 0 }, 1_000_000);
  expect(e).toMatchObject({ SENT: 900_000, FAILED: 66_000, QUEUED: 30_000, SENDING: 1000, CANCELLED: 1000, BOUNCED: 1000, SUPPRESSED: 1000 });
  expect(Object.values(e).reduce((a, b) => a + b, 0)).toBe(1_000_000);
});
