import { addDomain } from '../../domains/rows';
import { RENDER_BUDGET } from '../../mail/render';
import { bearer, createTestContext, type TestContext } from '../support/app';
import { asPerson, person, signIn } from '../people/support';

/**
 * POST /templates/preview and POST /templates/:id/test (issue 29): a template rendered as a send renders it (the same
 * render pool and budgets, a contact's fields, the request's data), a syntax error or a passed budget answered with
 * the API's 422 naming the part; test copies queued from the template's sender, to the person signed in by default.
 * Their delivery to a real SMTP server is the console's test (test/console/templates.test.ts).
 */
let t: TestContext;
let key: { Authorization: string };
let contact: { id: string; email: string };
let member: { email: string; headers: Record<string, string> };
let viewer: Record<string, string>;

beforeAll(async () => {
  t = await createTestContext();
  key = bearer(t.project.secretKey);
  await addDomain(t.project.id, 'example.com', true);
  contact = (await t.http().post('/contacts').set(key).send({ email: 'ada@example.org', data: { firstName: 'Ada', plan: 'pro' } })).body.data;
  const m = await person(t.db.knex, { [t.project.id]: 'member' });
  member = { email: m.email, headers: asPerson(await signIn(t.server, m.email), t.project.id) };
  const v = await person(t.db.knex, { [t.project.id]: 'viewer' });
  viewer = asPerson(await signIn(t.server, v.email), t.project.id);
});
afterAll(() => t.close());

const preview = (body: object, headers: Record<string, string> = key) => t.http().post('/templates/preview').set(headers).send(body);
const template = async (extra: object = {}) => (await t.http().post('/templates').set(key)
  .send({ name: 'Welcome', subject: 'Welcome, {{ data.firstName | default: "friend" }}', body: '# Hi {{ data.firstName }}\n\nPlan: **{{ plan }}**', bodyType: 'markdown', from: 'hello@example.com', fromName: 'Acme', ...extra })).body.data as { id: string };

/** Nested loops that write nothing: only time (test/renderBudget.test.ts). */
const BUSY_LOOPS = '{% for a in (1..100000) %}{% for b in (1..100000) %}{% endfor %}{% endfor %}';
/** A loop that passes the body's cap within milliseconds. */
const FAST_BIG = `{% for a in (1..3000) %}${'x'.repeat(1000)}{% endfor %}`;

