import type { Knex } from 'knex';
import { emailListQueries } from '../../emails/emails';
import { dailyStatsQuery, overview, overviewStatement } from '../../emails/overview';
import { countedEvents, filteredEvents, idFloorSince, listEvents, windowNewestFirst } from '../../db/queries/events';
import { LIST_COUNT_CAP, cappedCount, cappedPageQueries, idFloor, pageQueries } from '../../db/pages';
import { createPartition, dropPartition, listPartitions, partitioned } from '../../db/partitions';
import { queueSql } from '../../metrics/database';
import { createProject } from '../../projects/service';
import { createTestDatabase, type TestDatabase, vacuumAnalyze } from '../support/db';
import { analyzedPlanOfCall, genericPlanOf, partitionedPlan } from '../support/plans';

/**
 * The console's reads are index reads (issue 28): the overview's days (project_daily_stats_pkey), its queue
 * (emails_project_status_idx), a contact's emails and events (emails_contact_idx, events_contact_idx) and the capped
 * totals. The plans are read from EXPLAIN of the very SQL the code builds, on 50 projects of rows, enough that a
 * sequential scan would lose.
 */
let db: TestDatabase;
let projectId: string;
let contactId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const projects: string[] = [];
  for (let i = 0; i < 50; i++) projects.push((await createProject(`p${i}`)).id);
  projectId = projects[0]!;
  await db.knex.raw(
    `INSERT INTO contacts (project_id, email) SELECT (?::uuid[])[1 + g % 50], 'user' || g || '@example.org' FROM generate_series(1, 20000) g`, [projects]);
  await db.knex.raw(
    `INSERT INTO emails (project_id, contact_id, from_email, to_email, subject, html, status, available_at)
     SELECT c.project_id, c.id, 'hi@example.com', c.email, 's', 'h', (ARRAY['SENT', 'SENT', 'FAILED', 'QUEUED'])[1 + (g % 4)], now() + interval '1 day'
     FROM contacts c CROSS JOIN generate_series(1, 10) g`);
  await db.knex.raw(
    `INSERT INTO events (project_id, name, contact_id, email_id, data)
     SELECT project_id, 'email.sent', contact_id, id, '{}'::jsonb FROM emails WHERE status = 'SENT'`);
  // Two years of days of every project, 8 shards each.
  await db.knex.raw(
    `INSERT INTO project_daily_stats (project_id, day, shard, sent)
     SELECT p, current_date - d, s, 1 FROM unnest(?::uuid[]) p CROSS JOIN generate_series(0, 730) d CROSS JOIN generate_series(0, 7) s`, [projects]);
  await vacuumAnalyze(db.knex, ['contacts', 'emails', 'events', 'project_daily_stats']);
  contactId = (await db.knex('contacts').where({ project_id: projectId }).first('id')).id;
}, 180_000);
afterAll(async () => { await db.close(); });

