import type { TestContext } from './support/app';
import { TEST_SECRET } from './support/app';
import { waitFor } from './support/processes';
import type { TestSmtpServer } from './support/smtp';
import { startEndToEnd, type EndToEnd } from './support/endToEnd';
import { expectStatsKept } from './support/campaignRecount';
import { openToken } from '../tracking/links';
import { workflowId } from '../workflows/registry';
import { sampleHash, type SamplePlan } from '../campaigns/abTest';
import { WAKE_TOPIC } from '../workflows/policy';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhookReceiver';

/**
 * A/B campaigns end to end on the embedded engine (issue 32): variants and a test → the sample, split between the
 * variants → the wait → the winner (a person's choice, or the metric) → the rest, each contact mailed once, through a
 * real SMTP server; the refusals of what cannot be tested; a cancel in each phase.
 */
let smtp: TestSmtpServer;
let t: TestContext;
let key: { Authorization: string };
let e2e: EndToEnd;

const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const CONTACTS = 40;

let hooks: WebhookReceiver;
let hook: { id: string; secret: string };

beforeAll(async () => {
  ({ smtp, t, key } = e2e = await startEndToEnd({ outboundWebhooks: { http: { allowPrivate: ['127.0.0.1'], timeoutMs: 2000, maxResponseBytes: 1024 } } }));
  hooks = await startWebhookReceiver();
  hook = (await t.http().post('/webhooks').set(key).send({ url: `${hooks.url}/ab`, events: ['campaign.winner'] })).body.data;
  for (let i = 0; i < CONTACTS; i++) {
    await t.http().post('/contacts').set(key).send({ email: `ab${String(i).padStart(2, '0')}@example.org`, subscribed: true, data: { n: i, seg: 'ab' } });
  }
});
afterAll(async () => {
  await e2e.close();
  await hooks.close();
});

const segmentFilter = { logic: 'AND', groups: [{ filters: [{ field: 'data.seg', operator: 'equals', value: 'ab' }] }] };
const variants = [
  { name: 'Statement', subject: 'June is here' },
  { name: 'Question', subject: 'Ready for June, {{ data.n }}?', previewText: 'Three things & one fix' },
];
const abCampaign = (extra: object = {}) => t.http().post('/campaigns').set(key).send({
  name: 'AB', subject: 'Base subject', body: '<p>Hello {{ data.n }}</p>', from: 'news@example.com', fromName: 'News',
  audienceType: 'FILTERED', audienceFilter: segmentFilter, variants, abTest: { samplePercent: 50, waitMinutes: 60, metric: 'manual' }, ...extra,
});

const get = async (id: string) => (await t.http().get(`/campaigns/${id}`).set(key)).body.data;
const waitCampaign = (id: string, what: string, ok: (c: { status: string; abTest: { phase: string | null; winner: string | null } }) => boolean, timeoutMs = 30_000) =>
  waitFor(what, async () => { const c = await get(id); return ok(c) ? c : undefined; }, timeoutMs, 100);
const mailsOf = (id: string) => t.db.knex('emails').where({ project_id: t.project.id, campaign_id: id, is_test: false });
const receivedFor = (since: number) => smtp.received.slice(since);

