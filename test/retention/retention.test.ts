import type { Knex } from 'knex';
import { createMonthlyPartitions, listPartitions, monthStart, monthSuffix, partitioned } from '../../db/partitions';
import { addDomain } from '../../domains/rows';
import { applyPartitions, trimRows } from '../../retention/retention';
import { nextRetentionSlot, RETENTION_INTERVAL_MS } from '../../retention/schedule';
import { recordHits, type Hit } from '../../tracking/record';
import { workflowId } from '../../workflows/registry';
import { bearer } from '../support/app';
import { startEndToEnd, type EndToEnd } from '../support/endToEnd';
import { waitForEmails } from '../support/engine';
import { waitFor } from '../support/processes';

/**
 * Retention (issue 33, point 5) end to end on the embedded engine: mail sent, delivered, opened and clicked through the
 * real pipeline, then its month's partitions dropped (retention/retention.ts applyPartitions, as a year later), and a
 * project's own shorter retention deleted in bounded batches (trimRows) — with every figure the API shows (the
 * overview's days, event names, a campaign's stats) the same before and after, and the other project's rows untouched.
 * Then the scheduled run itself on DBOS (applyRetention), against months of rows seeded a year and more back.
 */
const RETENTION = { days: 365, inboundDays: 30 };
const DAY = 86_400_000;
let e: EndToEnd;
let knex: Knex;
let other: { id: string; key: { Authorization: string } };

beforeAll(async () => {
  process.env.RETENTION_DAYS = String(RETENTION.days);
  e = await startEndToEnd();
  knex = e.t.db.knex;
  const p = await e.t.newProject('Other');
  other = { id: p.id, key: bearer(p.secretKey) };
  await addDomain(other.id, 'example.com', true);
}, 60_000);
afterAll(async () => {
  await e.close();
});

/** Sends `n` emails of a project and waits until they are SENT; answers their ids. */
async function sendSome(key: { Authorization: string }, prefix: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await e.t.http().post('/v1/send').set(key)
      .send({ from: 'app@example.com', to: `${prefix}${i}@example.org`, subject: 'Hi', body: '<p>Hi <a href="https://shop.example/a">shop</a></p>' });
    if (res.status !== 200) throw new Error(`POST /v1/send: ${res.status} ${JSON.stringify(res.body)}`);
    ids.push(res.body.data.emails[0].email as string);
  }
  const done = await waitForEmails(e.t.db, ids);
  expect(Object.values(done).map((d) => d.status)).toEqual(ids.map(() => 'SENT'));
  return ids;
}

/** A campaign to every contact of the project, sent; answers its id. */
async function campaign(key: { Authorization: string }, prefix: string, n: number): Promise<string> {
  for (let i = 0; i < n; i++) await e.t.http().post('/contacts').set(key).send({ email: `${prefix}${i}@example.org`, subscribed: true }).expect(201);
  const created = await e.t.http().post('/campaigns').set(key).send({ name: prefix, subject: 'News', body: '<p>News <a href="https://news.example/a">A</a></p>', from: 'news@example.com', audienceType: 'ALL' });
  const id = created.body.data.id as string;
  expect((await e.t.http().post(`/campaigns/${id}/send`).set(key).send({})).status).toBe(200);
  await waitFor('the campaign SENT', async () => ((await knex('campaigns').where({ id }).first('status')).status === 'SENT' ? true : undefined), 30_000, 100);
  return id;
}

/** Every figure the API shows of a project that outlives its rows. */
async function figures(key: { Authorization: string }, campaignId: string) {
  const get = async (path: string) => {
    const res = await e.t.http().get(path).set(key);
    expect(res.status).toBe(200);
    return res.body.data;
  };
  const overview = await get('/stats/overview?days=90');
  const camp = await get(`/campaigns/${campaignId}`);
  return {
    series: overview.series,
    totals: overview.totals,
    eventNames: (await get('/events/names')).items,
    campaign: { stats: camp.stats, totalRecipients: camp.totalRecipients, status: camp.status },
    campaignStats: await get(`/campaigns/${campaignId}/stats`),
  };
}

const rows = async (table: string, projectId: string) => Number((await knex(table).where({ project_id: projectId }).count({ n: '*' }))[0]!.n);

let mine: { emails: string[]; campaign: string };
let theirs: { emails: string[]; campaign: string };

