import request from 'supertest';
import { createApp } from '../../api/app';
import { countCampaignAudience } from '../../audience/campaignAudience';
import { addDomain } from '../../domains/rows';
import { bearer, createTestContext, TEST_SECRET, testAppDeps, type TestContext } from '../support/app';
import { addressHashKey } from '../../audience/suppressions';
import { backfillCampaignStats } from '../../db/migrations/20261206000010_campaign_outcomes';

/**
 * What the console's campaign pages ask of the API beyond spec 4.5: a campaign's opens and clicks over time
 * (GET /campaigns/:id/stats?series=hour|day), the recipients an audience reaches now (POST /campaigns/audience), and
 * the link to a campaign's workflow in Temporal UI (`temporalUiUrl`, with TEMPORAL_UI_URL on Temporal).
 */
let t: TestContext;
let key: { Authorization: string };
beforeAll(async () => {
  t = await createTestContext();
  key = bearer(t.project.secretKey);
  await addDomain(t.project.id, 'example.com', true);
});
afterAll(async () => { await t.close(); });

const base = { name: 'June news', subject: 'Hello {{ data.firstName }}', body: '<p>News</p>', from: 'news@example.com', audienceType: 'ALL' };
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const truncHour = (ms: number) => Math.floor(ms / HOUR) * HOUR;
const truncDay = (ms: number) => Math.floor(ms / DAY) * DAY;
const iso = (ms: number) => new Date(ms).toISOString();

async function campaign(projectKey = key, over: object = {}): Promise<string> {
  const res = await t.http().post('/campaigns').set(projectKey).send({ ...base, ...over });
  expect(res.status).toBe(201);
  return res.body.data.id;
}

/** A SENT campaign started at `startedAt`, with one email per entry of `opens` (the times of its open events, in ms) and its clicks. */
async function sentCampaign(startedAt: Date | null, emails: { opens?: number[]; clicks?: number[]; test?: boolean }[]): Promise<string> {
  const id = await campaign();
  await t.db.knex('campaigns').where({ id }).update({ status: 'SENT', started_at: startedAt, scheduled_at: startedAt, completed_at: startedAt });
  for (const [i, e] of emails.entries()) {
    const [row] = await t.db.knex('emails').insert({
      project_id: t.project.id, campaign_id: id, is_test: e.test ?? false, from_email: 'news@example.com', to_email: `r${i}@example.org`, status: 'SENT',
    }).returning('id');
    const events = [
      { name: 'email.sent', at: startedAt?.getTime() ?? Date.now() },
      ...(e.opens ?? []).map((at) => ({ name: 'email.opened', at })),
      ...(e.clicks ?? []).map((at) => ({ name: 'email.clicked', at })),
    ];
    await t.db.knex('events').insert(events.map((ev) => ({
      project_id: t.project.id, name: ev.name, email_id: row.id, created_at: new Date(ev.at), data: ev.name === 'email.clicked' ? { url: 'https://example.com/a' } : {},
    })));
  }
  // The past written straight into the database: its results counted as the migration counts what it finds.
  await backfillCampaignStats(t.db.knex, { projectId: t.project.id, campaignId: id });
  return id;
}

const series = async (id: string, interval: string) => {
  const res = await t.http().get(`/campaigns/${id}/stats`).query({ series: interval }).set(key);
  expect(res.status).toBe(200);
  return res.body.data.series as { interval: string; points: { at: string; opens: number; clicks: number }[] };
};