async function plan(sql: string, bindings: readonly unknown[] = []): Promise<string> {
  const res = await db.knex.raw(`EXPLAIN ${sql}`, bindings as Knex.RawBinding[]);
  return partitionedPlan(res.rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n'));
}
const planOf = (b: { toSQL(): { sql: string; bindings: readonly unknown[] } }) => plan(b.toSQL().sql, b.toSQL().bindings);

test('the overview’s days are a range of the rollup’s primary key, whatever the history', async () => {
  const p = await planOf(dailyStatsQuery(db.knex, projectId, new Date(Date.now() - 89 * 86_400_000).toISOString().slice(0, 10)));
  expect(p).toContain('project_daily_stats_pkey');
  expect(p).toMatch(/Index Cond: \(\(project_id = .*\) AND \(day >= /);
  expect(p).not.toMatch(/Seq Scan/);
});

test('the overview’s queue: the project’s QUEUED range of emails_project_status_idx, capped, and its first entry', async () => {
  const { depth, oldest } = queueSql('project', 10_000);
  const d = await plan(depth, [projectId]);
  expect(d).toContain('emails_project_status_idx');
  expect(d).toMatch(/Limit/);
  expect(d).not.toMatch(/Seq Scan/);
  const o = await plan(oldest, [projectId]);
  expect(o).toContain('emails_project_status_idx');
  expect(o).not.toMatch(/Seq Scan|Sort/);
});

test('the overview’s statement has one generic plan: index reads of each part, whatever the project', async () => {
  const from = new Date(Date.now() - 89 * 86_400_000).toISOString().slice(0, 10);
  const p = await genericPlanOf(db.knex, overviewStatement(db.knex, projectId, from));
  expect(p).toContain('project_daily_stats_pkey');
  expect(p).toContain('emails_project_status_idx');
  expect(p).toContain('domains_project_id_idx');
  expect(p).not.toMatch(/Seq Scan|Bitmap|Gather|Sort/);
  // The queue's count is stopped by its cap written into the text (10,001), not by a bound LIMIT the plan guessed.
  expect(overviewStatement(db.knex, projectId, from).toSQL().sql).toContain('LIMIT 10001');
  // And its answer is the statement's planned for its values.
  const { sql, bindings } = overviewStatement(db.knex, projectId, from).toSQL();
  const planned = (await db.knex.raw(sql, bindings as Knex.RawBinding[])).rows[0];
  const viaOverview = await overview(db.knex, projectId, 90);
  expect(viaOverview.queue.depth).toBe(Math.min(planned.depth, 10_000));
  expect(viaOverview.totals.sent).toBe((planned.days as { sent: number }[]).reduce((a, d) => a + d.sent, 0));
});

test('a contact’s emails: emails_contact_idx, and a capped count', async () => {
  const { page, count } = emailListQueries(db.knex, projectId, { contactId }, { limit: 20 });
  const p = await planOf(page);
  expect(p).toContain('emails_contact_idx');
  expect(p).not.toMatch(/Seq Scan/);
  expect(await planOf(count)).not.toMatch(/Seq Scan/);
});

test('a contact’s events: events_contact_idx, and a capped count', async () => {
  const filtered = filteredEvents(db.knex, projectId, { contactId });
  const p = await planOf(pageQueries(filtered, { limit: 20 }).page);
  expect(p).toContain('events_contact_idx');
  expect(p).not.toMatch(/Seq Scan/);
  expect(await planOf(cappedCount(filtered, 1_000))).not.toMatch(/Seq Scan/);
});

test('the events list and its capped count read the project through an index, stopping at the cap', async () => {
  const filtered = filteredEvents(db.knex, projectId, {});
  const p = await planOf(pageQueries(filtered, { limit: 20 }).page);
  expect(p).toContain('events_pkey');
  expect(p).not.toMatch(/Seq Scan|Sort/);
  const c = await planOf(cappedCount(filtered, 1_000));
  expect(c).toMatch(/Limit/);
  expect(c).not.toMatch(/Seq Scan/);
});

test('a date range of events: a page of many matches reads events_pkey from an hour past the range’s end', async () => {
  // Every event of this file is of the last minutes: the range holds them all, so the page walks the primary key.
  const until = new Date(Date.now() + 60_000);
  const filtered = filteredEvents(db.knex, projectId, { since: new Date(until.getTime() - 86_400_000), until });
  const p = await planOf(pageQueries(filtered, { limit: 50 }).page);
  expect(p).toContain('events_pkey');
  expect(p).toMatch(/Index Cond: \(\(project_id = .*\) AND \(id < /);
  expect(p).not.toMatch(/Seq Scan/);
});

test('a recent window of events leaves out the partition of older months, which holds none of it (a page read it whole)', async () => {
  // 300 events of a month long before the monthly partitions: the default partition here (events_legacy in a migrated
  // database). A page of a recent window read every one of the project's entries in it to find none (BENCHMARKS.md 52).
  const old = new Date(Date.now() - 200 * 86_400_000);
  await db.knex.raw(
    `INSERT INTO events (id, project_id, name, data, created_at)
     SELECT herald_uuid_shift(?::uuid, g * interval '1 second'), ?, 'old.thing', '{}', ?::timestamptz + g * interval '1 second'
     FROM generate_series(1, 300) g`, [idFloor(old), projectId, old]);
  const since = new Date(Date.now() - 86_400_000);
  const until = new Date(Date.now() + 60_000);
  const idFrom = await idFloorSince(db.knex, projectId, since);
  expect(idFrom).toBeDefined();
  const p = await planOf(pageQueries(filteredEvents(db.knex, projectId, { since, until }, idFrom), { limit: 50 }).page);
  expect(p).not.toContain('events_default');
  // The recent window lists what it did; a window of those old events still finds them all.
  const recent = await listEvents(db.knex, projectId, { since, until }, { limit: 50 });
  expect(recent.rows.length).toBe(51); // a page's rows and one more, which says there is a next page
  expect(recent.rows.every((e) => e.name !== 'old.thing')).toBe(true);
  // The first page of a window reads its floor in its own statement (windowFirstPage): PostgreSQL prunes the partition
  // below it as the statement runs, probing only its newest event of the project.
  const older = (await listPartitions(db.knex, partitioned('events'))).find((p) => p.isDefault)!.name;
  const nodes = await analyzedPlanOfCall(db.knex, () => listEvents(db.knex, projectId, { since, until }, { limit: 50 }));
  const pageReads = nodes.filter((n) => n['Index Name']?.startsWith('events_pkey'));
  expect(pageReads.length).toBeGreaterThan(0);
  expect(pageReads.filter((n) => n['Actual Loops'] > 0).map((n) => n['Relation Name'])).not.toContain(older);
  expect(pageReads.map((n) => n['Relation Name'])).toContain(older);
  const ofOld = await listEvents(db.knex, projectId, { since: new Date(old.getTime() - 1000), until: new Date(old.getTime() + 3_600_000) }, { limit: 50 });
  expect(ofOld.rows.map((e) => e.name)).toEqual(Array(51).fill('old.thing'));
  expect(ofOld.total).toBe(300);
  // A window with no event at all: an empty page.
  const none = await listEvents(db.knex, projectId, { since: new Date(old.getTime() - 86_400_000 * 30), until: new Date(old.getTime() - 86_400_000 * 29) }, { limit: 50 });
  expect(none.rows).toEqual([]);
});

test('a window of one event\'s name bounds the ids by itself, in the page\'s one statement, but for an email\'s outcome', async () => {
  const { oldest } = await db.knex('events').where({ project_id: projectId, name: 'old.thing' }).first(db.knex.raw('min(created_at) AS oldest'));
  const statements: string[] = [];
  const seen = (q: { sql: string }) => statements.push(q.sql);
  db.knex.on('query', seen);
  try {
    const older = await listEvents(db.knex, projectId, { name: 'old.thing', since: new Date(oldest.getTime() - 1000) }, { limit: 50 });
    expect(older.rows.map((e) => e.name)).toEqual(Array(51).fill('old.thing'));
    expect(older.total).toBe(300);
    const recent = await listEvents(db.knex, projectId, { name: 'old.thing', since: new Date(Date.now() - 86_400_000) }, { limit: 50 });
    expect(recent.rows).toEqual([]);
    expect(statements).toHaveLength(2);
    // email.sent keeps the id its email was given when queued: its window is bounded by the probe of the partitions.
    statements.length = 0;
    await listEvents(db.knex, projectId, { name: 'email.sent', since: new Date(Date.now() - 86_400_000) }, { limit: 50 });
    expect(statements).toHaveLength(2);
  } finally {
    db.knex.off('query', seen);
  }
});

test('a window of events reads the partitions once per process, and again when a month was made or dropped since', async () => {
  const since = new Date(Date.now() - 86_400_000);
  const floor = await idFloorSince(db.knex, projectId, since);
  const statements: string[] = [];
  const seen = (q: { sql: string }) => statements.push(q.sql);
  const listings = () => statements.filter((sql) => sql.includes('FROM pg_inherits i JOIN pg_class c')).length;
  db.knex.on('query', seen);
  try {
    // Known: the probes and the partitions' oids in one statement.
    expect(await idFloorSince(db.knex, projectId, since)).toBe(floor);
    expect(statements).toHaveLength(1);
    // A month made since: the oids differ, the partitions are read again and probed again.
    await createPartition(db.knex, partitioned('events'), 'events_p203101', { from: new Date(Date.UTC(2031, 0, 1)), to: new Date(Date.UTC(2031, 1, 1)) }, 5_000);
    statements.length = 0;
    expect(await idFloorSince(db.knex, projectId, since)).toBe(floor);
    expect([statements.length, listings()]).toEqual([3, 1]);
    statements.length = 0;
    await idFloorSince(db.knex, projectId, since);
    expect(statements).toHaveLength(1);
    // A month dropped since: its probe fails, and the same.
    await dropPartition(db.knex, 'events', 'events_p203101');
    statements.length = 0;
    expect(await idFloorSince(db.knex, projectId, since)).toBe(floor);
    expect([statements.length, listings()]).toEqual([3, 1]);
  } finally {
    db.knex.off('query', seen);
  }
  // And the window's events are listed as before.
  const listed = await listEvents(db.knex, projectId, { since, until: new Date(Date.now() + 60_000) }, { limit: 50 });
  expect(listed.rows.length).toBe(51);
});

test('the count of a window of events alone reads its created_at index only (no row is visited to check the id bounds)', async () => {
  const since = new Date(Date.now() - 86_400_000);
  const until = new Date(Date.now() + 60_000);
  const idFrom = await idFloorSince(db.knex, projectId, since);
  const { count } = cappedPageQueries(filteredEvents(db.knex, projectId, { since, until }, idFrom), { limit: 50 }, LIST_COUNT_CAP, 'id', { counted: countedEvents(db.knex, projectId, { since, until }) });
  const p = await planOf(count);
  expect(p).toMatch(/Index (Only )?Scan Backward using events_created_idx_p\d+/);
  expect(p).not.toMatch(/Bitmap|Sort|\bid [<>]/);
  // With a name (or a contact) the count reads what its page reads, bounds included.
  expect(countedEvents(db.knex, projectId, { name: 'email.sent', since, until })).toBeUndefined();
  expect(countedEvents(db.knex, projectId, {})).toBeUndefined();
});

test('a window’s first page is read by the ids with the generic plan when the window outnumbers the hour past it, else planned for it', async () => {
  expect(windowNewestFirst({ inside: 1001, after: 0 }, 50)).toBe(true);
  expect(windowNewestFirst({ inside: 1001, after: 949 }, 50)).toBe(true);
  expect(windowNewestFirst({ inside: 1001, after: 950 }, 50)).toBe(false);
  expect(windowNewestFirst({ inside: 51, after: 0 }, 50)).toBe(false);
  // 60 events of two hours ago, whose hour past the window holds none, and the window of the file's events, the hour
  // past whose end holds them all.
  const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000);
  await db.knex.raw(
    `INSERT INTO events (id, project_id, name, data, created_at)
     SELECT herald_uuid_shift(?::uuid, g * interval '1 second'), ?, 'window.thing', '{}', ?::timestamptz + g * interval '1 second'
     FROM generate_series(1, 60) g`, [idFloor(twoHoursAgo), projectId, twoHoursAgo]);
  const statements: { sql: string; name?: string }[] = [];
  const seen = (q: { sql: string; options?: { name?: string } }) => statements.push({ sql: q.sql, name: q.options?.name });
  const pageStatement = () => statements.find((q) => q.sql.includes('"page"'))!;
  db.knex.on('query', seen);
  try {
    const twoHours = await listEvents(db.knex, projectId, { since: new Date(twoHoursAgo.getTime() - 1000), until: new Date(twoHoursAgo.getTime() + 120_000) }, { limit: 50 });
    expect([twoHours.rows.length, twoHours.total, twoHours.totalExact]).toEqual([51, 60, true]);
    expect(twoHours.rows.every((e) => e.name === 'window.thing')).toBe(true);
    // One statement: the counts, the partitions' floor and the page read by the ids (db/queries/events.ts windowFirstPage).
    expect(statements.map((q) => q.name?.replace(/_[0-9a-f]+$/, ''))).toEqual(['herald_event_window']);
    statements.length = 0;
    // The file's events are in the hour past this window's end: planned for its values, its count read beside the page.
    const before = await listEvents(db.knex, projectId, { since: new Date(twoHoursAgo.getTime() - 3_600_000), until: new Date(twoHoursAgo.getTime() + 30_000) }, { limit: 50 });
    expect([before.rows.length, before.total]).toEqual([29, 29]);
    // (herald_custom: planned for its values at each run, db/prepared.ts withSettings.)
    expect(statements.map((q) => q.name?.replace(/_[0-9a-f]+$/, ''))).toEqual(['herald_event_window', 'herald_custom']);
    expect(pageStatement().name).toMatch(/^herald_custom_/);
    statements.length = 0;
    // A cursor's page is planned for its values too, and goes on where the first one stopped.
    const next = await listEvents(db.knex, projectId, { since: new Date(twoHoursAgo.getTime() - 1000), until: new Date(twoHoursAgo.getTime() + 120_000) }, { limit: 50, afterId: twoHours.rows[49]!.id });
    expect(next.rows.map((e) => e.id)).toEqual(twoHours.rows.slice(50).map((e) => e.id).concat(next.rows.slice(1).map((e) => e.id)));
    expect(next.rows).toHaveLength(10);
    expect(pageStatement().name).toMatch(/^herald_custom_/);
  } finally {
    db.knex.off('query', seen);
  }
});

test('a date range of events holds an event whose id was announced days before it was written (an email queued, sent later)', async () => {
  // An email's event id is made when it is queued; its email.sent is written when it goes out, maybe days later.
  const announced = idFloor(new Date(Date.now() - 3 * 86_400_000)).replace(/-0000-0000-000000000000$/, '-7abc-8def-0123456789ab');
  // email.failed (an outcome, as email.sent is: OUTCOME_EVENTS): the file's 2,000 email.sent events of this project may
  // be in the same minute, and before it on the page.
  await db.knex('events').insert({ id: announced, project_id: projectId, name: 'email.failed', data: {} });
  const listed = await listEvents(db.knex, projectId, { name: 'email.failed', since: new Date(Date.now() - 60_000), until: new Date(Date.now() + 60_000) }, { limit: 50 });
  expect(listed.rows.map((e) => e.id)).toContain(announced);
  const before = await listEvents(db.knex, projectId, { name: 'email.failed', until: new Date(Date.now() - 60_000) }, { limit: 50 });
  expect(before.rows.map((e) => e.id)).not.toContain(announced);
});