test('mail of two projects goes out and comes back (sends, a campaign, opens and clicks)', async () => {
  mine = { emails: await sendSome(e.key, 'a', 4), campaign: await campaign(e.key, 'ca', 5) };
  theirs = { emails: await sendSome(other.key, 'b', 3), campaign: await campaign(other.key, 'cb', 6) };
  const hit = (projectId: string, emailId: string, kind: 'open' | 'click'): Hit => ({ kind, projectId, emailId, agent: { bot: false }, ...(kind === 'click' ? { url: 'https://news.example/a' } : {}) });
  const campaignEmails = async (id: string) => (await knex('emails').where({ campaign_id: id }).orderBy('id').select('id')).map((r: { id: string }) => r.id);
  const [ca, cb] = [await campaignEmails(mine.campaign), await campaignEmails(theirs.campaign)];
  await recordHits(knex, [
    hit(e.t.project.id, mine.emails[0]!, 'open'), hit(e.t.project.id, ca[0]!, 'open'), hit(e.t.project.id, ca[1]!, 'click'),
    hit(other.id, theirs.emails[0]!, 'open'), hit(other.id, cb[0]!, 'open'), hit(other.id, cb[2]!, 'click'),
  ], 0);
  expect(await rows('emails', e.t.project.id)).toBe(9);
  expect(await rows('emails', other.id)).toBe(9);
}, 120_000);

test('a project asks for a shorter retention: at most RETENTION_DAYS (422 above), null goes back to it', async () => {
  const above = await e.t.http().patch('/settings').set(other.key).send({ retentionDays: RETENTION.days + 1 });
  expect(above.status).toBe(422);
  expect(JSON.stringify(above.body)).toContain('retentionDays');
  expect((await e.t.http().patch('/settings').set(other.key).send({ retentionDays: 0 })).status).toBe(422);
  const set = await e.t.http().patch('/settings').set(other.key).send({ retentionDays: 1 });
  expect(set.status).toBe(200);
  expect(set.body.data).toMatchObject({ retentionDays: 1, instanceRetentionDays: RETENTION.days });
  expect((await e.t.http().get('/settings').set(e.key)).body.data).toMatchObject({ retentionDays: null, instanceRetentionDays: RETENTION.days });
});

test("a project's shorter retention: its rows go in bounded batches, its figures stay, the other project's rows stay", async () => {
  const before = { theirs: await figures(other.key, theirs.campaign), mine: await figures(e.key, mine.campaign) };
  const mineRows = { emails: await rows('emails', e.t.project.id), events: await rows('events', e.t.project.id) };
  expect(await rows('events', other.id)).toBeGreaterThan(0);
  // Two days on, the project's rows are past its one day; a statement deletes at most 2 rows, and each call stops
  // after its first statement (budget 0): so it takes many calls, each short.
  const now = new Date(Date.now() + 2 * DAY);
  let calls = 0;
  let deleted = 0;
  for (;;) {
    const r = await trimRows({ knex, config: RETENTION }, { batch: 2, budgetMs: 0, now });
    calls++;
    deleted += r.deleted;
    if (!r.more) break;
    expect(calls).toBeLessThan(200);
  }
  expect(calls).toBeGreaterThan(5);
  expect(await rows('emails', other.id)).toBe(0);
  expect(await rows('events', other.id)).toBe(0);
  expect(deleted).toBeGreaterThanOrEqual(9);
  // Tenancy: the other project (the installation's retention) keeps every row.
  expect({ emails: await rows('emails', e.t.project.id), events: await rows('events', e.t.project.id) }).toEqual(mineRows);
  // What the API shows is kept in summaries: the same figures.
  expect(await figures(other.key, theirs.campaign)).toEqual(before.theirs);
  expect(await figures(e.key, mine.campaign)).toEqual(before.mine);
  expect((await e.t.http().get('/emails').set(other.key)).body.data.items).toEqual([]);
  expect((await e.t.http().get(`/emails/${theirs.emails[0]}`).set(other.key)).status).toBe(404);
  expect((await e.t.http().get('/emails').set(e.key)).body.data.items).toHaveLength(9);
});