describe('GET /campaigns/:id/stats?series=', () => {
  test('by hour: every hour since the start (zeros included) with the open and click events of its emails; test copies, other events and other campaigns left out', async () => {
    // Five minutes into an hour five hours ago: its first 20 minutes stay in that hour.
    const h0 = truncHour(Date.now()) - 5 * HOUR;
    const start = h0 + 5 * 60_000;
    const id = await sentCampaign(new Date(start), [
      { opens: [start + 10 * 60_000, h0 + 2 * HOUR + 60_000], clicks: [h0 + 2 * HOUR + 120_000] },
      { opens: [start + 20 * 60_000] },
      { opens: [start + 15 * 60_000], clicks: [start + 16 * 60_000], test: true },
      {},
    ]);
    await sentCampaign(new Date(start), [{ opens: [start + 10 * 60_000] }]); // another campaign's open

    const s = await series(id, 'hour');
    const end = truncHour(Date.now());
    expect(s.interval).toBe('hour');
    const hours = Array.from({ length: (end - h0) / HOUR + 1 }, (_, i) => iso(h0 + i * HOUR));
    expect(s.points.map((p) => p.at)).toEqual(hours);
    // The start's hour has the two opens of the first 20 minutes; two hours later, one open and one click.
    expect(s.points.map((p) => [p.opens, p.clicks])).toEqual(hours.map((_, i) => (i === 0 ? [2, 0] : i === 2 ? [1, 1] : [0, 0])));

    // The stats themselves are unchanged by the series, and carry none without `?series`.
    const plain = await t.http().get(`/campaigns/${id}/stats`).set(key);
    expect(plain.body.data.series).toBeUndefined();
    expect(plain.body.data).toMatchObject({ totalRecipients: 3, sent: 3 });
  });

  test('by UTC day, and capped: the first 168 hours, the first 90 days', async () => {
    const start = Date.now() - 10 * DAY - 3 * HOUR;
    const id = await sentCampaign(new Date(start), [{ opens: [start + 60_000, start + 9 * DAY], clicks: [start + 8 * DAY + HOUR] }, { opens: [start + 2 * HOUR] }]);
    const days = await series(id, 'day');
    const d0 = truncDay(start);
    expect(days.interval).toBe('day');
    expect(days.points[0]).toEqual({ at: iso(d0), opens: truncDay(start + 2 * HOUR) === d0 ? 2 : 1, clicks: 0 });
    expect(days.points.at(-1)!.at).toBe(iso(truncDay(Date.now())));
    expect(days.points.reduce((n, p) => n + p.opens, 0)).toBe(3);
    expect(days.points.reduce((n, p) => n + p.clicks, 0)).toBe(1);
    const nineth = days.points.find((p) => p.at === iso(truncDay(start + 9 * DAY)))!;
    expect(nineth.opens).toBeGreaterThanOrEqual(1);

    // Ten days ago by hour: the first week only (168 points), so the opens of day 9 are outside it.
    const hours = await series(id, 'hour');
    expect(hours.points).toHaveLength(168);
    expect(hours.points[0]!.at).toBe(iso(truncHour(start)));
    expect(hours.points.at(-1)!.at).toBe(iso(truncHour(start) + 167 * HOUR));
    expect(hours.points.reduce((n, p) => n + p.opens, 0)).toBe(2);
    expect(hours.points.reduce((n, p) => n + p.clicks, 0)).toBe(0);
  });

  test('a draft has no points; a campaign without a start begins at its first event', async () => {
    expect((await series(await campaign(), 'hour')).points).toEqual([]);
    const first = truncHour(Date.now()) - 2 * HOUR + 5 * 60_000;
    const id = await sentCampaign(null, [{ opens: [first], clicks: [first + HOUR] }]);
    const s = await series(id, 'hour');
    expect(s.points.slice(0, 2)).toEqual([{ at: iso(truncHour(first)), opens: 1, clicks: 0 }, { at: iso(truncHour(first) + HOUR), opens: 0, clicks: 1 }]);
  });

  test('a bad interval is a 400 naming `series` (as every bad query parameter); another project\'s campaign is a 404 whatever the query', async () => {
    const id = await campaign();
    const bad = await t.http().get(`/campaigns/${id}/stats`).query({ series: 'week' }).set(key);
    expect(bad.status).toBe(400);
    expect(bad.body.error.errors).toEqual([expect.objectContaining({ field: 'series', code: 'invalid_enum_value' })]);
    const other = await t.newProject('series elsewhere');
    for (const q of [{ series: 'hour' }, { series: 'week' }]) {
      expect((await t.http().get(`/campaigns/${id}/stats`).query(q).set(bearer(other.secretKey))).status).toBe(404);
    }
  });
});

