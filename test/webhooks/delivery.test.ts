import { recordEvents } from '../../db/queries/events';
import { startEndToEnd, type EndToEnd } from '../support/endToEnd';
import { waitFor } from '../support/processes';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhookReceiver';

/**
 * Outbound webhooks end to end on the embedded engine: the API, DBOS and the worker's queues, a real SMTP server and
 * real HTTP receivers on loopback (allowed as WEBHOOK steps' tests allow theirs). Signatures are checked with
 * `standardwebhooks`' own Webhook.verify. Retries wait 300 ms then 600 ms (WEBHOOK_RETRY_DELAYS_MS in production), so
 * a delivery has three attempts; requests time out after 1,500 ms (at 700 ms, a loaded CI-like run saw the live
 * endpoint's own answers time out three times in a row, beside the hung one).
 */
jest.setTimeout(120_000);
let e: EndToEnd;
let receiver: WebhookReceiver;
const RETRIES = [300, 600];

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  e = await startEndToEnd({
    outboundWebhooks: {
      http: { allowPrivate: ['127.0.0.1'], timeoutMs: 1500, maxResponseBytes: 1024 },
      retryDelaysMs: RETRIES,
      endpointConcurrency: 4,
    },
  });
});
afterAll(async () => {
  await e.close();
  await receiver.close();
});

const http = () => e.t.http();
async function endpoint(path: string, events: string[], url = `${receiver.url}${path}`): Promise<{ id: string; secret: string }> {
  const res = await http().post('/webhooks').set(e.key).send({ url, events });
  expect(res.status).toBe(201);
  return res.body.data;
}
const at = (path: string) => receiver.received.filter((r) => r.path === path);
async function deliveries(id: string) {
  const res = await http().get(`/webhooks/${id}/deliveries?limit=100`).set(e.key);
  expect(res.status).toBe(200);
  return res.body.data.items as {
    id: string; messageId: string; type: string; status: string; attempts: number; lastStatusCode: number | null; lastError: string | null;
    attemptLog: { attempt: number; statusCode: number | null; latencyMs: number; error: string | null; at: string }[]; payload: { type: string; data: Record<string, unknown> };
  }[];
}

