import { addDomain } from '../domains/rows';
import type { TestContext } from './support/app';
import { waitFor } from './support/processes';
import type { TestSmtpServer } from './support/smtp';
import { startEndToEnd, type EndToEnd } from './support/endToEnd';

/**
 * Campaigns written from a template (issue 29), end to end on the embedded engine to a real SMTP server: the
 * template's parts apply where the campaign has none, its Markdown is rendered, edits to it apply until the campaign
 * starts sending, then the campaign keeps what it took; tests go out as the campaign will; a template in use is not
 * deleted.
 */
let smtp: TestSmtpServer;
let t: TestContext;
let key: { Authorization: string };
let e2e: EndToEnd;

beforeAll(async () => {
  ({ smtp, t, key } = e2e = await startEndToEnd());
  await addDomain(t.project.id, 'mail.example.net', true);
  for (const [email, name] of [['ada@example.org', 'Ada'], ['grace@example.org', 'Grace']]) {
    await t.http().post('/contacts').set(key).send({ email, subscribed: true, data: { firstName: name } });
  }
  await t.http().post('/contacts').set(key).send({ email: 'gone@example.org', subscribed: false });
});
afterAll(() => e2e.close());

const template = async (extra: object = {}) => (await t.http().post('/templates').set(key).send({
  name: 'Monthly', type: 'MARKETING', bodyType: 'markdown', subject: 'Monthly news for {{ data.firstName }}',
  body: '# Hello {{ data.firstName }}\n\nWhat is **new** this month.\n\n- faster sends\n- [the changelog](https://example.com/changelog)',
  from: 'news@example.com', fromName: 'Acme News', replyTo: 'help@example.com', ...extra,
})).body.data.id as string;

const campaign = async (body: object) => {
  const res = await t.http().post('/campaigns').set(key).send({ name: 'From a template', audienceType: 'ALL', ...body });
  expect(res.status).toBe(201);
  return res.body.data as { id: string } & Record<string, unknown>;
};

async function sent(id: string) {
  return waitFor('campaign SENT', async () => {
    const res = await t.http().get(`/campaigns/${id}`).set(key);
    return res.body.data.status === 'SENT' ? res.body.data : undefined;
  }, 30_000, 100);
}

const to = (address: string, since: number) => smtp.received.slice(since).find((m) => m.envelopeTo[0] === address)!.parsed;

test('sent from a Markdown template: its subject, rendered body, sender and reply-to; the unsubscribe link and bulk headers are the campaign\'s', async () => {
  const templateId = await template();
  const c = await campaign({ templateId });
  expect(c).toMatchObject({ templateId, subject: null, body: null, bodyType: 'html', from: null, fromName: null, replyTo: null, status: 'DRAFT' });
  const before = smtp.received.length;
  expect((await t.http().post(`/campaigns/${c.id}/send`).set(key).send({})).status).toBe(200);
  const done = await sent(c.id);
  expect(done.totalRecipients).toBe(2);
  await smtp.waitFor(before + 2);
  expect(smtp.received.slice(before).map((m) => m.envelopeTo[0]).sort()).toEqual(['ada@example.org', 'grace@example.org']);

  const mail = to('ada@example.org', before);
  expect(mail.subject).toBe('Monthly news for Ada');
  expect(mail.html).toContain('<h1>Hello Ada</h1>');
  expect(mail.html).toContain('<strong>new</strong>');
  expect(mail.html).toContain('<li>faster sends</li>');
  expect(mail.html).toMatch(/Unsubscribe<\/a>/); // the campaign's footer: the template has no {{ unsubscribeUrl }}
  expect(mail.from?.value[0]).toEqual({ name: 'Acme News', address: 'news@example.com' });
  expect(mail.replyTo?.value[0]?.address).toBe('help@example.com');
  expect(mail.headers.get('precedence')).toBe('bulk');
  const raw = smtp.received.slice(before).find((m) => m.envelopeTo[0] === 'ada@example.org')!.raw.toString().replace(/\r?\n[ \t]+/g, ' ');
  expect(raw).toMatch(/^List-Unsubscribe: <http:\/\/herald\.test\/unsubscribe\/[^>]+>\r?$/m);

  // Once it started, the campaign holds what it took from the template: the record says what was sent.
  expect(done).toMatchObject({ templateId, subject: 'Monthly news for {{ data.firstName }}', bodyType: 'markdown', from: 'news@example.com', fromName: 'Acme News', replyTo: 'help@example.com' });
  const rows = await t.db.knex('emails').where({ project_id: t.project.id, campaign_id: c.id }).select('template_id');
  expect(rows.map((r) => r.template_id)).toEqual([templateId, templateId]);
});

test('the campaign\'s own subject and sender override the template\'s; an own sender goes without the template\'s name', async () => {
  const templateId = await template();
  const c = await campaign({ templateId, subject: 'Special for {{ data.firstName }}', from: 'hello@mail.example.net' });
  const before = smtp.received.length;
  await t.http().post(`/campaigns/${c.id}/send`).set(key).send({});
  await sent(c.id);
  await smtp.waitFor(before + 2);
  const mail = to('grace@example.org', before);
  expect(mail.subject).toBe('Special for Grace');
  expect(mail.html).toContain('<h1>Hello Grace</h1>');
  expect(mail.from?.value[0]).toEqual({ name: '', address: 'hello@mail.example.net' });
  expect(mail.replyTo?.value[0]?.address).toBe('help@example.com');
});

