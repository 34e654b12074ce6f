import { DEFAULT_BOUNCE_SETTINGS, recordReturns } from '../bounces/bounces';
import { campaignBatches } from '../campaigns/batches';
import { TEST_SECRET } from './support/app';
import { deleteContact } from '../db/queries/contacts';
import { createProject } from '../projects/service';
import { addDomain } from '../domains/rows';
import { recordHits, type Hit } from '../tracking/record';
import { expectStatsKept } from './support/campaignRecount';
import { createTestDatabase, type TestDatabase } from './support/db';
import { waitFor } from './support/processes';
import { startEndToEnd, type EndToEnd } from './support/endToEnd';

/**
 * A campaign's stats are kept as its mail goes out and comes back (migration 20261203000001), by the statements that
 * write its emails and events, and equal a recount of its rows (test/support/campaignRecount.ts) after each of them.
 */
describe('sent and come back', () => {
  let e2e: EndToEnd;
  beforeAll(async () => {
    e2e = await startEndToEnd();
    for (let i = 0; i < 12; i++) await e2e.t.http().post('/contacts').set(e2e.key).send({ email: `k${String(i).padStart(2, '0')}@example.org`, subscribed: true });
  });
  afterAll(() => e2e.close());

  test('bounces, complaints, an unsubscribe, opens and clicks: each counted once per email, as a recount of the rows; a deleted contact keeps what was sent', async () => {
    const { t, key, smtp } = e2e;
    const knex = t.db.knex;
    const created = await t.http().post('/campaigns').set(key).send({
      name: 'Kept', subject: 'Kept', body: '<p>Hi <a href="https://news.example/a">A</a> <a href="https://news.example/b">B</a></p>',
      from: 'news@example.com', audienceType: 'ALL',
    });
    const id = created.body.data.id as string;
    expect((await t.http().post(`/campaigns/${id}/send`).set(key).send({})).status).toBe(200);
    await waitFor('the campaign SENT', async () => ((await knex('campaigns').where({ id }).first('status')).status === 'SENT' ? true : undefined), 30_000, 100);
    expect(await expectStatsKept(knex, t.project.id, id)).toMatchObject({ totalRecipients: 12, queued: 0, sent: 12, failed: 0 });

    const emails: { id: string; to_email: string; contact_id: string }[] = await knex('emails').where({ campaign_id: id }).orderBy('to_email').select('id', 'to_email', 'contact_id');
    const [e0, e1, e2, e3, e4, e5, e6] = emails;
    // Two hard bounces, a soft bounce reported twice and then hard, a complaint reported twice (two reports, two transactions).
    const hard = (e: typeof e0) => ({ emailId: e!.id, kind: 'bounce' as const, bounce: { type: 'hard' as const, status: '5.1.1', diagnostic: 'no such user', source: 'dsn' as const } });
    const soft = { emailId: e2!.id, kind: 'bounce' as const, bounce: { type: 'soft' as const, status: '4.2.2', diagnostic: 'mailbox full', source: 'dsn' as const } };
    const complaint = { emailId: e3!.id, kind: 'complaint' as const, feedbackType: 'abuse', userAgent: null };
    await knex.transaction((trx) => recordReturns(trx, [hard(e0), hard(e1), soft, complaint], DEFAULT_BOUNCE_SETTINGS));
    await knex.transaction((trx) => recordReturns(trx, [soft, complaint, hard(e2)], DEFAULT_BOUNCE_SETTINGS));
    // e4 unsubscribes with its one-click link.
    const raw = smtp.received.find((m) => m.envelopeTo[0] === e4!.to_email)!.raw.toString().replace(/\r?\n[ \t]+/g, ' ');
    const token = /^List-Unsubscribe: <[^>]*\/unsubscribe\/([^>]+)>\r?$/m.exec(raw)![1]!.replace(/\s+/g, '');
    expect((await t.http().post(`/unsubscribe/${token}`).type('form').send('List-Unsubscribe=One-Click')).status).toBe(200);
    // Opens and clicks in two batches (the tracker's group commits): a person's and a proxy's opens, a person's and a scanner's clicks.
    const hit = (e: typeof e0, kind: 'open' | 'click', bot = false, url?: string): Hit => ({ kind, projectId: t.project.id, emailId: e!.id, agent: { bot }, ...(url ? { url } : {}) });
    await recordHits(knex, [hit(e5, 'open'), hit(e5, 'open'), hit(e5, 'click', false, 'https://news.example/a'), hit(e6, 'open', true), hit(e6, 'click', true, 'https://news.example/b')]);
    await recordHits(knex, [hit(e5, 'click', false, 'https://news.example/b'), hit(e6, 'open'), hit(e6, 'click', false, 'https://news.example/b')], 0);

    const stats = await expectStatsKept(knex, t.project.id, id);
    expect(stats).toMatchObject({
      // Sent: handed to the receiving servers, the three bounced since included; delivered: not bounced.
      totalRecipients: 12, queued: 0, sent: 12, delivered: 9, failed: 0, cancelled: 0, suppressed: 0, bounced: 3, complained: 1, unsubscribed: 1,
      opens: 4, uniqueOpens: 2, clicks: 4, uniqueClicks: 2,
      links: [{ url: 'https://news.example/b', clicks: 3, uniqueClicks: 2 }, { url: 'https://news.example/a', clicks: 1, uniqueClicks: 1 }],
    });

    // A contact's deletion takes its emails and events with it, not what its campaign sent: the stats are history.
    expect((await t.http().delete(`/contacts/${e5!.contact_id}`).set(key)).status).toBe(204);
    expect((await t.http().get(`/campaigns/${id}/stats`).set(key)).body.data).toEqual({ ...stats });
  });

  test('GET /campaigns/:id and the list say how many it has queued so far, and the stats add up to it', async () => {
    const { t } = e2e;
    const knex = t.db.knex;
    // A project of its own: its audience is these 25 contacts.
    const project = await t.newProject('So far');
    const key = { Authorization: `Bearer ${project.secretKey}` };
    await addDomain(project.id, 'example.com', true);
    await knex.raw(`INSERT INTO contacts (project_id, email, subscribed) SELECT ?::uuid, 'r' || g || '@example.org', true FROM generate_series(1, 25) g`, [project.id]);
    const id = (await t.http().post('/campaigns').set(key).send({ name: 'So far', subject: 'So far', body: '<p>Hi</p>', from: 'news@example.com', audienceType: 'ALL' })).body.data.id as string;
    const answer = async () => (await t.http().get(`/campaigns/${id}`).set(key)).body.data as { status: string; totalRecipients: number | null };
    expect(await answer()).toMatchObject({ status: 'DRAFT', totalRecipients: null });

    // As the engine would: the campaign SENDING, two batches of its audience queued (this file's worker may deliver some).
    await knex('campaigns').where({ id }).update({ status: 'SENDING', started_at: knex.fn.now() });
    const batches = campaignBatches({ knex, secret: TEST_SECRET });
    const first = await batches.campaignBatch({ projectId: project.id, campaignId: id, after: null, size: 10 });
    await batches.campaignBatch({ projectId: project.id, campaignId: id, after: first.last, size: 10 });
    expect(await answer()).toMatchObject({ status: 'SENDING', totalRecipients: 20 });
    const listed = (await t.http().get('/campaigns').set(key)).body.data.items as { id: string; totalRecipients: number | null }[];
    expect(listed.find((c) => c.id === id)?.totalRecipients).toBe(20);

    const cancelled = (await t.http().post(`/campaigns/${id}/cancel`).set(key)).body.data;
    expect(cancelled).toMatchObject({ status: 'CANCELLED', totalRecipients: 20 });
    // Emails this file's worker had claimed before the cancel end at their send slot (CANCELLED, or SENT if handed over).
    const stats = await waitFor('the claimed emails to end', async () => {
      const now = (await t.http().get(`/campaigns/${id}/stats`).set(key)).body.data;
      return now.queued === 0 ? now : undefined;
    }, 30_000, 100);
    expect(stats).toMatchObject({ totalRecipients: 20, queued: 0, failed: 0, suppressed: 0 });
    expect(stats.sent + stats.cancelled).toBe(20);
    await expectStatsKept(knex, project.id, id);
  });
});