describe('refused, nothing stored', () => {
  test.each([
    ['variants without a test', { abTest: undefined }, 'abTest', 'required'],
    ['a test without variants', { variants: undefined }, 'variants', 'required'],
    ['a single variant', { variants: [{ subject: 'x' }] }, 'variants', 'too_small'],
    ['six variants', { variants: Array.from({ length: 6 }, (_, i) => ({ subject: `s${i}` })) }, 'variants', 'too_big'],
    ['a wait under 10 minutes', { abTest: { samplePercent: 20, waitMinutes: 5, metric: 'opens' } }, 'abTest.waitMinutes', 'too_small'],
    ['a wait over 7 days', { abTest: { samplePercent: 20, waitMinutes: 10081, metric: 'opens' } }, 'abTest.waitMinutes', 'too_big'],
    ['a share over 50 %', { abTest: { samplePercent: 51, waitMinutes: 60, metric: 'opens' } }, 'abTest.samplePercent', 'too_big'],
    ['a share that leaves a variant with nobody (2 % of 40, 2 variants)', { abTest: { samplePercent: 2, waitMinutes: 60, metric: 'opens' } }, 'abTest.samplePercent', 'too_small'],
    ['a variant over the render budget', { variants: [{ subject: 'a' }, { body: '{% for i in (1..100000000) %}{% for j in (1..100000000) %}x{% endfor %}{% endfor %}' }] }, 'variants.1.body', undefined],
    ['a variant with a bad template syntax', { variants: [{ subject: 'a {{' }, { subject: 'b' }] }, 'variants.0.subject', 'invalid_template'],
    ['a variant with another project\'s template', { variants: [{ templateId: '00000000-0000-4000-8000-000000000001' }, { subject: 'b' }] }, 'variants.0.templateId', 'not_found'],
    ['a preview text that does not parse', { previewText: 'Hi {{' }, 'previewText', 'invalid_template'],
  ])('%s', async (_what, extra, field, code) => {
    const before = (await t.db.knex('campaigns').where('project_id', t.project.id).count({ n: '*' }))[0]!.n;
    const res = await abCampaign(extra);
    expect(res.status).toBe(422);
    const error = res.body.error.errors.find((e: { field: string }) => e.field === field);
    expect(error).toBeDefined();
    if (code) expect(error.code).toBe(code);
    expect((await t.db.knex('campaigns').where('project_id', t.project.id).count({ n: '*' }))[0]!.n).toBe(before);
  });

  test('a patch that would leave variants without a test is refused, and the campaign stays as it was', async () => {
    const { body } = await abCampaign();
    const res = await t.http().patch(`/campaigns/${body.data.id}`).set(key).send({ abTest: null });
    expect(res.status).toBe(422);
    expect(res.body.error.errors.map((e: { field: string }) => e.field)).toContain('abTest');
    const c = await get(body.data.id);
    expect(c.abTest).toMatchObject({ samplePercent: 50, metric: 'manual' });
    expect(c.variants).toHaveLength(2);
    // Both cleared together make it a plain campaign again.
    const plain = await t.http().patch(`/campaigns/${body.data.id}`).set(key).send({ abTest: null, variants: null });
    expect(plain.status).toBe(200);
    expect(plain.body.data).toMatchObject({ variants: null, abTest: null });
  });
});

