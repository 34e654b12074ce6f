import { randomBytes } from 'node:crypto';
import { recordEvents } from '../../db/queries/events';
import { EMAIL_COUNT_CAP } from '../../emails/emails';
import { bearer } from '../support/app';
import { startEndToEnd, type EndToEnd } from '../support/endToEnd';
import { waitForEmails } from '../support/engine';

/**
 * GET /emails and GET /emails/:id end to end: a real app on the embedded engine, delivering to a real SMTP server.
 * The list tests read rows written straight into the emails table of projects of their own (their ids made with
 * chosen creation times), so that filters, date ranges and pages have known answers.
 */
let e: EndToEnd;

beforeAll(async () => { e = await startEndToEnd(); }, 60_000);
afterAll(async () => { await e.close(); });

const get = (path: string, key = e.key) => e.t.http().get(path).set(key);

async function sendOne(to: string): Promise<{ emailId: string; eventId: string }> {
  const res = await e.t.http().post('/v1/send').set(e.key).send({ to, from: 'hi@example.com', subject: `for ${to}`, body: '<p>Your receipt</p>' });
  expect(res.status).toBe(200);
  return { emailId: res.body.data.emails[0].email, eventId: res.body.data.event };
}

/** A UUIDv7 created at `ms`. */
function uuidv7At(ms: number): string {
  const hex = ms.toString(16).padStart(12, '0') + '7' + randomBytes(9).toString('hex').slice(0, 3) + '8' + randomBytes(8).toString('hex').slice(0, 15);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

test('the /v1/send answer leads to GET /emails/:id: queued, then sent after delivery to the SMTP server', async () => {
  await e.smtp.pause(); // delivery attempts fail and the email waits in the queue
  const { emailId, eventId } = await sendOne('reader@example.org');
  const queued = await get(`/emails/${emailId}`);
  expect(queued.status).toBe(200);
  expect(queued.body.data).toMatchObject({
    id: emailId, from: 'hi@example.com', to: 'reader@example.org', subject: 'for reader@example.org', campaignId: null, isTest: false, sentAt: null,
  });
  expect(['QUEUED', 'SENDING']).toContain(queued.body.data.status);
  expect(queued.body.data.html).toContain('Your receipt');
  expect(queued.body.data.timeline.map((t: { type: string }) => t.type)).toEqual(['email.queued']);
  expect(queued.body.data.timeline[0].at).toBe(queued.body.data.createdAt);

  await e.smtp.resume();
  await waitForEmails(e.t.db, [emailId]);
  expect(e.smtp.received.filter((m) => m.envelopeTo.includes('reader@example.org'))).toHaveLength(1);
  const sent = await get(`/emails/${emailId}`);
  expect(sent.body.data).toMatchObject({ id: emailId, status: 'SENT', error: null });
  expect(sent.body.data.attempts).toBeGreaterThanOrEqual(1);
  expect(sent.body.data.messageId).toEqual(expect.any(String));
  expect(Date.parse(sent.body.data.sentAt)).toBeGreaterThanOrEqual(Date.parse(sent.body.data.createdAt));
  const timeline = sent.body.data.timeline as { type: string; at: string; eventId: string | null; data: Record<string, unknown> }[];
  expect(timeline.map((t) => [t.type, t.eventId])).toEqual([['email.queued', null], ['email.sent', eventId]]);
  expect(timeline[1]!.data).toEqual({ messageId: sent.body.data.messageId });
  expect(Date.parse(timeline[1]!.at)).toBeGreaterThanOrEqual(Date.parse(timeline[0]!.at));

  // The list shows it too, without the body.
  const listed = await get('/emails?to=READER@example.org');
  expect(listed.body.data.items.map((i: { id: string }) => i.id)).toEqual([emailId]);
  expect(listed.body.data.items[0]).not.toHaveProperty('html');
  expect(listed.body.data.items[0]).not.toHaveProperty('timeline');
  expect(listed.body.data.items[0].status).toBe('SENT');
}, 60_000);

test('a refused delivery shows failed, with the server’s error in the email and in its timeline', async () => {
  e.smtp.script([{ code: 550, message: 'No such user here' }]);
  const { emailId, eventId } = await sendOne('nobody@example.org');
  await waitForEmails(e.t.db, [emailId]);
  const res = await get(`/emails/${emailId}`);
  expect(res.body.data.status).toBe('FAILED');
  expect(res.body.data.error).toMatch(/550.*No such user here/);
  const timeline = res.body.data.timeline as { type: string; eventId: string | null; data: { error?: string } }[];
  expect(timeline.map((t) => [t.type, t.eventId])).toEqual([['email.queued', null], ['email.failed', eventId]]);
  expect(timeline[1]!.data.error).toMatch(/550/);
  const failed = await get('/emails?status=failed');
  expect(failed.body.data.items.map((i: { id: string }) => i.id)).toContain(emailId);
  expect(failed.body.data.items.every((i: { status: string }) => i.status === 'FAILED')).toBe(true);
}, 60_000);

test('any email.* event recorded with the email’s id joins its timeline (opens and clicks, later bounces)', async () => {
  const { emailId } = await sendOne('clicker@example.org');
  await waitForEmails(e.t.db, [emailId]);
  const contact = await e.t.db.knex('emails').where({ id: emailId }).first('contact_id');
  await e.t.db.knex.transaction(async (trx) => {
    await recordEvents(trx, e.t.project.id, [{ name: 'email.opened', contactId: contact.contact_id, emailId, data: { bot: false } }]);
  });
  await e.t.db.knex.transaction(async (trx) => {
    await recordEvents(trx, e.t.project.id, [
      { name: 'email.clicked', contactId: contact.contact_id, emailId, data: { url: 'https://example.org/a' } },
      // Not an email event: not part of the email's timeline even though it names the email.
      { name: 'purchase', contactId: contact.contact_id, emailId, data: {} },
    ]);
  });
  const res = await get(`/emails/${emailId}`);
  const timeline = res.body.data.timeline as { type: string; data: Record<string, unknown> }[];
  expect(timeline.map((t) => t.type)).toEqual(['email.queued', 'email.sent', 'email.opened', 'email.clicked']);
  expect(timeline[3]!.data).toEqual({ url: 'https://example.org/a' });
}, 60_000);

test('a campaign’s test copies are listed under its id and flagged isTest', async () => {
  const campaign = await e.t.http().post('/campaigns').set(e.key)
    .send({ name: 'Spring', subject: 'Hi', body: '<p>Sale</p>', from: 'news@example.com', audienceType: 'ALL' });
  expect(campaign.status).toBe(201);
  const sent = await e.t.http().post(`/campaigns/${campaign.body.data.id}/test`).set(e.key).send({ emails: ['tester@example.org'] });
  expect(sent.status).toBe(200);
  const testId = sent.body.data.emails[0].id as string;
  const list = await get(`/emails?campaignId=${campaign.body.data.id}`);
  expect(list.body.data.items.map((i: { id: string; isTest: boolean; campaignId: string }) => [i.id, i.isTest, i.campaignId]))
    .toEqual([[testId, true, campaign.body.data.id]]);
  await waitForEmails(e.t.db, [testId]);
  const one = await get(`/emails/${testId}`);
  expect(one.body.data).toMatchObject({ isTest: true, status: 'SENT', subject: null, html: null });
}, 60_000);

describe('lists', () => {
  const base = Date.parse('2026-03-01T00:00:00Z');
  const minute = 60_000;
  const CAMPAIGN = '01900000-0000-7000-8000-00000000ca01';
  let key: { Authorization: string };
  let otherKey: { Authorization: string };
  let ids: string[]; // project A's emails, newest first
  let otherIds: string[];
  let rows: { id: string; status: string; to: string; campaign: string | null; at: number }[];

  /** 30 emails a minute apart: statuses, recipients and a campaign in turn. */
  async function seed(projectId: string, n: number, campaign: string) {
    const made = Array.from({ length: n }, (_, i) => ({
      id: uuidv7At(base + i * minute),
      status: ['QUEUED', 'SENT', 'FAILED', 'CANCELLED', 'SENT'][i % 5]!,
      to: `r${i % 3}@example.org`,
      campaign: i % 4 === 0 ? campaign : null,
      at: base + i * minute,
    }));
    await e.t.db.knex('emails').insert(made.map((m) => ({
      id: m.id, project_id: projectId, from_email: 'hi@example.com', to_email: m.to, subject: 's', html: '<p>x</p>', status: m.status,
      campaign_id: m.campaign, error: m.status === 'FAILED' ? '550 no' : null, created_at: new Date(m.at), updated_at: new Date(m.at),
      // The engine of this file is running: its delivery queue must leave these QUEUED rows alone.
      available_at: new Date('2100-01-01T00:00:00Z'),
    })));
    return made;
  }

  beforeAll(async () => {
    const a = await e.t.newProject('Lists A');
    const b = await e.t.newProject('Lists B');
    key = bearer(a.secretKey);
    otherKey = bearer(b.secretKey);
    rows = await seed(a.id, 30, CAMPAIGN);
    ids = rows.map((r) => r.id).reverse();
    otherIds = (await seed(b.id, 10, CAMPAIGN)).map((r) => r.id);
  });

  async function all(query: string, k = key): Promise<{ ids: string[]; totals: number[] }> {
    const got: string[] = [];
    const totals: number[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 50; i++) {
      const res = await get(`/emails?limit=7${query ? `&${query}` : ''}${cursor ? `&cursor=${cursor}` : ''}`, k);
      expect(res.status).toBe(200);
      expect(res.body.data.totalExact).toBe(true);
      got.push(...res.body.data.items.map((x: { id: string }) => x.id));
      totals.push(res.body.data.total);
      cursor = res.body.data.nextCursor;
      expect(res.body.data.hasMore).toBe(cursor !== null);
      if (!cursor) break;
    }
    return { ids: got, totals };
  }
  const expected = (keep: (r: (typeof rows)[number]) => boolean) => rows.filter(keep).map((r) => r.id).reverse();

  test('pages walk every email once, newest first, and the total counts them all', async () => {
    const { ids: got, totals } = await all('');
    expect(got).toEqual(ids);
    expect(new Set(totals)).toEqual(new Set([30]));
  });

  test('another project’s emails are never listed, and its ids are not found', async () => {
    const { ids: got } = await all('', otherKey);
    expect(got).toEqual([...otherIds].reverse());
    for (const id of otherIds.slice(0, 3)) {
      const res = await get(`/emails/${id}`, key);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
    expect((await get(`/emails/${otherIds[0]}`, otherKey)).status).toBe(200);
    // A cursor of another project's email positions the page, it reveals nothing of that project.
    const res = await get(`/emails?cursor=${Buffer.from(`v1:${otherIds[5]}`).toString('base64url')}`, key);
    expect(res.status).toBe(200);
    expect(res.body.data.items.every((x: { id: string }) => ids.includes(x.id))).toBe(true);
  });

  test.each([
    ['status', 'status=FAILED', (r: (typeof rows)[number]) => r.status === 'FAILED'],
    ['status in lower case', 'status=sent', (r: (typeof rows)[number]) => r.status === 'SENT'],
    ['recipient', 'to=R1@Example.org', (r: (typeof rows)[number]) => r.to === 'r1@example.org'],
    ['campaign', `campaignId=${CAMPAIGN}`, (r: (typeof rows)[number]) => r.campaign === CAMPAIGN],
    ['since (inclusive)', `since=${new Date(base + 10 * minute).toISOString()}`, (r: (typeof rows)[number]) => r.at >= base + 10 * minute],
    ['until (exclusive)', `until=${new Date(base + 10 * minute).toISOString()}`, (r: (typeof rows)[number]) => r.at < base + 10 * minute],
    ['a window and a status', `since=${new Date(base + 5 * minute).toISOString()}&until=${new Date(base + 25 * minute).toISOString()}&status=SENT`,
      (r: (typeof rows)[number]) => r.at >= base + 5 * minute && r.at < base + 25 * minute && r.status === 'SENT'],
    ['every filter', `status=queued&to=r0@example.org&campaignId=${CAMPAIGN}&since=2026-03-01`,
      (r: (typeof rows)[number]) => r.status === 'QUEUED' && r.to === 'r0@example.org' && r.campaign === CAMPAIGN],
  ])('filter: %s', async (_name, query, keep) => {
    const want = expected(keep);
    expect(want.length).toBeGreaterThan(0);
    const { ids: got, totals } = await all(query);
    expect(got).toEqual(want);
    expect(new Set(totals)).toEqual(new Set([want.length]));
  });

  test('filters that match nothing: another project’s campaign, an unknown recipient, an empty window', async () => {
    for (const q of [`campaignId=01900000-0000-7000-8000-00000000beef`, 'to=r9@example.org', 'since=2026-03-02&until=2026-03-01', 'until=1960-01-01']) {
      const res = await get(`/emails?${q}`, key);
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({ items: [], total: 0, totalExact: true, hasMore: false, nextCursor: null });
    }
  });

  test.each([
    ['status=SENDINGX', 'status'],
    ['status=', 'status'],
    ['to=not-an-address', 'to'],
    ['campaignId=abc', 'campaignId'],
    ['since=yesterday', 'since'],
    ['until=0000-01-01', 'until'],
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['colour=red', 'colour'],
  ])('bad query %s is a 400 naming the parameter (as every list of the API answers a bad query)', async (query, field) => {
    const res = await get(`/emails?${query}`);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('BAD_REQUEST');
    expect(res.body.error.errors.map((x: { field: string }) => x.field)).toContain(field);
  });

  test('a cursor the API did not make is a 400; a malformed id is a 404', async () => {
    const res = await get('/emails?cursor=bm9wZQ', key);
    expect(res.status).toBe(400);
    expect(res.body.error.errors[0].field).toBe('cursor');
    for (const bad of ['abc', '00000000-0000-0000-0000-00000000000g', `{${ids[0]}}`]) {
      expect((await get(`/emails/${encodeURIComponent(bad)}`, key)).status).toBe(404);
    }
    expect((await get(`/emails/${ids[0]!.toUpperCase()}`, key)).status).toBe(200);
  });

  test(`past ${EMAIL_COUNT_CAP} matching emails the total is a floor, flagged not exact`, async () => {
    const big = await e.t.newProject('Big');
    await e.t.db.knex.raw(
      `INSERT INTO emails (project_id, from_email, to_email, subject, html, status)
       SELECT ?::uuid, 'hi@example.com', 'r' || g || '@example.org', 's', 'h', 'SENT' FROM generate_series(1, ?) g`,
      [big.id, EMAIL_COUNT_CAP + 5],
    );
    const res = await get('/emails?limit=3', bearer(big.secretKey));
    expect(res.body.data).toMatchObject({ total: EMAIL_COUNT_CAP, totalExact: false, hasMore: true });
    expect(res.body.data.items).toHaveLength(3);
    const few = await get('/emails?to=r7@example.org', bearer(big.secretKey));
    expect(few.body.data).toMatchObject({ total: 1, totalExact: true });
  });
});