describe('queued, cancelled, deleted', () => {
  let db: TestDatabase;
  beforeAll(async () => { db = await createTestDatabase(); });
  afterAll(() => db.close());

  test('the queue counts as it is written; a deleted contact\'s unsent email leaves the counts; a cancel moves the rest out of queued', async () => {
    const knex = db.knex;
    const project = await createProject('Queue counts');
    await knex.raw(
      `INSERT INTO contacts (project_id, email, subscribed) SELECT ?::uuid, 'q' || g || '@example.org', true FROM generate_series(1, 30) g`, [project.id]);
    const [campaign] = await knex('campaigns').insert({
      project_id: project.id, name: 'Q', subject: 'Q', body: '<p>Q</p>', from_email: 'news@example.com', audience_type: 'ALL', status: 'SENDING', started_at: knex.fn.now(),
    }).returning('id');
    const ref = { projectId: project.id, campaignId: campaign.id as string };
    const batches = campaignBatches({ knex, secret: TEST_SECRET });
    // Two batches, the second one retried (as an engine retries an activity): the retry inserts nothing and counts nothing.
    const first = await batches.campaignBatch({ ...ref, after: null, size: 20 });
    await batches.campaignBatch({ ...ref, after: first.last, size: 20 });
    await batches.campaignBatch({ ...ref, after: first.last, size: 20 });
    expect(await expectStatsKept(knex, project.id, ref.campaignId)).toMatchObject({ totalRecipients: 30, queued: 30, sent: 0 });

    // No worker runs here: every email is QUEUED. Deleting a contact takes its unsent email out of the counts.
    const one = await knex('emails').where({ campaign_id: ref.campaignId }).first('contact_id');
    expect(await deleteContact(knex, project.id, one.contact_id)).toBe(true);
    expect(await expectStatsKept(knex, project.id, ref.campaignId)).toMatchObject({ totalRecipients: 29, queued: 29 });

    expect(await batches.cancelCampaign(ref)).toBe('CANCELLED');
    expect(await expectStatsKept(knex, project.id, ref.campaignId)).toMatchObject({ totalRecipients: 29, queued: 0, sent: 0, failed: 0, cancelled: 29 });
  });
});