describe('POST /templates/preview', () => {
  test('renders markdown with Liquid for a chosen contact and the request\'s data', async () => {
    const res = await preview({ subject: 'Hello {{ data.firstName }}', body: '# Hi {{ data.firstName }}\n\nYour plan: **{{ plan }}** ({{ email }})', bodyType: 'markdown', contactId: contact.id, data: { plan: 'team' } });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ subject: 'Hello Ada', html: '<h1>Hi Ada</h1>\n<p>Your plan: <strong>team</strong> (<a href="mailto:ada@example.org">ada@example.org</a>)</p>\n' });
  });

  test('without a contact: a recipient with no data; values are escaped in HTML; the unsubscribe link is inert; nothing is stored', async () => {
    const before = await t.db.knex('emails').where({ project_id: t.project.id }).count('* as n').first();
    const res = await preview({ subject: 'For {{ email }}', body: '<p>{{ who }}</p><a href="{{ unsubscribeUrl }}">Unsubscribe</a>', data: { who: '<b>Grace</b>' } });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ subject: 'For recipient@example.com', html: '<p>&lt;b&gt;Grace&lt;/b&gt;</p><a href="https://example.invalid/unsubscribe">Unsubscribe</a>' });
    expect(await t.db.knex('emails').where({ project_id: t.project.id }).count('* as n').first()).toEqual(before);
  });

  test('an empty draft previews as nothing', async () => {
    const res = await preview({ subject: '', body: '' });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ subject: '', html: '' });
  });

  test.each([
    [{ subject: 'x', body: '{% for %}' }, 'body', 'invalid_template'],
    [{ subject: '{{ x | nosuch }}', body: 'x' }, 'subject', 'invalid_template'],
    [{ body: 'x' }, 'subject', undefined],
    [{ subject: 'a\nb', body: 'x' }, 'subject', undefined],
    [{ subject: 'x', body: 'x', bodyType: 'text' }, 'bodyType', undefined],
    [{ subject: 'x', body: 'x', contactId: 'nope' }, 'contactId', undefined],
    [{ subject: 'x', body: 'x', contactId: '0190a3f1-0000-7000-8000-00000000abcd' }, 'contactId', 'not_found'],
    [{ subject: 'x', body: 'x', data: [1] }, 'data', undefined],
  ])('422 naming the field %#: %j → %s', async (body, field, code) => {
    const res = await preview(body);
    expect(res.status).toBe(422);
    expect(res.body.error.errors[0]).toMatchObject({ field, ...(code ? { code } : {}) });
  });

  test('the syntax error\'s message is the API\'s, for the editor to show', async () => {
    const res = await preview({ subject: 's', body: '<p>{% if %}</p>' });
    expect(res.body.error.errors[0].message).toMatch(/^invalid template syntax: /);
    expect(res.body.error.suggestion).toBeUndefined();
  });

  test('a body over the size budget: 422 too_big with the API\'s message and the pointer to the limits', async () => {
    const res = await preview({ subject: 's', body: FAST_BIG });
    expect(res.status).toBe(422);
    expect(res.body.error.errors).toEqual([{ field: 'body', code: 'too_big', message: `the body renders to more than ${RENDER_BUDGET.htmlChars.toLocaleString('en-US')} characters` }]);
    expect(res.body.error.suggestion).toMatch(/Rendering limits/);
  });

  test('a loop past the render time: 422 too_complex', async () => {
    const res = await preview({ subject: 's', body: BUSY_LOOPS });
    expect(res.status).toBe(422);
    expect(res.body.error.errors[0]).toMatchObject({ field: 'body', code: 'too_complex' });
    expect(res.body.error.errors[0].message).toMatch(/budget|time or memory/);
  });

  test("another project's contact is not found, and a viewer may preview", async () => {
    const other = bearer((await t.newProject('preview thief')).secretKey);
    const res = await preview({ subject: '{{ email }}', body: 'x', contactId: contact.id }, other);
    expect(res.status).toBe(422);
    expect(res.body.error.errors[0]).toMatchObject({ field: 'contactId', code: 'not_found' });
    const asViewer = await preview({ subject: '{{ email }}', body: '{{ data.plan }}', contactId: contact.id }, viewer);
    expect(asViewer.status).toBe(200);
    expect(asViewer.body.data).toEqual({ subject: 'ada@example.org', html: 'pro' });
  });
});