test('a manual test: the sample split evenly between the variants, the wait, a person\'s choice, then the winner to the rest; every contact once', async () => {
  const since = smtp.received.length;
  const { body } = await abCampaign();
  const id = body.data.id;
  expect(body.data.variants.map((v: { key: string }) => v.key)).toEqual(['A', 'B']);
  expect(body.data.abTest).toEqual({ samplePercent: 50, waitMinutes: 60, metric: 'manual', phase: null, sampleSize: null, waitEndsAt: null, chosen: null, winner: null, decidedAt: null });
  expect((await t.http().post(`/campaigns/${id}/winner`).set(key).send({ variant: 'A' })).status).toBe(409); // not sending yet

  expect((await t.http().post(`/campaigns/${id}/send`).set(key).send({})).status).toBe(200);
  const waiting = await waitCampaign(id, 'the wait', (c) => c.abTest.phase === 'WAITING');
  expect(waiting.status).toBe('SENDING');
  expect(waiting.abTest.sampleSize).toBe(20);
  expect(Date.parse(waiting.abTest.waitEndsAt) - Date.now()).toBeGreaterThan(50 * 60_000);

  // The sample: 20 contacts, 10 per variant, each with its variant's content; nobody else yet.
  const sample = await mailsOf(id).select('variant', 'status', 'to_email', 'from_name');
  expect(sample).toHaveLength(20);
  expect(sample.filter((e) => e.variant === 0)).toHaveLength(10);
  expect(sample.filter((e) => e.variant === 1)).toHaveLength(10);
  expect(sample.every((e) => e.status === 'SENT')).toBe(true);
  const mails = receivedFor(since);
  expect(mails).toHaveLength(20);
  const bySubject = (s: RegExp) => mails.filter((m) => s.test(m.parsed.subject ?? ''));
  expect(bySubject(/^June is here$/)).toHaveLength(10);
  expect(bySubject(/^Ready for June, \d+\?$/)).toHaveLength(10);
  const question = bySubject(/^Ready for June/)[0]!;
  expect(question.parsed.html).toMatch(/<div style="display:none[^"]*">Three things &amp; one fix<\/div><p>Hello \d+<\/p>/);
  expect(bySubject(/^June is here$/)[0]!.parsed.html).not.toContain('display:none');

  // The same people on a retry: the plan is fixed, and a second look at it puts each contact in the same variant.
  const stats = (await t.http().get(`/campaigns/${id}/stats`).set(key)).body.data;
  expect(stats.variants.map((v: { key: string; sent: number; totalRecipients: number }) => [v.key, v.sent, v.totalRecipients])).toEqual([['A', 10, 10], ['B', 10, 10]]);
  expect(stats.rest).toMatchObject({ totalRecipients: 0, sent: 0 });
  expect(stats.decision).toBeNull();

  // A contact who unsubscribes during the wait is not mailed, nor one whose address is suppressed; one who joins the
  // audience gets the winner.
  const mailed = (await mailsOf(id).select('to_email')).map((e) => e.to_email as string);
  const [leaving, suppressed] = Array.from({ length: CONTACTS }, (_, i) => `ab${String(i).padStart(2, '0')}@example.org`).filter((a) => !mailed.includes(a));
  await t.db.knex('contacts').where({ project_id: t.project.id, email: leaving }).update({ subscribed: false });
  expect((await t.http().post('/suppressions').set(key).send({ email: suppressed, reason: 'manual' })).status).toBe(201);
  await t.http().post('/contacts').set(key).send({ email: 'late@example.org', subscribed: true, data: { n: 99, seg: 'ab' } });
  // Joiners until one falls inside the sample's part of the hash order (one the sample would have had, had it been
  // there): it was not mailed, so it gets the winner too.
  const plan = (await t.db.knex('campaigns').where({ id }).first('ab_plan')).ab_plan as SamplePlan;
  expect(plan.hash).toBe('uuid');
  const last = plan.bounds[plan.bounds.length - 1]!;
  const joiners: string[] = [];
  for (let n = 0; ; n++) {
    const email = `late${n}@example.org`;
    const contact = (await t.http().post('/contacts').set(key).send({ email, subscribed: true, data: { n: 100 + n, seg: 'ab' } })).body.data;
    joiners.push(email);
    const inside = await t.db.knex.raw(`SELECT (${sampleHash(id, '?::uuid', plan)}, ?::uuid) <= (?::bigint, ?::uuid) AS inside`, [contact.id, contact.id, last.h, last.id]);
    if (inside.rows[0].inside) break;
    expect(n).toBeLessThan(30);
  }

  expect((await t.http().post(`/campaigns/${id}/winner`).set(key).send({ variant: 'C' })).status).toBe(422); // no such variant
  const chosen = await t.http().post(`/campaigns/${id}/winner`).set(key).send({ variant: 'B' });
  expect(chosen.status).toBe(200);
  expect(chosen.body.data.abTest.chosen).toBe('B');
  const sent = await waitCampaign(id, 'SENT', (c) => c.status === 'SENT');
  expect(sent.abTest).toMatchObject({ phase: 'DECIDED', winner: 'B', chosen: 'B' });
  expect((await t.http().post(`/campaigns/${id}/winner`).set(key).send({ variant: 'A' })).status).toBe(409);

  const all = await mailsOf(id).select('to_email', 'variant', 'status');
  const everyone = CONTACTS - 1 + joiners.length; // 40 − 1 unsubscribed − 1 suppressed + 1 joined, and the joiners
  expect(all).toHaveLength(everyone);
  expect(new Set(all.map((e) => e.to_email)).size).toBe(everyone);
  expect(all.map((e) => e.to_email)).not.toContain(leaving);
  expect(all.map((e) => e.to_email)).not.toContain(suppressed);
  expect(all.map((e) => e.to_email)).toEqual(expect.arrayContaining(['late@example.org', ...joiners]));
  const restMails = receivedFor(since).slice(20);
  expect(restMails).toHaveLength(everyone - 20);
  expect(restMails.every((m) => /^Ready for June, \d+\?$/.test(m.parsed.subject ?? ''))).toBe(true);
  expect(sent.totalRecipients).toBe(everyone);
  // The later tests' audience is the one they were written for (its size sets their samples'): the joiners leave it.
  await t.db.knex('contacts').where({ project_id: t.project.id }).whereIn('email', joiners).update({ subscribed: false });

  const final = (await t.http().get(`/campaigns/${id}/stats`).set(key)).body.data;
  expect(final).toMatchObject({ totalRecipients: everyone, sent: everyone });
  expect(final.rest).toMatchObject({ totalRecipients: everyone - 20, sent: everyone - 20, delivered: everyone - 20 });
  // Counts add up, for the campaign and for each variant.
  for (const part of [final, final.rest, ...final.variants]) {
    expect(part.sent + part.queued + part.failed + part.cancelled + part.suppressed).toBe(part.totalRecipients);
  }
  expect(final.decision).toMatchObject({ winner: 'B', decidedBy: 'manual', metric: 'manual' });
  expect(final.decision.figures.map((f: { key: string; delivered: number }) => [f.key, f.delivered])).toEqual([['A', 10], ['B', 10]]);
  await expectStatsKept(t.db.knex, t.project.id, id);

  // The decision is an event (and so a webhook), with the figures it was made on.
  const event = await t.db.knex('events').where({ project_id: t.project.id, name: 'campaign.winner' }).whereRaw("data->>'campaignId' = ?", [id]).first();
  expect(event.data).toMatchObject({ campaignId: id, name: 'AB', winner: 'B', decidedBy: 'manual' });
  const audit = await t.db.knex('audit_log').where({ project_id: t.project.id, operation: 'chooseCampaignWinner', resource_id: id }).first();
  expect(audit.details).toEqual({ variant: 'B' });
  // … delivered to the subscribed endpoint, signed (verified with standardwebhooks).
  const delivered = await waitFor('the campaign.winner webhook', () => hooks.verified(hook.secret, '/ab').find((w) => w.payload.data.campaignId === id));
  expect(delivered.payload).toMatchObject({ type: 'campaign.winner', data: { campaignId: id, winner: 'B', decidedBy: 'manual', eventId: event.id } });
  await t.db.knex('contacts').where({ project_id: t.project.id, email: leaving }).update({ subscribed: true });
  await t.http().delete(`/suppressions/${encodeURIComponent(suppressed!)}`).set(key).expect(204);
  await t.db.knex('contacts').where({ project_id: t.project.id, email: 'late@example.org' }).delete();
});