describe('POST /campaigns/audience', () => {
  let segmentId: string;
  beforeAll(async () => {
    // 4 contacts on pro, 2 on free; one pro contact unsubscribed, one free address suppressed.
    const contacts = [['ada', 'pro'], ['bob', 'pro'], ['cy', 'pro'], ['dee', 'pro'], ['eve', 'free'], ['fay', 'free']];
    for (const [name, plan] of contacts) {
      expect((await t.http().post('/contacts').set(key).send({ email: `${name}@example.org`, data: { plan }, subscribed: name !== 'dee' })).status).toBeLessThan(300);
    }
    expect((await t.http().post('/suppressions').set(key).send({ email: 'fay@example.org' })).status).toBeLessThan(300);
    segmentId = (await t.http().post('/segments').set(key).send({ name: 'Early', type: 'STATIC' })).body.data.id;
    await t.http().post(`/segments/${segmentId}/members`).set(key).send({ emails: ['ada@example.org', 'dee@example.org', 'eve@example.org'] }).expect(200);
  });

  const count = (body: object, k = key) => t.http().post('/campaigns/audience').set(k).send(body);

  test('counts whom a send would reach now: subscribed contacts, no suppressed address; for all, a segment, a filter', async () => {
    const pro = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] };
    expect((await count({ audienceType: 'ALL' })).body.data).toEqual({ count: 4 }); // ada, bob, cy, eve
    expect((await count({ audienceType: 'SEGMENT', segmentId })).body.data).toEqual({ count: 2 }); // ada, eve (dee unsubscribed)
    expect((await count({ audienceType: 'FILTERED', audienceFilter: pro })).body.data).toEqual({ count: 3 }); // ada, bob, cy

    // The same number the campaign then goes to: a campaign of that filter, sent, has as many emails.
    const id = await campaign(key, { audienceType: 'FILTERED', audienceFilter: pro });
    expect(await countCampaignAudience(t.db.knex, t.project.id, await t.db.knex('campaigns').where({ id }).first(), addressHashKey(TEST_SECRET))).toBe(3);
  });

  test('a bad audience is a 422 naming its field; nothing is saved', async () => {
    const before = await t.db.knex('campaigns').count('* as n').first();
    const other = await t.newProject('audience elsewhere');
    await t.db.knex('segments').insert({ project_id: other.id, name: 'Theirs', type: 'STATIC' });
    const theirs = (await t.db.knex('segments').where({ project_id: other.id }).first('id')).id as string;
    const cases: [object, string, string][] = [
      [{ audienceType: 'SEGMENT' }, 'segmentId', 'required'],
      [{ audienceType: 'SEGMENT', segmentId: theirs }, 'segmentId', 'not_found'],
      [{ audienceType: 'FILTERED' }, 'audienceFilter', 'required'],
      [{ audienceType: 'ALL', segmentId }, 'segmentId', 'unrecognized_key'],
      [{ audienceType: 'FILTERED', audienceFilter: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'triggered' }] }] } }, 'audienceFilter.groups.0.filters.0.operator', 'invalid_operator'],
      [{ audienceType: 'FILTERED', audienceFilter: { logic: 'AND', groups: [] } }, 'audienceFilter.groups', 'too_small'],
      [{ audienceType: 'EVERYONE' }, 'audienceType', 'invalid_enum_value'],
    ];
    for (const [body, field, code] of cases) {
      const res = await count(body);
      expect({ body, status: res.status, code: res.body.error?.errors?.find((e: { field: string }) => e.field === field)?.code })
        .toEqual({ body, status: 422, code });
    }
    expect(await t.db.knex('campaigns').count('* as n').first()).toEqual(before);
  });
});

describe('temporalUiUrl', () => {
  test('with Temporal UI configured: a link to the campaign-<id> workflow in the namespace once it is scheduled; none for a draft', async () => {
    const app = createApp(testAppDeps(t.db.knex, { temporalUi: { url: 'https://temporal.example.org/ui/', namespace: 'herald prod' } }));
    const agent = request(app.callback());
    const created = await agent.post('/campaigns').set(key).send(base);
    expect(created.body.data.temporalUiUrl).toBeNull();
    const id = created.body.data.id as string;
    // No engine in this app: the send is SCHEDULED and its start left to the dispatcher, the workflow's id already fixed.
    const sent = await agent.post(`/campaigns/${id}/send`).set(key).send({ scheduledAt: new Date(Date.now() + DAY).toISOString() });
    expect(sent.status).toBe(200);
    const link = `https://temporal.example.org/ui/namespaces/herald%20prod/workflows/campaign-${id}`;
    expect(sent.body.data.temporalUiUrl).toBe(link);
    expect((await agent.get(`/campaigns/${id}`).set(key)).body.data.temporalUiUrl).toBe(link);
    expect((await agent.get('/campaigns').set(key)).body.data.items.find((c: { id: string }) => c.id === id).temporalUiUrl).toBe(link);
    // A draft cancelled never had a workflow.
    const draft = (await agent.post('/campaigns').set(key).send(base)).body.data.id;
    expect((await agent.post(`/campaigns/${draft}/cancel`).set(key)).body.data.temporalUiUrl).toBeNull();
  });

  test('without it (the embedded engine, or no TEMPORAL_UI_URL): null', async () => {
    const id = await campaign();
    await t.db.knex('campaigns').where({ id }).update({ status: 'SENT', scheduled_at: new Date() });
    expect((await t.http().get(`/campaigns/${id}`).set(key)).body.data.temporalUiUrl).toBeNull();
  });
});
