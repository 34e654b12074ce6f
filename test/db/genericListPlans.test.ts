import { emailListQueries, listStatementOptions, type EmailFilter } from '../../emails/emails';
import { eventListGeneric, filteredEvents, type EventFilter } from '../../db/queries/events';
import { contactListGeneric, filteredContacts, type ContactFilter } from '../../db/queries/contacts';
import { filteredSuppressions } from '../../audience/suppressions';
import { cappedCount, pageQueries, pageStatement, pageWithTotal, type PageRequest } from '../../db/pages';
import { createProject } from '../../projects/service';
import { createTestDatabase, type TestDatabase, vacuumAnalyze } from '../support/db';
import { belowTheTop, genericPlanOf } from '../support/plans';

/**
 * The lists that run with PostgreSQL's generic plan (db/pages.ts `genericPlan`: GET /emails, GET /events without a
 * time window, GET /contacts without a search, GET /suppressions) keep the plan of a planned list: one index read newest first per partition, page and capped count,
 * whatever the values. Read from EXPLAIN (GENERIC_PLAN) of the very statement pageWithTotal sends, on 40 projects of
 * rows of unequal sizes, where a sequential scan or a sort of a project's rows would show. And the answers are those
 * of the statement planned for its values.
 */
let db: TestDatabase;
let big: string;
let small: string;
let campaignId: string;
let afterId: string;
let afterEvent: string;
let afterContact: string;
let bigContact: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const projects: string[] = [];
  for (let i = 0; i < 40; i++) projects.push((await createProject(`p${i}`)).id);
  [big, small] = projects as [string, string];
  campaignId = '01900000-0000-7000-8000-00000000ca02';
  // The first project holds half the rows, the second a few dozen, the others the rest.
  await db.knex.raw(
    `INSERT INTO contacts (project_id, email)
     SELECT CASE WHEN g % 2 = 0 THEN (:p::uuid[])[1] WHEN g % 500 = 1 THEN (:p::uuid[])[2] ELSE (:p::uuid[])[3 + g % 38] END, 'user' || g || '@example.org'
     FROM generate_series(1, 16000) g`, { p: projects });
  await db.knex.raw(
    `INSERT INTO emails (project_id, contact_id, campaign_id, from_email, to_email, subject, html, status, available_at)
     SELECT c.project_id, c.id, CASE WHEN g % 3 = 0 THEN :campaign::uuid END, 'hi@example.com', c.email, 's', 'h',
            (ARRAY['SENT', 'SENT', 'SENT', 'FAILED', 'QUEUED'])[1 + (g % 5)], now() + interval '1 day'
     FROM contacts c CROSS JOIN generate_series(1, 5) g`, { campaign: campaignId });
  await db.knex.transaction(async (trx) => {
    // Without the webhook outbox's per-row trigger: no webhook listens, the plans are what is tested.
    await trx.raw("SET LOCAL session_replication_role = 'replica'");
    await trx.raw(`INSERT INTO events (project_id, name, contact_id, email_id, data)
                   SELECT project_id, CASE WHEN status = 'SENT' THEN 'email.sent' ELSE 'email.failed' END, contact_id, id, '{}'::jsonb FROM emails`);
  });
  // One contact in seven unsubscribed, and suppressed with one of four reasons.
  await db.knex.raw("UPDATE contacts SET subscribed = false WHERE abs(hashtext(email)) % 7 = 0");
  await db.knex.raw(`INSERT INTO suppressions (project_id, email, reason)
                     SELECT project_id, email, (ARRAY['manual', 'hard_bounce', 'complaint', 'soft_bounce'])[1 + abs(hashtext(email)) % 4]
                     FROM contacts WHERE NOT subscribed`);
  await vacuumAnalyze(db.knex, ['contacts', 'emails', 'events', 'suppressions']);
  afterId = (await db.knex('emails').where({ project_id: big }).orderBy('id', 'desc').offset(2000).first('id')).id;
  afterEvent = (await db.knex('events').where({ project_id: big }).orderBy('id', 'desc').offset(2000).first('id')).id;
  afterContact = (await db.knex('contacts').where({ project_id: big }).orderBy('id', 'desc').offset(2000).first('id')).id;
  bigContact = (await db.knex('contacts').where({ project_id: big, email: 'user8@example.org' }).first('id')).id;
}, 300_000);
afterAll(async () => { await db.close(); });

const genericPlan = (statement: Parameters<typeof genericPlanOf>[1], settings?: Record<string, string>) => genericPlanOf(db.knex, statement, settings);

const since = new Date(Date.now() - 3_600_000);
const until = new Date(Date.now() + 3_600_000);

const emailStatement = (projectId: string, filter: EmailFilter, request: PageRequest) => {
  const { page, count } = emailListQueries(db.knex, projectId, filter, request);
  return { page, count, options: listStatementOptions(request) };
};