test('a test by opens: the wait ends, the variant opened most by people wins (proxies do not count), and goes to the rest', async () => {
  const { body } = await abCampaign({ abTest: { samplePercent: 50, waitMinutes: 10, metric: 'opens' } });
  const id = body.data.id;
  await t.http().post(`/campaigns/${id}/send`).set(key).send({});
  await waitCampaign(id, 'the wait', (c) => c.abTest.phase === 'WAITING');
  const sample = await mailsOf(id).select('id', 'variant');
  const open = (emailId: string, agent = BROWSER) => t.http().get(`/t/o/${openToken(TEST_SECRET, { projectId: t.project.id, emailId })}`).set('User-Agent', agent).expect(200);
  // A (variant 0): 2 people open; B: 1 person, and Apple's proxy opens them all (not counted).
  for (const e of sample.filter((x) => x.variant === 0).slice(0, 2)) await open(e.id);
  await open(sample.find((x) => x.variant === 1)!.id);
  for (const e of sample.filter((x) => x.variant === 1)) await open(e.id, 'Mozilla/5.0');

  // The wait is 10 minutes: its end moved into the past stands for the time passing, and the nudge the API would give.
  await t.db.knex('campaigns').where({ project_id: t.project.id, id }).update({ ab_ends_at: new Date(Date.now() - 1000) });
  await e2e.eng.engine.signal(workflowId.sendCampaign({ campaignId: id }), WAKE_TOPIC, {});
  const sent = await waitCampaign(id, 'SENT', (c) => c.status === 'SENT');
  expect(sent.abTest).toMatchObject({ phase: 'DECIDED', winner: 'A', chosen: null });
  const stats = (await t.http().get(`/campaigns/${id}/stats`).set(key)).body.data;
  expect(stats.decision).toMatchObject({ winner: 'A', decidedBy: 'metric', metric: 'opens' });
  expect(stats.decision.figures.map((f: { key: string; uniqueOpens: number }) => [f.key, f.uniqueOpens])).toEqual([['A', 2], ['B', 1]]);
  // 2 of 10 against 1 of 10 is no evidence: flagged as not significant.
  expect(stats.decision.significance.opens).toMatchObject({ against: 1, significant: false });
  expect(stats.decision.significance.opens.pValue).toBeGreaterThan(0.05);
  const rest = await mailsOf(id).whereNull('variant').select('from_name');
  expect(rest).toHaveLength(20);
  await expectStatsKept(t.db.knex, t.project.id, id);
});