describe('POST /templates/:id/test', () => {
  const queued = (ids: string[]) => t.db.knex('emails').where({ project_id: t.project.id }).whereIn('id', ids).orderBy('to_email')
    .select('to_email', 'subject', 'html', 'is_test', 'template_id', 'contact_id', 'from_email', 'from_name', 'status');

  test('with a key: [TEST] copies to the given addresses, rendered for the chosen contact; no contact created', async () => {
    const { id } = await template();
    const contacts = await t.db.knex('contacts').where({ project_id: t.project.id }).count('* as n').first();
    const res = await t.http().post(`/templates/${id}/test`).set(key).send({ to: ['reviewer@example.net', 'ada@example.org', 'reviewer@example.net'], contactId: contact.id, data: { plan: 'team' } });
    expect(res.status).toBe(200);
    expect(res.body.data.emails).toHaveLength(2);
    const rows = await queued(res.body.data.emails.map((e: { id: string }) => e.id));
    const message = { subject: '[TEST] Welcome, Ada', html: '<h1>Hi Ada</h1>\n<p>Plan: <strong>team</strong></p>\n', is_test: true, template_id: id, from_email: 'hello@example.com', from_name: 'Acme', status: 'QUEUED' };
    expect(rows).toEqual([
      { to_email: 'ada@example.org', contact_id: contact.id, ...message },
      { to_email: 'reviewer@example.net', contact_id: null, ...message },
    ]);
    expect(await t.db.knex('contacts').where({ project_id: t.project.id }).count('* as n').first()).toEqual(contacts);
  });

  test('without a contact: each address renders as a recipient with no data', async () => {
    const { id } = await template({ subject: 'For {{ email }}', body: 'Hello {{ data.firstName | default: "there" }}', bodyType: 'html' });
    const res = await t.http().post(`/templates/${id}/test`).set(key).send({ to: ['one@example.net', 'two@example.net'] });
    const rows = await queued(res.body.data.emails.map((e: { id: string }) => e.id));
    expect(rows.map((r) => [r.to_email, r.subject, r.html])).toEqual([['one@example.net', '[TEST] For one@example.net', 'Hello there'], ['two@example.net', '[TEST] For two@example.net', 'Hello there']]);
  });

  test('with a session and no `to`: to the person signed in; a viewer may not', async () => {
    const { id } = await template();
    const res = await t.http().post(`/templates/${id}/test`).set(member.headers).send({});
    expect(res.status).toBe(200);
    expect(res.body.data.emails).toEqual([{ email: member.email, id: expect.any(String) }]);
    const noBody = await t.http().post(`/templates/${id}/test`).set(member.headers);
    expect(noBody.status).toBe(200);
    const refused = await t.http().post(`/templates/${id}/test`).set(viewer).send({});
    expect(refused.status).toBe(403);
  });

  test('with a key, `to` is required: 422 naming `to`', async () => {
    const { id } = await template();
    const res = await t.http().post(`/templates/${id}/test`).set(key).send({});
    expect(res.status).toBe(422);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ field: 'to', code: 'required' })]);
  });

  test.each([
    [{ to: [] }, 'to'],
    [{ to: ['nope'] }, 'to.0'],
    [{ to: Array.from({ length: 11 }, (_, i) => `t${i}@example.net`) }, 'to'],
    [{ to: ['a@example.net'], contactId: '0190a3f1-0000-7000-8000-00000000abcd' }, 'contactId'],
    [{ to: ['a@example.net'], extra: 1 }, 'extra'],
  ])('422 naming the field %#: %s', async (body, field) => {
    const { id } = await template();
    const res = await t.http().post(`/templates/${id}/test`).set(key).send(body);
    expect(res.status).toBe(422);
    expect(res.body.error.errors.map((e: { field: string }) => e.field)).toContain(field);
  });

  test('the template\'s sender: none, or at an unverified domain, or outside the key\'s domains is a 422 naming `from`', async () => {
    const none = await template({ from: null });
    const noFrom = await t.http().post(`/templates/${none.id}/test`).set(key).send({ to: ['a@example.net'] });
    expect(noFrom.status).toBe(422);
    expect(noFrom.body.error.errors[0]).toMatchObject({ field: 'from', code: 'required' });
    const elsewhere = await template({ from: 'hello@unverified.example' });
    const unverified = await t.http().post(`/templates/${elsewhere.id}/test`).set(key).send({ to: ['a@example.net'] });
    expect(unverified.body.error.errors[0]).toMatchObject({ field: 'from', code: 'unverified_domain' });
    const sending = await t.http().post('/keys').set(key).send({ name: 'other domain', scope: 'sending', domains: ['example.org'] });
    const { id } = await template();
    const limited = await t.http().post(`/templates/${id}/test`).set(bearer(sending.body.data.key)).send({ to: ['a@example.net'] });
    expect(limited.status).toBe(422);
    expect(limited.body.error.errors[0]).toMatchObject({ field: 'from', code: 'domain_not_allowed' });
  });

  test('a template that passes a budget with this data: 422 with the API\'s message, nothing queued', async () => {
    const { id } = await template({ body: '{% for i in (1..n) %}{{ pad }}{% endfor %}', bodyType: 'html' });
    const before = await t.db.knex('emails').where({ project_id: t.project.id, template_id: id }).count('* as n').first();
    const res = await t.http().post(`/templates/${id}/test`).set(key).send({ to: ['a@example.net'], data: { n: 3000, pad: 'x'.repeat(1000) } });
    expect(res.status).toBe(422);
    expect(res.body.error.errors).toEqual([{ field: 'body', code: 'too_big', message: `the body renders to more than ${RENDER_BUDGET.htmlChars.toLocaleString('en-US')} characters` }]);
    expect(res.body.error.suggestion).toMatch(/Rendering limits/);
    expect(await t.db.knex('emails').where({ project_id: t.project.id, template_id: id }).count('* as n').first()).toEqual(before);
  });

  test("another project's template is a 404, whatever the body", async () => {
    const { id } = await template();
    const other = bearer((await t.newProject('test thief')).secretKey);
    expect((await t.http().post(`/templates/${id}/test`).set(other).send({ to: ['a@example.net'] })).status).toBe(404);
    expect((await t.http().post(`/templates/${id}/test`).set(other).send({ to: 'not a list' })).status).toBe(404);
    expect((await t.http().post('/templates/0190a3f1-0000-7000-8000-00000000abcd/test').set(key).send({ to: ['a@example.net'] })).status).toBe(404);
  });
});
