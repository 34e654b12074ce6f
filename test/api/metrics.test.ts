import fs from 'node:fs';
import type { Server } from 'node:http';
import path from 'node:path';
import request from 'supertest';
import { createApp } from '../../api/app';
import { EMAIL_STATUSES } from '../../metrics/database';
import { bearer, testAppDeps } from '../support/app';
import { startEndToEnd, type EndToEnd } from '../support/endToEnd';
import { waitForEmails } from '../support/engine';
import { waitFor } from '../support/processes';
import { parseExposition, type Exposition } from '../support/prometheus';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhookReceiver';

/**
 * GET /metrics end to end: a real app on the embedded engine (DBOS, the delivery queue) delivering to a real SMTP
 * server; the exposition is parsed and read as Prometheus would.
 */
let e: EndToEnd;
let receiver: WebhookReceiver;

beforeAll(async () => {
  // Outbound webhooks to a loopback receiver: /ok answers 204, /broken 500 (two attempts, 300 ms apart).
  receiver = await startWebhookReceiver((req) => ({ status: req.path === '/ok' ? 204 : 500 }));
  e = await startEndToEnd({ outboundWebhooks: { http: { allowPrivate: ['127.0.0.1'], timeoutMs: 2000, maxResponseBytes: 1024 }, retryDelaysMs: [300] } });
});
afterAll(async () => {
  await e.close();
  await receiver.close();
});

async function scrape(): Promise<Exposition> {
  const res = await e.t.http().get('/metrics');
  expect(res.status).toBe(200);
  return parseExposition(res.text);
}