test('a send: email.sent reaches the receiver, signed (standardwebhooks verifies it), with the email\'s data', async () => {
  const hook = await endpoint('/sent', ['email.sent']);
  const res = await http().post('/v1/send').set(e.key).send({ to: 'ada@example.org', from: 'hi@example.com', subject: 'Hello', body: '<p>hi</p>' });
  expect(res.status).toBe(200);
  const emailId = res.body.data.emails[0].email as string;
  expect(emailId).toEqual(expect.any(String));
  await waitFor('email.sent at the receiver', () => at('/sent').length > 0 || undefined);
  const secret = hook.secret;
  const all = receiver.verified(secret, '/sent');
  expect(all).toHaveLength(1);
  const [msg] = all;
  expect(msg!.payload).toMatchObject({ type: 'email.sent', data: { emailId, to: 'ada@example.org', subject: 'Hello' } });
  expect(msg!.payload.data.messageId).toEqual(expect.any(String));
  expect(new Date(msg!.payload.timestamp).toISOString()).toBe(msg!.payload.timestamp);
  const [req] = at('/sent');
  expect(req!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
  expect(req!.headers['content-type']).toBe('application/json');
  // Another secret does not verify it.
  expect(() => receiver.verified('whsec_' + Buffer.alloc(24, 1).toString('base64'), '/sent')).toThrow();
  // The delivery is listed with its attempt.
  const [d] = await waitFor('the outcome written', async () => {
    const list = await deliveries(hook.id);
    return list[0]?.status === 'SUCCEEDED' ? list : undefined;
  });
  expect(d).toMatchObject({ messageId: req!.headers['webhook-id'], type: 'email.sent', attempts: 1, lastStatusCode: 204, lastError: null });
  expect(d!.attemptLog).toEqual([expect.objectContaining({ attempt: 1, statusCode: 204, error: null })]);
});

test('contact.created, contact.updated and contact.unsubscribed; a no-op write sends nothing; a disabled endpoint gets nothing', async () => {
  const hook = await endpoint('/contacts', ['contact.created', 'contact.updated', 'contact.unsubscribed']);
  const off = await endpoint('/off', ['contact.created']);
  await http().patch(`/webhooks/${off.id}`).set(e.key).send({ enabled: false }).expect(200);
  const created = await http().post('/contacts').set(e.key).send({ email: 'grace@example.org', data: { plan: 'pro' } });
  expect(created.status).toBe(201);
  const id = created.body.data.id as string;
  await http().post('/contacts').set(e.key).send({ email: 'grace@example.org', data: { plan: 'pro' } }).expect(200); // no change
  await http().patch(`/contacts/${id}`).set(e.key).send({ subscribed: false }).expect(200);
  await waitFor('three contact webhooks', () => at('/contacts').length >= 3 || undefined);
  await new Promise((r) => setTimeout(r, 300)); // nothing more arrives
  const got = receiver.verified(hook.secret, '/contacts').map((m) => m.payload);
  expect(got.map((p) => p.type).sort()).toEqual(['contact.created', 'contact.unsubscribed', 'contact.updated']);
  expect(got.find((p) => p.type === 'contact.created')!.data).toMatchObject({ contactId: id, email: 'grace@example.org', subscribed: true, data: { plan: 'pro' } });
  expect(got.find((p) => p.type === 'contact.updated')!.data).toMatchObject({ contactId: id, subscribed: false });
  expect(got.find((p) => p.type === 'contact.unsubscribed')!.data).toMatchObject({ contactId: id, email: 'grace@example.org', source: 'api' });
  expect(at('/off')).toHaveLength(0);
  expect(await e.t.db.knex('webhook_deliveries').where('endpoint_id', off.id).count('* as n').first()).toEqual({ n: 0 });
});

test('a receiver answering 500 gets retries with backoff, then the delivery fails and the endpoint is marked failing; a success clears it', async () => {
  receiver.behave((r) => (r.path === '/flaky' ? { status: 500 } : { status: 204 }));
  const hook = await endpoint('/flaky', ['contact.created']);
  await http().post('/contacts').set(e.key).send({ email: 'retry@example.org' }).expect(201);
  const [d] = await waitFor('the delivery to fail', async () => {
    const list = await deliveries(hook.id);
    return list[0]?.status === 'FAILED' ? list : undefined;
  }, 30_000);
  expect(d!.attempts).toBe(RETRIES.length + 1);
  expect(d!.attemptLog.map((a) => [a.attempt, a.statusCode])).toEqual([[1, 500], [2, 500], [3, 500]]);
  expect(d!.lastError).toMatch(/500/);
  const times = at('/flaky').map((r) => r.at);
  expect(new Set(at('/flaky').map((r) => r.headers['webhook-id']))).toEqual(new Set([d!.messageId]));
  // Each wait at least its step of the schedule.
  expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(RETRIES[0]! - 50);
  expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(RETRIES[1]! - 50);
  const failing = await http().get(`/webhooks/${hook.id}`).set(e.key);
  expect(failing.body.data).toMatchObject({ status: 'failing', lastError: expect.stringMatching(/500/) });
  expect(failing.body.data.failingSince).toEqual(expect.any(String));

  // The receiver recovers; a redelivery carries the same webhook-id and clears the failing mark.
  receiver.behave(() => ({ status: 200 }));
  const redelivered = await http().post(`/webhooks/${hook.id}/deliveries/${d!.id}/redeliver`).set(e.key);
  expect(redelivered.status).toBe(202);
  await waitFor('the redelivery', async () => ((await deliveries(hook.id))[0]?.status === 'SUCCEEDED' ? true : undefined));
  const ids = at('/flaky').map((r) => r.headers['webhook-id']);
  expect(ids).toHaveLength(4);
  expect(new Set(ids)).toEqual(new Set([d!.messageId]));
  expect(receiver.verified(hook.secret, '/flaky')).toHaveLength(4);
  expect((await http().get(`/webhooks/${hook.id}`).set(e.key)).body.data).toMatchObject({ status: 'healthy', failingSince: null });
});

test('a hanging receiver times out and is retried, holding no more than its own places: a live endpoint beside it gets everything', async () => {
  receiver.behave((r) => (r.path === '/hang' ? 'hang' : { status: 204 }));
  const hung = await endpoint('/hang', ['contact.created']);
  const live = await endpoint('/live', ['contact.created']);
  for (let i = 0; i < 10; i++) await http().post('/contacts').set(e.key).send({ email: `hang-${i}@example.org` }).expect(201);
  let seen: Awaited<ReturnType<typeof deliveries>> = [];
  const liveDone = await waitFor('the live endpoint', async () => {
    seen = await deliveries(live.id);
    return seen.length === 10 && seen.every((d) => d.status === 'SUCCEEDED') ? seen : undefined;
  }, 30_000).catch((err: Error) => {
    throw new Error(`${err.message}; its deliveries: ${JSON.stringify(seen.map((d) => ({ status: d.status, attempts: d.attemptLog })))}`);
  });
  // The live endpoint answers at once: every delivery ends in its 204. On a loaded machine an attempt of it may itself
  // outlast the timeout (CI saw one at 700 ms), so a retry is allowed there, but only a timed-out one, never an answer
  // held back behind the hung endpoint's requests (those have their own places, bounded below).
  for (const d of liveDone) {
    expect(d.attemptLog.at(-1)).toMatchObject({ statusCode: 204 });
    for (const a of d.attemptLog.slice(0, -1)) expect(a.error).toMatch(/timed out after 1500 ms/);
  }
  const hungDone = await waitFor('every hung delivery to fail', async () => {
    const list = await deliveries(hung.id);
    return list.length === 10 && list.every((d) => d.status === 'FAILED') ? list : undefined;
  }, 60_000);
  for (const d of hungDone) {
    expect(d.attemptLog).toHaveLength(3);
    for (const a of d.attemptLog) {
      expect(a.statusCode).toBeNull();
      expect(a.error).toMatch(/timed out after 1500 ms/);
      expect(a.latencyMs).toBeGreaterThanOrEqual(1450);
    }
  }
  // Never more requests open to the hung endpoint than its concurrency (4): the rest of the queue stayed free.
  expect(receiver.maxOpen('/hang')).toBeLessThanOrEqual(4);
  expect(at('/hang')).toHaveLength(30);
});

test('private targets are refused unless allowed: a link-local URL, a redirect to a private address', async () => {
  receiver.behave((r) => (r.path === '/redirect' ? { status: 302, headers: { location: 'http://10.0.0.1/' } } : { status: 204 }));
  const metadata = await endpoint('', ['contact.created'], 'http://169.254.169.254/latest/meta-data');
  const loopback6 = await endpoint('', ['contact.created'], 'http://[::1]:9/');
  const redirect = await endpoint('/redirect', ['contact.created']);
  await http().post('/contacts').set(e.key).send({ email: 'private@example.org' }).expect(201);
  for (const [hook, why] of [[metadata, /^webhook refused: private address \(.*WEBHOOK_ALLOW_PRIVATE\)$/], [loopback6, /^webhook refused: private address/], [redirect, /302.*redirects are not followed/]] as const) {
    const [d] = await waitFor('the delivery to fail', async () => {
      const list = await deliveries(hook.id);
      return list[0]?.status === 'FAILED' ? list : undefined;
    }, 30_000);
    expect(d!.attempts).toBe(3);
    expect(d!.lastError).toMatch(why);
  }
  // The redirect was not followed: the receiver saw the three attempts and nothing else was asked for.
  expect(at('/redirect')).toHaveLength(3);
});

test('campaign.sent arrives when a campaign finishes', async () => {
  const hook = await endpoint('/campaigns', ['campaign.sent', 'email.sent']);
  const contact = await http().post('/contacts').set(e.key).send({ email: 'reader@example.org' });
  expect([200, 201]).toContain(contact.status);
  const campaign = await http().post('/campaigns').set(e.key).send({ name: 'News', subject: 'News', body: '<p>news</p>', from: 'hi@example.com', audienceType: 'ALL' });
  expect(campaign.status).toBe(201);
  const sent = await http().post(`/campaigns/${campaign.body.data.id}/send`).set(e.key).send({});
  expect([200, 202]).toContain(sent.status);
  await waitFor('campaign.sent', () => receiver.verified(hook.secret, '/campaigns').some((m) => m.payload.type === 'campaign.sent') || undefined, 60_000);
  const received = receiver.verified(hook.secret, '/campaigns');
  const done = received.map((m) => m.payload).find((p) => p.type === 'campaign.sent')!;
  expect(done.data).toMatchObject({ campaignId: campaign.body.data.id, name: 'News' });
  expect(done.data.totalRecipients).toBeGreaterThanOrEqual(1);
  // One email.sent per email of the campaign: the endpoint hears the whole project's (an earlier test's send may still
  // be delivered meanwhile), and a message the receiver got twice (a retry after a slow answer) is one message.
  const ours = new Set(await e.t.db.knex('emails').where({ project_id: e.t.project.id, campaign_id: campaign.body.data.id }).pluck('id'));
  const sentOfOurs = new Set(received.filter((m) => m.payload.type === 'email.sent' && ours.has(m.payload.data.emailId as string)).map((m) => m.id));
  expect(sentOfOurs.size).toBe(done.data.totalRecipients);
  expect(ours.size).toBe(done.data.totalRecipients);
});

test('an event recorded by recordEvents (as open/click tracking records email.opened) reaches webhooks; a rolled-back one never does', async () => {
  const hook = await endpoint('/opened', ['email.opened', 'email.clicked']);
  const res = await http().post('/v1/send').set(e.key).send({ to: 'open@example.org', from: 'hi@example.com', subject: 'Tracked', body: '<p>hi</p>' });
  const emailId = res.body.data.emails[0].email as string;
  const contactId = res.body.data.emails[0].contact.id as string;
  const projectId = e.t.project.id;
  await e.t.db.knex.transaction((trx) => recordEvents(trx, projectId, [{ name: 'email.opened', emailId, contactId, data: { userAgent: 'Mail', bot: false } }]));
  // The same in a transaction that fails: its outbox row goes with it.
  await expect(e.t.db.knex.transaction(async (trx) => {
    await recordEvents(trx, projectId, [{ name: 'email.clicked', emailId, contactId, data: { url: 'https://example.org/rolled-back' } }]);
    throw new Error('the tracking request failed after its insert');
  })).rejects.toThrow('failed after its insert');
  await e.t.db.knex.transaction((trx) => recordEvents(trx, projectId, [{ name: 'email.clicked', emailId, contactId, data: { url: 'https://example.org/kept' } }]));
  await waitFor('two tracking webhooks', () => (at('/opened').length >= 2 ? true : undefined));
  await new Promise((r) => setTimeout(r, 300));
  const got = receiver.verified(hook.secret, '/opened').map((m) => m.payload);
  expect(got.map((p) => p.type).sort()).toEqual(['email.clicked', 'email.opened']);
  expect(got.find((p) => p.type === 'email.opened')!.data).toMatchObject({ emailId, contactId, to: 'open@example.org', subject: 'Tracked', userAgent: 'Mail', bot: false });
  expect(got.find((p) => p.type === 'email.opened')!.data.email).toBeUndefined(); // the contact's address only on contact.* events
  expect(got.find((p) => p.type === 'email.clicked')!.data).toMatchObject({ emailId, url: 'https://example.org/kept' });
  expect(await e.t.db.knex('webhook_deliveries').where('endpoint_id', hook.id).count('* as n').first()).toEqual({ n: 2 });
});
