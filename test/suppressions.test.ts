import type { Knex } from 'knex';
import { countCampaignAudience } from '../audience/campaignAudience';
import { addressHashKey, addressHasher, suppress } from '../audience/suppressions';
import { bearer, TEST_SECRET } from './support/app';
import { startEndToEnd, type EndToEnd } from './support/endToEnd';
import { waitFor } from './support/processes';

/**
 * The suppression list: managed through the API, enforced by every way of sending (/v1/send here; SMTP submission and
 * automation sends store through the same storeSends), left out of campaign audiences by their SQL.
 */
let e2e: EndToEnd;
let knex: Knex;

beforeAll(async () => {
  e2e = await startEndToEnd();
  knex = e2e.t.db.knex;
});
afterAll(() => e2e.close());

const http = () => e2e.t.http();

test('POST, GET with the reason filter and cursor pages, DELETE; another project sees none of it', async () => {
  const created = await http().post('/suppressions').set(e2e.key).send({ email: 'Bounced@Example.org', reason: 'hard_bounce', note: 'imported from our old provider' });
  expect(created.status).toBe(201);
  expect(created.body.data).toMatchObject({ email: 'bounced@example.org', reason: 'hard_bounce', details: { note: 'imported from our old provider' } });
  // Again: the entry is kept (200), and a milder reason does not replace a graver one.
  const again = await http().post('/suppressions').set(e2e.key).send({ email: 'bounced@example.org' });
  expect(again.status).toBe(200);
  expect(again.body.data).toMatchObject({ id: created.body.data.id, reason: 'hard_bounce' });
  // A complaint is graver than a bounce: it replaces it.
  expect((await http().post('/suppressions').set(e2e.key).send({ email: 'bounced@example.org', reason: 'complaint' })).body.data.reason).toBe('complaint');
  for (let i = 0; i < 3; i++) await http().post('/suppressions').set(e2e.key).send({ email: `manual${i}@example.org` }).expect(201);

  const first = await http().get('/suppressions?limit=2').set(e2e.key).expect(200);
  expect(first.body.data).toMatchObject({ total: 4, hasMore: true });
  expect(first.body.data.items.map((s: { email: string }) => s.email)).toEqual(['manual2@example.org', 'manual1@example.org']);
  const second = await http().get(`/suppressions?limit=2&cursor=${first.body.data.nextCursor}`).set(e2e.key).expect(200);
  expect(second.body.data.items.map((s: { email: string }) => s.email)).toEqual(['manual0@example.org', 'bounced@example.org']);
  const complaints = await http().get('/suppressions?reason=complaint').set(e2e.key).expect(200);
  expect(complaints.body.data.items.map((s: { email: string }) => s.email)).toEqual(['bounced@example.org']);

  const other = await e2e.t.newProject('Elsewhere');
  expect((await http().get('/suppressions').set(bearer(other.secretKey))).body.data.total).toBe(0);
  expect((await http().delete('/suppressions/manual0%40example.org').set(bearer(other.secretKey))).status).toBe(404);

  expect((await http().delete('/suppressions/MANUAL0%40example.org').set(e2e.key)).status).toBe(204);
  expect((await http().delete('/suppressions/manual0%40example.org').set(e2e.key)).status).toBe(404);
  expect((await http().delete('/suppressions/not-an-address').set(e2e.key)).status).toBe(404);
});

test('bad input is a 422 naming the field', async () => {
  for (const [body, field] of [[{ email: 'nope' }, 'email'], [{ email: 'a@example.org', reason: 'unsubscribed' }, 'reason'], [{}, 'email']] as const) {
    const res = await http().post('/suppressions').set(e2e.key).send(body);
    expect(res.status).toBe(422);
    expect(res.body.error.errors[0].field).toBe(field);
  }
  // A bad query value is a 400, as on every list.
  const res = await http().get('/suppressions?reason=bounced').set(e2e.key);
  expect(res.status).toBe(400);
  expect(res.body.error.errors[0].field).toBe('reason');
});

