import { addDomain } from '../domains/rows';
import { bearer, createTestContext, type TestContext } from './support/app';
import { createTestDatabase } from './support/db';
import { startTestEngine, type TestEngine } from './support/engine';
import { waitFor } from './support/processes';
import { startSmtpServer, type TestSmtpServer } from './support/smtp';

/** Campaigns at scale and under cancellation, on the embedded engine with a real SMTP server. */
let smtp: TestSmtpServer;
let eng: TestEngine;
let t: TestContext;
let key: { Authorization: string };
const TOTAL = 10_000;

beforeAll(async () => {
  smtp = await startSmtpServer();
  const db = await createTestDatabase();
  eng = await startTestEngine(db, smtp.url, { sendRatePerSecond: 2000 });
  t = await createTestContext({ engine: eng.engine, db });
  key = bearer(t.project.secretKey);
  await addDomain(t.project.id, 'example.com', true);
  // 10,000 subscribed contacts (tagged big) and 300 others (tagged small), 50 of which unsubscribed.
  await db.knex.raw(
    `INSERT INTO contacts (project_id, email, subscribed, data)
     SELECT ?::uuid, 'big' || g || '@example.org', true, '{"group":"big"}'::jsonb FROM generate_series(1, ?) g
     UNION ALL
     SELECT ?::uuid, 'small' || g || '@example.org', g > 50, '{"group":"small"}'::jsonb FROM generate_series(1, 300) g`,
    [t.project.id, TOTAL, t.project.id],
  );
}, 60_000);
afterAll(async () => {
  await eng.stop();
  await t.close();
  await smtp.close();
});

const byGroup = (group: string) => ({ logic: 'AND', groups: [{ filters: [{ field: 'data.group', operator: 'equals', value: group }] }] });
const create = async (group: string) => (await t.http().post('/campaigns').set(key).send({
  name: group, subject: 'Hi', body: '<p>{{ email }}</p>', from: 'news@example.com', audienceType: 'FILTERED', audienceFilter: byGroup(group),
})).body.data.id as string;
const statusOf = async (id: string) => (await t.http().get(`/campaigns/${id}`).set(key)).body.data.status as string;

test(`a ${TOTAL.toLocaleString('en')}-recipient campaign is delivered exactly once per contact`, async () => {
  const id = await create('big');
  const before = smtp.received.length;
  expect((await t.http().post(`/campaigns/${id}/send`).set(key).send({})).status).toBe(200);
  // A liveness bound, not a speed (bench/campaign.ts measures that): a loaded machine takes minutes.
  await waitFor('campaign SENT', async () => ((await statusOf(id)) === 'SENT' ? true : undefined), 900_000, 500);
  const mails = smtp.received.slice(before);
  const recipients = new Set(mails.map((m) => m.envelopeTo[0]));
  expect(recipients.size).toBe(TOTAL);
  expect(mails).toHaveLength(TOTAL);
  const stats = (await t.http().get(`/campaigns/${id}/stats`).set(key)).body.data;
  expect(stats).toMatchObject({ totalRecipients: TOTAL, sent: TOTAL, queued: 0, failed: 0 });
}, 960_000);

test('cancel mid-SENDING: the rest is cancelled; nothing is sent after the cancel beyond the deliveries in flight', async () => {
  const id = await create('small');
  // This campaign's mail only (its recipients are small<n>@): another test's may still be arriving.
  const received = () => smtp.received.filter((m) => m.envelopeTo[0]?.startsWith('small')).length;
  await t.http().post(`/campaigns/${id}/send`).set(key).send({});
  await waitFor('some mail out', () => (received() >= 20 ? true : undefined), 60_000, 20);
  const cancel = await t.http().post(`/campaigns/${id}/cancel`).set(key);
  expect(cancel.status).toBe(200);
  expect(cancel.body.data.status).toBe('CANCELLED');
  const atCancel = received();
  const inFlight = Number((await t.db.knex('emails').where({ project_id: t.project.id, campaign_id: id, status: 'SENDING' }).count('* as n').first())!.n);
  await new Promise((r) => setTimeout(r, 2000));
  const after = received();
  console.log(`cancel mid-sending: ${atCancel} sent at the cancel, ${inFlight} in flight, ${after} in the end (of 250)`);
  expect(after - atCancel).toBeLessThanOrEqual(inFlight);
  expect(after).toBeLessThan(250);
  const rows = await t.db.knex('emails').where({ project_id: t.project.id, campaign_id: id }).groupBy('status').select('status').count('* as n');
  const counts = Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
  expect(counts.QUEUED ?? 0).toBe(0);
  expect(counts.SENT).toBe(after);
  expect(counts.CANCELLED).toBeGreaterThan(0);
  expect(await statusOf(id)).toBe('CANCELLED');
}, 120_000);