test('GET /metrics answers in the Prometheus text format, with every series and sane values', async () => {
  await e.t.http().get('/health').expect(200); // at least one request timed before the scrape
  const res = await e.t.http().get('/metrics');
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
  const m = parseExposition(res.text);

  expect(m.types.get('herald_http_request_duration_seconds')).toBe('histogram');
  for (const name of ['herald_emails_accepted_total', 'herald_deliveries_total', 'herald_webhook_deliveries_total',
    'herald_engine_workflow_starts_total', 'herald_engine_workflow_start_failures_total', 'herald_engine_workflow_failures_total']) {
    expect([name, m.types.get(name)]).toEqual([name, 'counter']);
  }
  for (const name of ['herald_emails', 'herald_emails_estimated', 'herald_delivery_queue_depth', 'herald_delivery_queue_oldest_age_seconds',
    'herald_automation_executions', 'herald_metrics_database_up']) {
    expect([name, m.types.get(name)]).toEqual([name, 'gauge']);
  }
  // The send rate's ways and the outcomes start at zero (so that rate() has a start); the statuses are all there.
  for (const way of ['http', 'smtp', 'campaign', 'automation']) expect(m.value('herald_emails_accepted_total', { way })).toBeGreaterThanOrEqual(0);
  for (const outcome of ['sent', 'failed', 'retried', 'cancelled']) expect(m.value('herald_deliveries_total', { outcome })).toBeGreaterThanOrEqual(0);
  for (const outcome of ['succeeded', 'retried', 'failed']) expect(m.value('herald_webhook_deliveries_total', { outcome })).toBeGreaterThanOrEqual(0);
  expect(m.find('herald_emails').map((s) => s.labels.status).sort()).toEqual([...EMAIL_STATUSES].sort());
  expect(m.value('herald_emails_estimated')).toBe(0); // a small table is counted exactly
  expect(m.value('herald_metrics_database_up')).toBe(1);
  expect(m.value('herald_delivery_queue_depth')).toBeGreaterThanOrEqual(0);
  expect(m.value('herald_delivery_queue_oldest_age_seconds')).toBeGreaterThanOrEqual(0);
  expect(m.value('herald_automation_executions', { status: 'running' })).toBe(0);
  expect(m.value('herald_automation_executions', { status: 'waiting' })).toBe(0);
  expect(m.value('herald_http_request_duration_seconds_count', { method: 'GET', route: '/health', status: '200' })).toBeGreaterThanOrEqual(1);
  // prom-client's process metrics, under their standard names.
  expect(m.value('process_cpu_user_seconds_total')).toBeGreaterThan(0);
  expect(m.value('nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
  // Every series of Herald's own is prefixed; every value is a number.
  const own = new Set(m.samples.map((s) => s.name).filter((n) => !/^(process|nodejs)_/.test(n)));
  for (const name of own) expect(name).toMatch(/^herald_/);
  // (Only the statistics' age may be NaN: this small table may not have been analysed yet.)
  for (const s of m.samples.filter((x) => x.name !== 'herald_emails_statistics_age_seconds')) expect([s.name, Number.isNaN(s.value)]).toEqual([s.name, false]);
});

test('a send moves the send counter, then the delivery counter; the queue drains', async () => {
  const before = await scrape();
  const res = await e.t.http().post('/v1/send').set(e.key)
    .send({ to: ['m1@example.org', 'm2@example.org'], from: 'hi@example.com', subject: 'Metrics', body: '<p>Hi</p>' });
  expect(res.status).toBe(200);
  const after = await scrape();
  expect(after.value('herald_emails_accepted_total', { way: 'http' })! - before.value('herald_emails_accepted_total', { way: 'http' })!).toBe(2);

  const ids = (res.body.data.emails as { email: string }[]).map((x) => x.email);
  const rows = await waitForEmails(e.t.db, ids);
  expect(Object.values(rows).map((r) => r.status)).toEqual(['SENT', 'SENT']);
  // The counter moves when the outcome is committed, in this process's worker.
  const sent = await waitFor('the delivery counter', async () => {
    const v = (await scrape()).value('herald_deliveries_total', { outcome: 'sent' })!;
    return v - before.value('herald_deliveries_total', { outcome: 'sent' })! >= 2 ? v : undefined;
  });
  expect(sent - before.value('herald_deliveries_total', { outcome: 'sent' })!).toBe(2);
  expect(e.smtp.received.filter((msg) => msg.envelopeTo.some((to) => to === 'm1@example.org' || to === 'm2@example.org'))).toHaveLength(2);
});

test('the HTTP histogram is labelled with the route pattern, never the raw path; unmatched paths share one label', async () => {
  const contact = await e.t.http().post('/contacts').set(e.key).send({ email: 'histogram@example.org' });
  expect(contact.status).toBe(201);
  const id = contact.body.data.id as string;
  await e.t.http().get(`/contacts/${id}`).set(e.key).expect(200);
  await e.t.http().get('/contacts/0190a000-0000-7000-8000-000000000000').set(e.key).expect(404);
  await e.t.http().get(`/no/such/path/${id}`).set(e.key).expect(404);
  await e.t.http().get(`/contacts/${id}`).expect(401); // refused by the router's authentication, before the route ran
  const m = await scrape();

  expect(m.value('herald_http_request_duration_seconds_count', { method: 'GET', route: '/contacts/:id', status: '200' })).toBeGreaterThanOrEqual(1);
  expect(m.value('herald_http_request_duration_seconds_count', { method: 'GET', route: '/contacts/:id', status: '404' })).toBeGreaterThanOrEqual(1);
  expect(m.value('herald_http_request_duration_seconds_count', { method: 'GET', route: '/contacts/:id', status: '401' })).toBeGreaterThanOrEqual(1);
  expect(m.value('herald_http_request_duration_seconds_count', { method: 'POST', route: '/contacts', status: '201' })).toBeGreaterThanOrEqual(1);
  expect(m.value('herald_http_request_duration_seconds_count', { method: 'GET', route: 'unmatched', status: '404' })).toBeGreaterThanOrEqual(1);
  // A histogram's buckets: cumulative, ending in +Inf = the count.
  const buckets = m.find('herald_http_request_duration_seconds_bucket', { method: 'GET', route: '/contacts/:id', status: '200' });
  expect(buckets.at(-1)!.labels.le).toBe('+Inf');
  expect(buckets.at(-1)!.value).toBe(m.value('herald_http_request_duration_seconds_count', { method: 'GET', route: '/contacts/:id', status: '200' }));
  for (let i = 1; i < buckets.length; i++) expect(buckets[i]!.value).toBeGreaterThanOrEqual(buckets[i - 1]!.value);
  // No label anywhere holds an id of a path.
  for (const s of m.samples) for (const v of Object.values(s.labels)) expect(v).not.toContain(id);
  const routes = new Set(m.find('herald_http_request_duration_seconds_count').map((s) => s.labels.route));
  for (const route of routes) expect(route === 'unmatched' || route!.startsWith('/')).toBe(true);
  for (const route of routes) expect(route).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-/);
});

test('the example Grafana dashboard queries only series that a scrape has', async () => {
  const dashboard = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'grafana-dashboard.json'), 'utf8')) as { panels: { targets?: { expr: string }[] }[] };
  const exprs = dashboard.panels.flatMap((p) => p.targets ?? []).map((t) => t.expr);
  expect(exprs.length).toBeGreaterThan(10);
  const m = await scrape();
  const names = new Set(exprs.flatMap((x) => [...x.matchAll(/\b((?:herald|process|nodejs)_[a-z_]+)/g)].map((g) => g[1]!)));
  for (const name of names) {
    const family = name.replace(/_(bucket|count|sum)$/, '');
    expect([name, m.types.has(name) || m.types.get(family) === 'histogram']).toEqual([name, true]);
  }
  // Every series of Herald's has a panel.
  for (const [name] of m.types) if (name.startsWith('herald_')) expect([name, [...names].some((n) => n.startsWith(name))]).toEqual([name, true]);
});

