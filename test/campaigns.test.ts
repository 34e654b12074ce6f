import type { TestContext } from './support/app';
import { waitFor } from './support/processes';
import type { TestSmtpServer } from './support/smtp';
import { startEndToEnd, type EndToEnd } from './support/endToEnd';
import { expectStatsKept } from './support/campaignRecount';

/** Campaigns end to end on the embedded engine: audience → email rows → rate-limited deliveries → a real SMTP server. */
let smtp: TestSmtpServer;
let t: TestContext;
let key: { Authorization: string };
let e2e: EndToEnd;

beforeAll(async () => {
  ({ smtp, t, key } = e2e = await startEndToEnd());
  // 25 subscribed contacts (10 on the pro plan), 5 unsubscribed.
  for (let i = 0; i < 30; i++) {
    await t.http().post('/contacts').set(key).send({ email: `c${String(i).padStart(2, '0')}@example.org`, subscribed: i < 25, data: { n: i, plan: i % 25 < 10 ? 'pro' : 'free' } });
  }
});
afterAll(() => e2e.close());

const campaign = (extra: object = {}) => t.http().post('/campaigns').set(key)
  .send({ name: 'News', subject: 'News for {{ email }}', body: '<p>Hello {{ data.n }}</p>', from: 'news@example.com', fromName: 'News', audienceType: 'ALL', ...extra });

async function waitStatus(id: string, status: string, timeoutMs = 30_000) {
  return waitFor(`campaign ${status}`, async () => {
    const res = await t.http().get(`/campaigns/${id}`).set(key);
    return res.body.data.status === status ? res.body.data : undefined;
  }, timeoutMs, 100);
}

test('send now: every subscribed contact once, rendered, with unsubscribe link and bulk headers; then SENT with stats', async () => {
  const { body } = await campaign();
  const id = body.data.id;
  const before = smtp.received.length;
  const sent = await t.http().post(`/campaigns/${id}/send`).set(key).send({});
  expect(sent.status).toBe(200);
  expect(['SCHEDULED', 'SENDING', 'SENT']).toContain(sent.body.data.status);
  const done = await waitStatus(id, 'SENT');
  expect(done.totalRecipients).toBe(25);
  const mails = smtp.received.slice(before);
  expect(mails).toHaveLength(25);
  expect(new Set(mails.map((m) => m.envelopeTo[0])).size).toBe(25);
  expect(mails.some((m) => /c2[5-9]@/.test(m.envelopeTo[0]!))).toBe(false); // unsubscribed never mailed
  const one = mails.find((m) => m.envelopeTo[0] === 'c03@example.org')!.parsed;
  expect(one.subject).toBe('News for c03@example.org');
  expect(one.html).toContain('<p>Hello 3</p>');
  expect(one.from?.value[0]).toEqual({ name: 'News', address: 'news@example.com' });
  expect(one.headers.get('precedence')).toBe('bulk');
  // Header lines as sent, with folded continuation lines joined.
  const raw = mails.find((m) => m.envelopeTo[0] === 'c03@example.org')!.raw.toString().replace(/\r?\n[ \t]+/g, ' ');
  expect(raw).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click\r?$/m);
  const url = /^List-Unsubscribe: <([^>]+)>\r?$/m.exec(raw)![1]!.replace(/\s+/g, '');
  expect(url).toMatch(/^http:\/\/herald\.test\/unsubscribe\/[\w-]+\.[\w-]+$/);
  expect(one.html).toContain(`href="${url}"`); // footer link, as the body has no {{ unsubscribeUrl }}

  // One click (RFC 8058) from the campaign email: the contact is unsubscribed and the campaign counts it.
  const token = url.split('/').pop()!;
  expect((await t.http().post(`/unsubscribe/${token}`).type('form').send('List-Unsubscribe=One-Click')).status).toBe(200);
  expect((await t.db.knex('contacts').where({ project_id: t.project.id, email: 'c03@example.org' }).first()).subscribed).toBe(false);
  const stats = await t.http().get(`/campaigns/${id}/stats`).set(key);
  expect(stats.body.data).toEqual({
    totalRecipients: 25, queued: 0, sent: 25, delivered: 25, opened: 0, clicked: 0, bounced: 0, complained: 0, failed: 0, cancelled: 0, suppressed: 0,
    unsubscribed: 1, openRate: 0, clickRate: 0, opens: 0, uniqueOpens: 0, clicks: 0, uniqueClicks: 0, links: [],
  });
  await expectStatsKept(t.db.knex, t.project.id, id);
  await t.db.knex('contacts').where({ project_id: t.project.id, email: 'c03@example.org' }).update({ subscribed: true });

  // Sent campaigns cannot be sent, edited, cancelled or deleted.
  expect((await t.http().post(`/campaigns/${id}/send`).set(key).send({})).status).toBe(409);
  expect((await t.http().patch(`/campaigns/${id}`).set(key).send({ name: 'x' })).status).toBe(409);
  expect((await t.http().post(`/campaigns/${id}/cancel`).set(key)).status).toBe(409);
  expect((await t.http().delete(`/campaigns/${id}`).set(key)).status).toBe(409);
});