test('/v1/send: a suppressed recipient is not sent; its answer and its email say SUPPRESSED, with an email.suppressed event', async () => {
  await suppress(knex, e2e.t.project.id, [{ email: 'gone@example.org', reason: 'hard_bounce' }]);
  // An endpoint that wants the event: its payload names the email stored by the same statement as the event.
  const [hook] = await knex('webhook_endpoints').insert({ project_id: e2e.t.project.id, url: 'https://hooks.example.net/herald', events: ['email.suppressed'], secret: Buffer.alloc(32) }).returning('id');
  const before = e2e.smtp.received.length;
  const res = await http().post('/v1/send').set(e2e.key)
    .send({ from: 'app@example.com', to: ['gone@example.org', 'here@example.org'], subject: 'Hi', body: '<p>Hi</p>' });
  expect(res.status).toBe(200);
  const [gone, here] = res.body.data.emails;
  expect(gone).toMatchObject({ contact: { email: 'gone@example.org' }, status: 'SUPPRESSED', reason: 'hard_bounce' });
  expect(here).toMatchObject({ contact: { email: 'here@example.org' }, status: 'QUEUED' });
  const row = await knex('emails').where({ project_id: e2e.t.project.id, id: gone.email }).first();
  expect(row).toMatchObject({ status: 'SUPPRESSED', to_email: 'gone@example.org' });
  const event = await knex('events').where({ project_id: e2e.t.project.id, email_id: gone.email }).first();
  expect(event).toMatchObject({ name: 'email.suppressed', contact_id: gone.contact.id, data: { reason: 'hard_bounce' } });
  const delivery = await knex('webhook_deliveries').where({ project_id: e2e.t.project.id, endpoint_id: hook.id, event_id: event.id }).first();
  await knex('webhook_endpoints').where({ id: hook.id }).delete();
  expect(delivery.payload).toMatchObject({
    type: 'email.suppressed',
    data: { eventId: event.id, emailId: gone.email, contactId: gone.contact.id, to: 'gone@example.org', subject: 'Hi', reason: 'hard_bounce' },
  });

  await e2e.smtp.waitFor(before + 1);
  // The other recipient's mail arrived; the suppressed one's never will (its row was never queued).
  await waitFor('the queued email SENT', async () => (await knex('emails').where({ id: here.email }).first()).status === 'SENT' || undefined, 20_000, 100);
  expect(e2e.smtp.received.slice(before).map((m) => m.envelopeTo[0])).toEqual(['here@example.org']);
  expect((await knex('emails').where({ id: gone.email }).first()).status).toBe('SUPPRESSED');
});

test('a campaign\'s audience leaves suppressed addresses out, in the SQL that picks it', async () => {
  const project = await e2e.t.newProject('Campaign audience');
  await knex('contacts').insert(['a', 'b', 'c'].map((n) => ({ project_id: project.id, email: `${n}@example.org`, subscribed: true, data: {} })));
  const all = { audience_type: 'ALL', segment_id: null, audience_filter: null };
  expect(await countCampaignAudience(knex, project.id, all, addressHashKey(TEST_SECRET))).toBe(3);
  await suppress(knex, project.id, [{ email: 'b@example.org', reason: 'complaint' }]);
  expect(await countCampaignAudience(knex, project.id, all, addressHashKey(TEST_SECRET))).toBe(2);
  // Suppressions are per project: the same address elsewhere changes nothing here.
  await suppress(knex, e2e.t.project.id, [{ email: 'a@example.org', reason: 'manual' }]);
  expect(await countCampaignAudience(knex, project.id, all, addressHashKey(TEST_SECRET))).toBe(2);
});

test('a campaign sent end to end never mails a suppressed contact', async () => {
  for (const n of ['x', 'y', 'z']) await http().post('/contacts').set(e2e.key).send({ email: `camp-${n}@example.org`, subscribed: true, data: { wave: 'camp' } }).expect(201);
  await http().post('/suppressions').set(e2e.key).send({ email: 'camp-y@example.org' }).expect(201);
  const created = await http().post('/campaigns').set(e2e.key).send({
    name: 'Wave', subject: 'Hi', body: '<p>Hi</p>', from: 'news@example.com', audienceType: 'FILTERED',
    audienceFilter: { logic: 'AND', groups: [{ filters: [{ field: 'data.wave', operator: 'equals', value: 'camp' }] }] },
  }).expect(201);
  const id = created.body.data.id;
  await http().post(`/campaigns/${id}/send`).set(e2e.key).send({}).expect(200);
  const done = await waitFor('campaign SENT', async () => {
    const res = await http().get(`/campaigns/${id}`).set(e2e.key);
    return res.body.data.status === 'SENT' ? res.body.data : undefined;
  }, 30_000, 100);
  expect(done.totalRecipients).toBe(2);
  const emails = await knex('emails').where({ project_id: e2e.t.project.id, campaign_id: id }).pluck('to_email');
  expect(emails.sort()).toEqual(['camp-x@example.org', 'camp-z@example.org']);
});