/** How much each series moved between two scrapes. */
const moved = (before: Exposition, after: Exposition, name: string, labels: Record<string, string>) =>
  (after.find(name, labels).reduce((n, x) => n + x.value, 0)) - (before.find(name, labels).reduce((n, x) => n + x.value, 0));

test('campaigns and automations count as ways in, with their engine starts; transient and permanent SMTP failures as outcomes', async () => {
  const before = await scrape();
  // A campaign to every contact of the project.
  const campaign = await e.t.http().post('/campaigns').set(e.key)
    .send({ name: 'Metrics', subject: 'News', body: '<p>News</p>', from: 'news@example.com', audienceType: 'ALL' });
  expect(campaign.status).toBe(201);
  expect((await e.t.http().post(`/campaigns/${campaign.body.data.id}/send`).set(e.key).send({})).status).toBe(200);
  await waitFor('the campaign SENT', async () => ((await e.t.http().get(`/campaigns/${campaign.body.data.id}`).set(e.key)).body.data.status === 'SENT' ? true : undefined), 30_000, 100);
  const campaignEmails = Number((await e.t.db.knex('emails').where({ campaign_id: campaign.body.data.id, is_test: false }).count({ n: '*' }))[0]!.n);
  expect(campaignEmails).toBeGreaterThan(0);

  // An automation that mails a contact when it tracks an event.
  const template = await e.t.http().post('/templates').set(e.key).send({ name: 'welcome', subject: 'Welcome', body: '<p>Hi</p>', from: 'hello@example.com' });
  expect(template.status).toBe(201);
  const wf = await e.t.http().post('/workflows').set(e.key)
    .send({ name: 'welcome', enabled: true, trigger: { type: 'EVENT', event: 'metrics_signed_up' }, steps: [{ id: 'welcome', type: 'SEND_EMAIL', config: { template: template.body.data.id } }] });
  expect(wf.status).toBe(201);
  expect((await e.t.http().post('/v1/track').set(bearer(e.t.project.publicKey)).send({ email: 'journey@example.org', event: 'metrics_signed_up' })).status).toBe(200);
  const automated = await waitFor('the automation\'s email', async () => (await e.t.db.knex('emails').where({ template_id: template.body.data.id, to_email: 'journey@example.org' }).first('id'))?.id as string | undefined, 30_000, 100);
  await waitForEmails(e.t.db, [automated]);

  // One send answered 451 once (retried, then sent), one refused with 550 (failed).
  e.smtp.script([{ code: 451, message: 'Try again later' }]);
  const transient = await e.t.http().post('/v1/send').set(e.key).send({ to: 'later@example.org', from: 'hi@example.com', subject: 'a', body: '<p>a</p>' });
  await waitForEmails(e.t.db, [transient.body.data.emails[0].email]);
  e.smtp.script([{ code: 550, message: 'No such user here' }]);
  const permanent = await e.t.http().post('/v1/send').set(e.key).send({ to: 'nobody@example.org', from: 'hi@example.com', subject: 'b', body: '<p>b</p>' });
  expect(Object.values(await waitForEmails(e.t.db, [permanent.body.data.emails[0].email]))[0]!.status).toBe('FAILED');

  const after = await waitFor('the counters', async () => {
    const m = await scrape();
    return moved(before, m, 'herald_deliveries_total', { outcome: 'failed' }) >= 1 && moved(before, m, 'herald_deliveries_total', { outcome: 'sent' }) >= campaignEmails + 2 ? m : undefined;
  }, 10_000, 100);
  expect(moved(before, after, 'herald_emails_accepted_total', { way: 'campaign' })).toBe(campaignEmails);
  expect(moved(before, after, 'herald_emails_accepted_total', { way: 'automation' })).toBe(1);
  expect(moved(before, after, 'herald_emails_accepted_total', { way: 'http' })).toBe(2);
  expect(moved(before, after, 'herald_engine_workflow_starts_total', { engine: 'embedded', workflow: 'sendCampaign' })).toBeGreaterThanOrEqual(1);
  expect(moved(before, after, 'herald_engine_workflow_starts_total', { engine: 'embedded', workflow: 'runAutomation' })).toBeGreaterThanOrEqual(1);
  expect(moved(before, after, 'herald_deliveries_total', { outcome: 'retried' })).toBe(1);
  expect(moved(before, after, 'herald_deliveries_total', { outcome: 'failed' })).toBe(1);
  expect(moved(before, after, 'herald_deliveries_total', { outcome: 'sent' })).toBe(campaignEmails + 1 + 1);
  expect(after.value('herald_engine_workflow_failures_total', { engine: 'embedded', workflow: 'sendCampaign' }) ?? 0).toBe(0);
});