test('edits to the template apply until the campaign starts sending (a scheduled one too), not after', async () => {
  const templateId = await template({ bodyType: 'html', body: '<p>First draft for {{ data.firstName }}</p>' });
  const c = await campaign({ templateId, audienceType: 'FILTERED', audienceFilter: { logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'equals', value: 'ada@example.org' }] }] } });
  const at = new Date(Date.now() + 2500);
  expect((await t.http().post(`/campaigns/${c.id}/send`).set(key).send({ scheduledAt: at.toISOString() })).body.data.status).toBe('SCHEDULED');
  expect((await t.http().patch(`/templates/${templateId}`).set(key).send({ body: '<p>Final words for {{ data.firstName }}</p>' })).status).toBe(200);
  const before = smtp.received.length;
  await sent(c.id);
  await smtp.waitFor(before + 1);
  expect(to('ada@example.org', before).html).toContain('<p>Final words for Ada</p>');
  // Sent: the template may change (or go) without changing what the campaign was.
  await t.http().patch(`/templates/${templateId}`).set(key).send({ body: '<p>Later</p>' });
  expect((await t.http().get(`/campaigns/${c.id}`).set(key)).body.data).toMatchObject({ body: '<p>Final words for {{ data.firstName }}</p>', bodyType: 'html' });
  expect((await t.http().delete(`/templates/${templateId}`).set(key)).status).toBe(204);
  expect((await t.http().get(`/campaigns/${c.id}`).set(key)).body.data.templateId).toBe(templateId);
  // Its test copies come from what it sent, the template gone or not.
  const later = smtp.received.length;
  expect((await t.http().post(`/campaigns/${c.id}/test`).set(key).send({ emails: ['ada@example.org'] })).status).toBe(200);
  await smtp.waitFor(later + 1);
  expect(to('ada@example.org', later).html).toContain('<p>Final words for Ada</p>');
});

test('a test send of a draft goes out as the template renders now, [TEST] in the subject; the draft is unchanged', async () => {
  const templateId = await template();
  const c = await campaign({ templateId });
  const before = smtp.received.length;
  const res = await t.http().post(`/campaigns/${c.id}/test`).set(key).send({ emails: ['ada@example.org', 'reviewer@example.net'] });
  expect(res.status).toBe(200);
  await smtp.waitFor(before + 2);
  const mine = to('ada@example.org', before);
  expect(mine.subject).toBe('[TEST] Monthly news for Ada');
  expect(mine.html).toContain('<h1>Hello Ada</h1>');
  expect(mine.from?.value[0]).toEqual({ name: 'Acme News', address: 'news@example.com' });
  expect(to('reviewer@example.net', before).subject).toBe('[TEST] Monthly news for');
  const tests = await t.db.knex('emails').where({ project_id: t.project.id, campaign_id: c.id, is_test: true }).select('template_id');
  expect(tests.map((r) => r.template_id)).toEqual([templateId, templateId]);
  expect((await t.http().get(`/campaigns/${c.id}`).set(key)).body.data).toMatchObject({ status: 'DRAFT', subject: null, body: null });
});

test('a template used by a draft, scheduled or sending campaign is not deleted: 409 naming them', async () => {
  const templateId = await template();
  const draft = await campaign({ name: 'Draft one', templateId });
  const scheduled = await campaign({ name: 'Scheduled one', templateId });
  await t.http().post(`/campaigns/${scheduled.id}/send`).set(key).send({ scheduledAt: new Date(Date.now() + 3600_000).toISOString() });
  const refused = await t.http().delete(`/templates/${templateId}`).set(key);
  expect(refused.status).toBe(409);
  expect(refused.body.error.code).toBe('CONFLICT');
  expect(refused.body.error.message).toBe('Template is used by campaigns not sent yet: Draft one, Scheduled one');
  expect((await t.http().get(`/templates/${templateId}`).set(key)).status).toBe(200);

  // SENDING counts too (a campaign between its start and its end).
  await t.http().post(`/campaigns/${scheduled.id}/cancel`).set(key);
  await t.http().patch(`/campaigns/${draft.id}`).set(key).send({ templateId: null, subject: 'Own', body: '<p>Own</p>', from: 'news@example.com' });
  const sending = await campaign({ name: 'Sending one', templateId });
  await t.db.knex('campaigns').where({ id: sending.id }).update({ status: 'SENDING' });
  expect((await t.http().delete(`/templates/${templateId}`).set(key)).body.error.message).toBe('Template is used by campaigns not sent yet: Sending one');
  await t.db.knex('campaigns').where({ id: sending.id }).update({ status: 'CANCELLED' });
  // Cancelled and own-content campaigns no longer hold it.
  expect((await t.http().delete(`/templates/${templateId}`).set(key)).status).toBe(204);
});

test('a template whose sender is no longer verified when the campaign starts: the campaign FAILS saying so, nothing is sent', async () => {
  const templateId = await template({ bodyType: 'html', body: '<p>Hi</p>' });
  const c = await campaign({ templateId });
  await t.http().post(`/campaigns/${c.id}/send`).set(key).send({ scheduledAt: new Date(Date.now() + 1500).toISOString() });
  await t.http().patch(`/templates/${templateId}`).set(key).send({ from: 'news@unverified.org' });
  const failed = await waitFor('campaign FAILED', async () => {
    const res = await t.http().get(`/campaigns/${c.id}`).set(key);
    return res.body.data.status === 'FAILED' ? res.body.data : undefined;
  }, 30_000, 100);
  expect(failed.error).toContain('news@unverified.org is not at a verified domain of this project');
  expect(await t.db.knex('emails').where({ project_id: t.project.id, campaign_id: c.id })).toHaveLength(0);
});