test('an erased address that came back as a contact gets no campaign mail: audiences and their counts leave out its keyed hash', async () => {
  const wave = { logic: 'AND', groups: [{ filters: [{ field: 'data.wave', operator: 'equals', value: 'erased' }] }] };
  const contacts: Record<string, string> = {};
  for (const n of ['a', 'b', 'c']) contacts[n] = (await http().post('/contacts').set(e2e.key).send({ email: `gone-${n}@example.org`, data: { wave: 'erased' } }).expect(201)).body.data.id;
  const count = async () => (await http().post('/campaigns/audience').set(e2e.key).send({ audienceType: 'FILTERED', audienceFilter: wave }).expect(200)).body.data.count;
  expect(await count()).toBe(3);
  await http().delete(`/contacts/${contacts.b}?erase=true`).set(e2e.key).expect(204);
  // The list keeps only the hash; the address is back by POST /contacts (an import writes the same row), subscribed.
  const hashed = addressHasher(TEST_SECRET)('gone-b@example.org');
  expect(await knex('suppressions').where({ project_id: e2e.t.project.id, email: hashed }).first('reason')).toEqual({ reason: 'erased' });
  await http().post('/contacts').set(e2e.key).send({ email: 'Gone-B@example.org', subscribed: true, data: { wave: 'erased' } }).expect(201);
  expect(await count()).toBe(2);

  const created = await http().post('/campaigns').set(e2e.key).send({ name: 'After erasure', subject: 'Hi', body: '<p>Hi</p>', from: 'news@example.com', audienceType: 'FILTERED', audienceFilter: wave }).expect(201);
  const id = created.body.data.id;
  await http().post(`/campaigns/${id}/send`).set(e2e.key).send({}).expect(200);
  const done = await waitFor('campaign SENT', async () => {
    const res = await http().get(`/campaigns/${id}`).set(e2e.key);
    return res.body.data.status === 'SENT' ? res.body.data : undefined;
  }, 30_000, 100);
  expect(done.totalRecipients).toBe(2);
  expect((await knex('emails').where({ project_id: e2e.t.project.id, campaign_id: id }).pluck('to_email')).sort()).toEqual(['gone-a@example.org', 'gone-c@example.org']);

  // Lifting the hashed entry (DELETE /suppressions/<hash>) lets the address be mailed again.
  await http().delete(`/suppressions/${encodeURIComponent(hashed)}`).set(e2e.key).expect(204);
  expect(await count()).toBe(3);
});

test('every query path of the list is served by an index', async () => {
  const plan = async (sql: string, bindings: unknown[]) => knex.transaction(async (trx) => {
    await trx.raw('SET LOCAL enable_seqscan = off');
    const res = await trx.raw(`EXPLAIN ${sql}`, bindings as Knex.RawBinding[]);
    return res.rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
  });
  const p = e2e.t.project.id;
  // Enough rows, over several projects, that the planner's choice means something.
  const others = await Promise.all([1, 2, 3].map((i) => e2e.t.newProject(`Index ${i}`)));
  await knex.raw(`INSERT INTO suppressions (project_id, email, reason)
    SELECT (?::uuid[])[1 + g % 4], 'user' || g || '@example.net', (ARRAY['manual', 'hard_bounce', 'complaint'])[1 + g % 3]
    FROM generate_series(1, 20000) g`, [[p, ...others.map((o) => o.id)]]);
  await knex.raw('ANALYZE suppressions');
  expect(await plan('SELECT email, reason FROM suppressions WHERE project_id = ? AND email = ANY(?::text[])', [p, ['a@example.org']])).toContain('suppressions_pkey');
  expect(await plan('SELECT * FROM suppressions WHERE project_id = ? ORDER BY id DESC LIMIT 21', [p])).toContain('suppressions_project_id_idx');
  expect(await plan('SELECT * FROM suppressions WHERE project_id = ? AND reason = ? ORDER BY id DESC LIMIT 21', [p, 'manual'])).toContain('suppressions_project_reason_id_idx');
});

test('the list\'s total is exact up to 1,000 (totalExact), and past it says "at least 1,000"', async () => {
  const p = await e2e.t.newProject('Many suppressions');
  const k = bearer(p.secretKey);
  await knex.raw(`INSERT INTO suppressions (project_id, email, reason) SELECT ?::uuid, 's' || g || '@cap.example', CASE WHEN g <= 3 THEN 'complaint' ELSE 'hard_bounce' END FROM generate_series(1, 1001) g`, [p.id]);
  const page = (await http().get('/suppressions?limit=5').set(k)).body.data;
  expect(page).toMatchObject({ total: 1000, totalExact: false, hasMore: true });
  expect(page.items).toHaveLength(5);
  expect((await http().get('/suppressions?reason=complaint').set(k)).body.data).toMatchObject({ total: 3, totalExact: true });
});