describe('the scheduled run on the embedded engine (DBOS)', () => {
  /** Months of rows from before the retention: a UUIDv7 of each row's time, emails with partition_at. */
  async function seedMonth(start: Date, n: number, status = 'SENT'): Promise<void> {
    const contact = (await knex('contacts').where({ project_id: e.t.project.id }).first('id')).id as string;
    const ms = start.getTime() + 3 * DAY;
    await knex.raw(
      `INSERT INTO emails (id, project_id, contact_id, from_email, to_email, subject, html, status, available_at, partition_at, created_at)
       SELECT (lpad(to_hex(?::bigint + g), 12, '0') || substr(md5(random()::text), 1, 20))::uuid, ?::uuid, ?::uuid,
              'app@example.com', 'old' || g || '@example.org', 'Old', '<p>old</p>', ?, now() + interval '1 day', to_timestamp((?::bigint + g) / 1000.0), to_timestamp((?::bigint + g) / 1000.0)
       FROM generate_series(1, ?) g`, [ms, e.t.project.id, contact, status, ms, ms, n]);
    await knex.raw(
      `INSERT INTO events (id, project_id, name, data, created_at)
       SELECT (lpad(to_hex(?::bigint + g), 12, '0') || substr(md5(random()::text), 1, 20))::uuid, ?::uuid, 'old.event', '{}', to_timestamp((?::bigint + g) / 1000.0)
       FROM generate_series(1, ?) g`, [ms, e.t.project.id, ms, n]);
  }

  test('applyRetention drops the months past RETENTION_DAYS but one holding an email still to be sent, and schedules the next slot', async () => {
    const month = monthStart(new Date());
    const [old1, old2, old3] = [monthStart(month, -15), monthStart(month, -14), monthStart(month, -2)];
    for (const table of ['emails', 'events'] as const) {
      await createMonthlyPartitions(knex, partitioned(table), old1, monthStart(month, -13));
      await createMonthlyPartitions(knex, partitioned(table), old3, monthStart(old3, 1));
    }
    await seedMonth(old1, 50);
    await seedMonth(old2, 50, 'QUEUED'); // still to be sent (available tomorrow): its month stays
    await seedMonth(old3, 20);
    const names = async (table: 'emails' | 'events') => (await listPartitions(knex, partitioned(table))).map((p) => p.name);
    expect(await names('emails')).toEqual(expect.arrayContaining([`emails${monthSuffix(old1)}`, `emails${monthSuffix(old2)}`]));

    const slot = Date.now() - 1000;
    await e.eng.engine.start('applyRetention', { slot }, { id: workflowId.applyRetention({ slot }) });
    await waitFor('the old month dropped', async () => (!(await names('events')).includes(`events${monthSuffix(old1)}`) ? true : undefined), 30_000, 100);
    await waitFor('the run completed', async () => {
      const { rows: wf } = await knex.raw(`SELECT status FROM dbos.workflow_status WHERE workflow_uuid = ?`, [workflowId.applyRetention({ slot })]);
      return wf[0]?.status === 'SUCCESS' ? true : undefined;
    }, 30_000, 100);
    const emails = await names('emails');
    expect(emails).not.toContain(`emails${monthSuffix(old1)}`);
    expect(emails).toContain(`emails${monthSuffix(old2)}`); // QUEUED rows in it
    expect(emails).toContain(`emails${monthSuffix(old3)}`); // within the retention
    // Events go by their own month, whatever their emails' state.
    expect(await names('events')).not.toContain(`events${monthSuffix(old2)}`);
    // The next slot's run is asked for, under the id of its slot (one run per slot, however many workers ask).
    const next = nextRetentionSlot(slot, RETENTION_INTERVAL_MS);
    const { rows: scheduled } = await knex.raw(`SELECT workflow_uuid FROM dbos.workflow_status WHERE workflow_uuid = ?`, [workflowId.applyRetention({ slot: next })]);
    expect(scheduled).toHaveLength(1);
    // Sending goes on meanwhile, into this month's partition (made ahead: the default partition stays empty).
    const [id] = await sendSome(e.key, 'after', 1);
    expect((await e.t.http().get(`/emails/${id}`).set(e.key)).status).toBe(200);
    for (const table of ['emails', 'events']) expect(Number((await knex(`${table}_default`).count({ n: '*' }))[0]!.n)).toBe(0);
  }, 90_000);
});

test('a year on, the months past RETENTION_DAYS are dropped whole; the figures the API shows stay the same', async () => {
  // The seeded email still to be sent (above) is cancelled: nothing holds a month back now.
  await knex('emails').where({ project_id: e.t.project.id, status: 'QUEUED' }).update({ status: 'CANCELLED' });
  const before = await figures(e.key, mine.campaign);
  const month = monthStart(new Date());
  const later = new Date(monthStart(month, 1).getTime() + (RETENTION.days + 1) * DAY);
  const run = await applyPartitions({ knex, config: RETENTION }, later);
  const dropped = run.dropped.map((d) => d.partition);
  for (const table of ['emails', 'events', 'raw_messages', 'attachments']) expect(dropped).toContain(`${table}${monthSuffix(month)}`);
  // Each drop a short statement (no row is read).
  expect(run.kept).toEqual([]);
  expect(await rows('emails', e.t.project.id)).toBe(0);
  expect(await rows('events', e.t.project.id)).toBe(0);
  expect(await figures(e.key, mine.campaign)).toEqual(before);
  expect((await e.t.http().get(`/emails/${mine.emails[0]}`).set(e.key)).status).toBe(404);
}, 60_000);