test('FILTERED and SEGMENT audiences', async () => {
  const filtered = (await campaign({ audienceType: 'FILTERED', audienceFilter: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] } })).body.data.id;
  await t.http().post(`/campaigns/${filtered}/send`).set(key).send({});
  expect((await waitStatus(filtered, 'SENT')).totalRecipients).toBe(10);

  const seg = (await t.http().post('/segments').set(key).send({ name: 'Three', type: 'STATIC' })).body.data.id;
  await t.http().post(`/segments/${seg}/members`).set(key).send({ emails: ['c01@example.org', 'c02@example.org', 'c27@example.org'] });
  const bySegment = (await campaign({ audienceType: 'SEGMENT', segmentId: seg })).body.data.id;
  await t.http().post(`/campaigns/${bySegment}/send`).set(key).send({});
  expect((await waitStatus(bySegment, 'SENT')).totalRecipients).toBe(2); // c27 is unsubscribed
});

test('schedule: SCHEDULED until the time, then sent', async () => {
  const id = (await campaign({ audienceType: 'FILTERED', audienceFilter: { logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'equals', value: 'c00@example.org' }] }] } })).body.data.id;
  const at = new Date(Date.now() + 2500);
  const res = await t.http().post(`/campaigns/${id}/send`).set(key).send({ scheduledAt: at.toISOString() });
  expect(res.body.data).toMatchObject({ status: 'SCHEDULED', scheduledAt: at.toISOString() });
  await new Promise((r) => setTimeout(r, 1000));
  expect((await t.http().get(`/campaigns/${id}`).set(key)).body.data.status).toBe('SCHEDULED');
  const done = await waitStatus(id, 'SENT');
  expect(new Date(done.startedAt).getTime()).toBeGreaterThanOrEqual(at.getTime() - 50);
  expect((await t.http().post(`/campaigns/${id}/send`).set(key).send({})).status).toBe(409);
  const past = (await campaign()).body.data.id;
  const refused = await t.http().post(`/campaigns/${past}/send`).set(key).send({ scheduledAt: '2020-01-01T00:00:00Z' });
  expect(refused.status).toBe(422);
  expect(refused.body.error.errors[0].field).toBe('scheduledAt');
});

test('cancel while SCHEDULED: never sends, the engine releases it at once', async () => {
  const id = (await campaign()).body.data.id;
  await t.http().post(`/campaigns/${id}/send`).set(key).send({ scheduledAt: new Date(Date.now() + 3600_000).toISOString() });
  const cancelled = await t.http().post(`/campaigns/${id}/cancel`).set(key);
  expect(cancelled.status).toBe(200);
  expect(cancelled.body.data.status).toBe('CANCELLED');
  const wf = await t.db.knex('dbos.workflow_status').where({ workflow_uuid: `campaign-${id}` }).first('status');
  expect(wf.status).toBe('CANCELLED');
  expect((await t.http().post(`/campaigns/${id}/cancel`).set(key)).status).toBe(409);
  expect(await t.db.knex('emails').where({ project_id: t.project.id, campaign_id: id })).toHaveLength(0);
  expect((await t.http().delete(`/campaigns/${id}`).set(key)).status).toBe(204);
});

test('test send: [TEST] copies to the given addresses; contacts, stats and status unchanged', async () => {
  const id = (await campaign()).body.data.id;
  const contactsBefore = await t.db.knex('contacts').where({ project_id: t.project.id }).count('* as n').first();
  const before = smtp.received.length;
  const res = await t.http().post(`/campaigns/${id}/test`).set(key).send({ emails: ['c05@example.org', 'reviewer@example.net'] });
  expect(res.status).toBe(200);
  expect(res.body.data.emails).toHaveLength(2);
  await smtp.waitFor(before + 2);
  const mails = smtp.received.slice(before);
  expect(mails.map((m) => m.parsed.subject).sort()).toEqual(['[TEST] News for c05@example.org', '[TEST] News for reviewer@example.net']);
  expect(await t.db.knex('contacts').where({ project_id: t.project.id }).count('* as n').first()).toEqual(contactsBefore);
  expect((await t.http().get(`/campaigns/${id}`).set(key)).body.data.status).toBe('DRAFT');
  expect((await t.http().get(`/campaigns/${id}/stats`).set(key)).body.data.totalRecipients).toBe(0);
  expect((await t.http().post(`/campaigns/${id}/test`).set(key).send({ emails: Array.from({ length: 11 }, (_, i) => `t${i}@x.io`) })).status).toBe(422);
});