describe('cancel in each phase', () => {
  test('while waiting: CANCELLED at once, nobody else mailed', async () => {
    const { body } = await abCampaign();
    const id = body.data.id;
    await t.http().post(`/campaigns/${id}/send`).set(key).send({});
    await waitCampaign(id, 'the wait', (c) => c.abTest.phase === 'WAITING');
    const cancelled = await t.http().post(`/campaigns/${id}/cancel`).set(key);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.data.status).toBe('CANCELLED');
    expect((await t.http().post(`/campaigns/${id}/winner`).set(key).send({ variant: 'A' })).status).toBe(409);
    // The workflow ends (its wake-up looks at the row): the DBOS workflow is CANCELLED or SUCCESS, not waiting.
    await waitFor('the workflow to end', async () => {
      const [row] = (await t.db.knex.raw("SELECT status FROM dbos.workflow_status WHERE workflow_uuid = ?", [workflowId.sendCampaign({ campaignId: id })])).rows;
      return row && row.status !== 'PENDING' ? row : undefined;
    }, 30_000, 100);
    expect(await mailsOf(id).count({ n: '*' })).toEqual([{ n: 20 }]);
  });

  test('after the decision, while the rest is queued: its unsent emails are cancelled and the counts add up', async () => {
    const { body } = await abCampaign();
    const id = body.data.id;
    await t.http().post(`/campaigns/${id}/send`).set(key).send({});
    await waitCampaign(id, 'the wait', (c) => c.abTest.phase === 'WAITING');
    await t.http().post(`/campaigns/${id}/winner`).set(key).send({ variant: 'A' });
    await waitCampaign(id, 'the decision', (c) => c.abTest.phase === 'DECIDED');
    await t.http().post(`/campaigns/${id}/cancel`).set(key);
    await waitFor('no email in flight', async () => ((await mailsOf(id).whereIn('status', ['QUEUED', 'SENDING'])).length === 0 ? true : undefined));
    const stats = (await t.http().get(`/campaigns/${id}/stats`).set(key)).body.data;
    for (const part of [stats, stats.rest, ...stats.variants]) {
      expect(part.sent + part.queued + part.failed + part.cancelled + part.suppressed).toBe(part.totalRecipients);
    }
    expect((await get(id)).status).toBe('CANCELLED');
    await expectStatsKept(t.db.knex, t.project.id, id);
  });
});

test('test copies of an A/B campaign: one of each variant to each address, or of the variant asked for', async () => {
  const { body } = await abCampaign();
  const id = body.data.id;
  const since = smtp.received.length;
  const all = await t.http().post(`/campaigns/${id}/test`).set(key).send({ emails: ['me@example.org'] });
  expect(all.status).toBe(200);
  expect(all.body.data.emails.map((e: { variant: string }) => e.variant)).toEqual(['A', 'B']);
  const one = await t.http().post(`/campaigns/${id}/test`).set(key).send({ emails: ['me@example.org'], variant: 'B' });
  expect(one.body.data.emails).toHaveLength(1);
  expect((await t.http().post(`/campaigns/${id}/test`).set(key).send({ emails: ['me@example.org'], variant: 'E' })).status).toBe(422);
  await waitFor('3 test copies', () => (smtp.received.length - since >= 3 ? true : undefined));
  expect(receivedFor(since).map((m) => m.parsed.subject).sort()).toEqual(['[TEST A] June is here', '[TEST B] Ready for June, ?', '[TEST B] Ready for June, ?']);
});