test('outbound webhook outcomes: succeeded, retried, failed', async () => {
  const before = await scrape();
  for (const path of ['/ok', '/broken']) {
    expect((await e.t.http().post('/webhooks').set(e.key).send({ url: `${receiver.url}${path}`, events: ['contact.created'] })).status).toBe(201);
  }
  expect((await e.t.http().post('/contacts').set(e.key).send({ email: 'hooked@example.org' })).status).toBe(201);
  // /ok: one attempt, a success; /broken: an attempt retried after 300 ms, then the last one, failed.
  const after = await waitFor('the webhook outcomes', async () => {
    const m = await scrape();
    return moved(before, m, 'herald_webhook_deliveries_total', { outcome: 'failed' }) >= 1 ? m : undefined;
  }, 20_000, 100);
  expect(moved(before, after, 'herald_webhook_deliveries_total', { outcome: 'succeeded' })).toBe(1);
  expect(moved(before, after, 'herald_webhook_deliveries_total', { outcome: 'retried' })).toBe(1);
  expect(moved(before, after, 'herald_webhook_deliveries_total', { outcome: 'failed' })).toBe(1);
});

test('a workflow run that fails is counted, by engine and workflow', async () => {
  const before = await scrape();
  // A campaign run for ids that are no UUIDs: its first activity fails with a data error, a permanent failure that is
  // not retried, and so does the one that would record the campaign FAILED: the run itself fails.
  await e.eng.engine.start('sendCampaign', { projectId: 'not-a-uuid', campaignId: 'not-a-uuid' }, { id: 'metrics-failing-campaign' });
  const after = await waitFor('the failed run', async () => {
    const m = await scrape();
    return moved(before, m, 'herald_engine_workflow_failures_total', { engine: 'embedded', workflow: 'sendCampaign' }) >= 1 ? m : undefined;
  }, 30_000, 100);
  expect(moved(before, after, 'herald_engine_workflow_failures_total', { engine: 'embedded', workflow: 'sendCampaign' })).toBe(1);
  expect(moved(before, after, 'herald_engine_workflow_starts_total', { engine: 'embedded', workflow: 'sendCampaign' })).toBe(1);
});

describe('METRICS_TOKEN', () => {
  const TOKEN = 'metrics-token-0123456789abcdef';
  let server: Server;
  beforeAll(async () => {
    server = createApp(testAppDeps(e.t.db.knex, { metricsToken: TOKEN })).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
  });
  afterAll(async () => { await new Promise((r) => server.close(r)); });

  test('refuses a scrape without the token, or with a wrong one, with a 401 in the error envelope', async () => {
    const missing = await request(server).get('/metrics');
    expect(missing.status).toBe(401);
    expect(missing.body).toMatchObject({ success: false, error: { code: 'UNAUTHORIZED', statusCode: 401, message: 'Missing metrics token' } });
    expect(missing.text).not.toContain('herald_');
    for (const wrong of ['metrics-token-0123456789abcdeX', 'short', `${TOKEN}x`, e.t.project.secretKey]) {
      const res = await request(server).get('/metrics').set(bearer(wrong));
      expect([wrong, res.status]).toEqual([wrong, 401]);
      expect(res.body.error).toMatchObject({ code: 'UNAUTHORIZED', message: 'Invalid metrics token' });
    }
    const basic = await request(server).get('/metrics').set('Authorization', `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}`);
    expect(basic.status).toBe(401);
  });

  test('accepts the right token', async () => {
    const res = await request(server).get('/metrics').set(bearer(TOKEN));
    expect(res.status).toBe(200);
    expect(parseExposition(res.text).value('herald_metrics_database_up')).toBe(1);
  });
});