test.each<[string, RegExp, EmailFilter, boolean]>([
  ['first page', /emails_pkey/, {}, false],
  ['page after a cursor', /emails_pkey/, {}, true],
  ['date range', /emails_pkey/, { since, until }, true],
  ['status', /emails_project_status_idx/, { status: 'FAILED' }, false],
  ['status after a cursor', /emails_project_status_idx/, { status: 'FAILED' }, true],
  ['status and date range', /emails_project_status_idx/, { status: 'FAILED', since, until }, false],
  ['campaign', /emails_project_campaign_idx/, { campaignId: '01900000-0000-7000-8000-00000000ca02' }, false],
  ['campaign after a cursor', /emails_project_campaign_idx/, { campaignId: '01900000-0000-7000-8000-00000000ca02' }, true],
  ['recipient', /emails_project_to_idx/, { to: 'user7@example.org' }, false],
  ['contact', /emails_contact_idx/, { contactId: '01900000-0000-7000-8000-0000000000c1' }, false],
])('GET /emails, %s: its generic plan reads %s newest first, page and count, no scan, no sort', async (_name, index, filter, cursor) => {
  const { page, count, options } = emailStatement(big, filter, { limit: 20, afterId: cursor ? afterId : undefined });
  expect(options.genericPlan).toBe(true);
  const p = await genericPlan(pageStatement(page, count, options));
  expect(p).toMatch(index);
  expect(p).not.toMatch(/Seq Scan|Bitmap Heap Scan|Gather/);
  expect(belowTheTop(p)).not.toMatch(/Sort\s+\(/);
});

test.each<[string, RegExp, EventFilter, boolean]>([
  ['first page', /events_pkey/, {}, false],
  ['page after a cursor', /events_pkey/, {}, true],
  ['name', /events_name_idx/, { name: 'email.failed' }, false],
  ['contact', /events_contact_idx/, { contactId: '01900000-0000-7000-8000-0000000000c1' }, false],
])('GET /events, %s: its generic plan reads %s newest first, page and count, no scan, no sort', async (_name, index, filter, cursor) => {
  expect(eventListGeneric(filter)).toBe(true);
  const filtered = filteredEvents(db.knex, big, filter);
  const request = { limit: 20, afterId: cursor ? afterEvent : undefined };
  const p = await genericPlan(pageStatement(pageQueries(filtered, request).page, cappedCount(filtered, 1_000, 'id'), { whole: cursor ? undefined : 20 }));
  expect(p).toMatch(index);
  expect(p).not.toMatch(/Seq Scan|Bitmap Heap Scan|Gather/);
  expect(belowTheTop(p)).not.toMatch(/Sort\s+\(/);
});

/** The statement listCappedPage sends with its generic plan: the page, and its count read newest first. */
const cappedStatement = (filtered: () => import('knex').Knex.QueryBuilder, column: string, cursor?: string) => {
  const request = { limit: 20, afterId: cursor };
  return pageStatement(pageQueries(filtered, request, column).page, cappedCount(filtered, 1_000, column), { column, whole: cursor ? undefined : 20 });
};

test.each<[string, RegExp, ContactFilter, boolean]>([
  ['first page', /contacts_pkey/, {}, false],
  ['page after a cursor', /contacts_pkey/, {}, true],
  ['unsubscribed', /contacts_project_subscribed_id_idx/, { subscribed: false }, false],
  ['unsubscribed after a cursor', /contacts_project_subscribed_id_idx/, { subscribed: false }, true],
])('GET /contacts, %s: its generic plan reads %s newest first, page and count, no scan, no sort', async (_name, index, filter, cursor) => {
  expect(contactListGeneric(filter)).toBe(true);
  const p = await genericPlan(cappedStatement(() => filteredContacts(db.knex, big, filter), 'id', cursor ? afterContact : undefined));
  expect(p).toMatch(index);
  expect(p).not.toMatch(/Seq Scan|Bitmap Heap Scan|Gather/);
  expect(belowTheTop(p)).not.toMatch(/Sort\s+\(/);
});

test('a search of contacts is planned for its term, not generically', () => {
  expect(contactListGeneric({ search: 'ada' })).toBe(false);
  expect(contactListGeneric({ search: 'ada', subscribed: true })).toBe(false);
});

test.each<[string, RegExp, { reason?: 'hard_bounce' }]>([
  ['every reason', /suppressions_project_id_idx/, {}],
  ['one reason', /suppressions_project_reason_id_idx/, { reason: 'hard_bounce' }],
])('GET /suppressions, %s: its generic plan reads %s newest first, page and count, no scan, no sort', async (_name, index, filter) => {
  const p = await genericPlan(cappedStatement(filteredSuppressions(db.knex, big, filter), 'id'));
  expect(p).toMatch(index);
  expect(p).not.toMatch(/Seq Scan|Bitmap Heap Scan|Gather/);
  expect(belowTheTop(p)).not.toMatch(/Sort\s+\(/);
});

test.each<[string, () => import('knex').Knex.QueryBuilder, string]>([
  ['the large project\'s contacts after a cursor', () => filteredContacts(db.knex, big, {}).where('id', '<', afterContact), 'id'],
  ['the small project\'s unsubscribed contacts', () => filteredContacts(db.knex, small, { subscribed: false }), 'id'],
  ['the large project\'s hard bounces', () => filteredSuppressions(db.knex, big, { reason: 'hard_bounce' })(), 'id'],
  ['the small project\'s suppressions', () => filteredSuppressions(db.knex, small, {})(), 'id'],
])('the same page and total with the generic plan as planned for the values: %s', async (_name, filtered, column) => {
  const run = (genericPlan: boolean) => {
    const request = { limit: 20 };
    return pageWithTotal(pageQueries(filtered, request, column).page, cappedCount(filtered, 1_000, genericPlan ? column : undefined), { column, whole: 20, genericPlan });
  };
  for (let i = 0; i < 3; i++) expect(await run(true)).toEqual(await run(false));
});

test('a page\'s LIMIT and its count\'s cap are written into the statement: its generic plan knows how many rows it reads', async () => {
  const { page, count, options } = emailStatement(big, {}, { limit: 20 });
  const { sql } = pageStatement(page, count, options).toSQL().toNative();
  expect(sql).toMatch(/limit 21\b/);
  expect(sql).toMatch(/limit 1001\b/);
  expect(sql).not.toMatch(/limit \$/);
  // Bound, the planner took a LIMIT for a tenth of the rows: a parallel scan on a large table (BENCHMARKS.md section 54).
  const p = await genericPlan(pageStatement(page, count, options));
  expect(p).toMatch(/Limit {2}\(cost=[\d.]+ rows=21 /);
});

test('a time window of events is planned for its values, not generically', () => {
  expect(eventListGeneric({ since })).toBe(false);
  expect(eventListGeneric({ until })).toBe(false);
  expect(eventListGeneric({ contactId: 'x' })).toBe(true);
  expect(eventListGeneric({ name: 'email.sent' })).toBe(true);
});

test.each<[string, () => string, EmailFilter]>([
  ['the large project, every email', () => big, {}],
  ['the large project, a status', () => big, { status: 'QUEUED' }],
  ['the large project, a campaign after a cursor', () => big, { campaignId: '' }],
  ['the small project, a status', () => small, { status: 'FAILED' }],
  ['the small project, nothing (a campaign it does not have)', () => small, { campaignId: '01900000-0000-7000-8000-00000000ca99' }],
  ['the large project, a recipient', () => big, { to: 'user8@example.org' }],
  ['the large project, a contact', () => big, { contactId: '' }],
])('the same page and total with the generic plan as planned for the values: %s', async (_name, project, shape) => {
  const filter = { ...shape, ...(shape.campaignId === '' ? { campaignId } : {}), ...(shape.contactId === '' ? { contactId: bigContact } : {}) };
  const request = { limit: 20, afterId: 'campaignId' in filter && project() === big ? afterId : undefined };
  const run = (genericPlan: boolean) => {
    const { page, count } = emailListQueries(db.knex, project(), filter, request);
    return pageWithTotal(page, count, { ...listStatementOptions(request), genericPlan });
  };
  // Several times over: PostgreSQL makes a named statement's generic plan at its first runs.
  for (let i = 0; i < 3; i++) expect(await run(true)).toEqual(await run(false));
  const { total, rows } = await run(true);
  expect(rows.length).toBeLessThanOrEqual(21);
  if (filter.campaignId?.endsWith('ca99')) expect({ total, rows }).toEqual({ total: 0, rows: [] });
  else expect(total).toBeGreaterThan(0);
});

test('a list statement runs without parallel workers, planned for its values or generic, and leaves the session as it was', async () => {
  const filtered = () => db.knex('contacts').where('project_id', big).select('id', db.knex.raw("current_setting('max_parallel_workers_per_gather') AS workers"));
  const before = (await db.knex.raw("SELECT current_setting('max_parallel_workers_per_gather') AS w")).rows[0].w;
  expect(before).not.toBe('0');
  for (const genericPlan of [false, true]) {
    const { page } = pageQueries(filtered, { limit: 5 });
    const { rows, total } = await pageWithTotal(page, cappedCount(filtered, 1000, 'id'), { genericPlan });
    expect(rows).toHaveLength(6);
    expect(rows.every((r) => r.workers === '0')).toBe(true);
    expect(total).toBe(1001);
  }
  const after = await Promise.all(Array.from({ length: 10 }, () => db.knex.raw("SELECT current_setting('max_parallel_workers_per_gather') AS w")));
  expect(after.map((r) => r.rows[0].w)).toEqual(Array(10).fill(before));
});
