import { addDomain } from '../../domains/rows';
import { bearer, createTestContext, type TestContext } from '../support/app';

/** A campaign's `templateId` through the API: what it makes optional, what it refuses, how PATCH sets and clears it. */
let t: TestContext;
let key: { Authorization: string };
let templateId: string;
beforeAll(async () => {
  t = await createTestContext();
  key = bearer(t.project.secretKey);
  await addDomain(t.project.id, 'example.com', true);
  templateId = (await t.http().post('/templates').set(key).send({
    name: 'Newsletter', type: 'MARKETING', bodyType: 'markdown', subject: 'News for {{ data.firstName }}', body: '# News', from: 'news@example.com', fromName: 'Acme',
  })).body.data.id;
});
afterAll(async () => { await t.close(); });

const fieldsOf = (res: { body: { error?: { errors?: { field: string; code: string }[] } } }) => (res.body.error?.errors ?? []).map((e) => `${e.field}:${e.code}`).sort();

test('with a template, subject, body and from may be left out: the record has templateId and its own parts null', async () => {
  const res = await t.http().post('/campaigns').set(key).send({ name: 'June', templateId, audienceType: 'ALL' });
  expect(res.status).toBe(201);
  expect(res.body.data).toMatchObject({ templateId, subject: null, body: null, bodyType: 'html', from: null, fromName: null, replyTo: null, status: 'DRAFT' });
  expect((await t.http().get(`/campaigns/${res.body.data.id}`).set(key)).body.data.templateId).toBe(templateId);
  // An own part beside the template is kept as the campaign's override.
  const own = await t.http().post('/campaigns').set(key).send({ name: 'June B', templateId: templateId.toUpperCase(), subject: 'Our own subject', audienceType: 'ALL' });
  expect(own.body.data).toMatchObject({ templateId, subject: 'Our own subject', body: null });
});

test('without a template, subject, body and from are required; a template of another project or none at all is not found on templateId', async () => {
  expect(fieldsOf(await t.http().post('/campaigns').set(key).send({ name: 'x', audienceType: 'ALL' }))).toEqual(['body:required', 'from:required', 'subject:required']);
  expect(fieldsOf(await t.http().post('/campaigns').set(key).send({ name: 'x', audienceType: 'ALL', templateId: null, subject: null, body: '<p>b</p>', from: 'news@example.com' })))
    .toEqual(['subject:required']);

  const other = await t.newProject('Other');
  const foreign = (await t.http().post('/templates').set(bearer(other.secretKey)).send({ name: 'Theirs', subject: 's', body: 'b', from: 'a@example.com' })).body.data.id;
  for (const id of [foreign, '01a20131-0000-7000-8000-000000000000']) {
    const res = await t.http().post('/campaigns').set(key).send({ name: 'x', audienceType: 'ALL', templateId: id });
    expect(res.status).toBe(422);
    expect(res.body.error.errors).toEqual([expect.objectContaining({ field: 'templateId', code: 'not_found' })]);
  }
  expect(fieldsOf(await t.http().post('/campaigns').set(key).send({ name: 'x', audienceType: 'ALL', templateId: 'nope' }))).toEqual(['templateId:invalid_string']);
});

test('the effective sender is checked: a template without one needs the campaign\'s, an unverified one is refused', async () => {
  const senderless = (await t.http().post('/templates').set(key).send({ name: 'No sender', subject: 's', body: '<p>b</p>' })).body.data.id;
  const missing = await t.http().post('/campaigns').set(key).send({ name: 'x', audienceType: 'ALL', templateId: senderless });
  expect(fieldsOf(missing)).toEqual(['from:required']);
  expect((await t.http().post('/campaigns').set(key).send({ name: 'x', audienceType: 'ALL', templateId: senderless, from: 'news@example.com' })).status).toBe(201);

  const unverified = (await t.http().post('/templates').set(key).send({ name: 'Elsewhere', subject: 's', body: '<p>b</p>', from: 'news@unverified.org' })).body.data.id;
  expect(fieldsOf(await t.http().post('/campaigns').set(key).send({ name: 'x', audienceType: 'ALL', templateId: unverified }))).toEqual(['from:unverified_domain']);
  // The campaign's own sender replaces the template's, and is the one checked.
  expect((await t.http().post('/campaigns').set(key).send({ name: 'x', audienceType: 'ALL', templateId: unverified, from: 'news@example.com' })).status).toBe(201);
});

test('PATCH sets, overrides, gives a part back to the template (null), and clears the template only when the campaign has its own content', async () => {
  const id = (await t.http().post('/campaigns').set(key).send({ name: 'Own', subject: 'Own subject', body: '<p>Own</p>', from: 'news@example.com', audienceType: 'ALL' })).body.data.id;
  const patch = (body: object) => t.http().patch(`/campaigns/${id}`).set(key).send(body);

  expect((await patch({ templateId, body: null })).body.data).toMatchObject({ templateId, subject: 'Own subject', body: null, from: 'news@example.com' });
  expect((await patch({ subject: null, from: null })).body.data).toMatchObject({ templateId, subject: null, body: null, from: null });
  // Without the template nothing would give the subject, body or sender.
  const refused = await patch({ templateId: null });
  expect(refused.status).toBe(422);
  expect(fieldsOf(refused)).toEqual(['body:required', 'from:required', 'subject:required']);
  const cleared = await patch({ templateId: null, subject: 'Back to ours', body: '<p>Ours</p>', from: 'news@example.com' });
  expect(cleared.status).toBe(200);
  expect(cleared.body.data).toMatchObject({ templateId: null, subject: 'Back to ours', body: '<p>Ours</p>', from: 'news@example.com' });
  expect((await patch({ templateId: '01a20131-0000-7000-8000-000000000000' })).body.error.errors).toEqual([expect.objectContaining({ field: 'templateId', code: 'not_found' })]);
});

test('a send checks the template as it is then', async () => {
  const id = (await t.http().post('/campaigns').set(key).send({ name: 'Later', templateId, audienceType: 'ALL' })).body.data.id;
  const moving = (await t.http().post('/templates').set(key).send({ name: 'Moving', subject: 's', body: '<p>b</p>', from: 'news@example.com' })).body.data.id;
  await t.http().patch(`/campaigns/${id}`).set(key).send({ templateId: moving });
  await t.http().patch(`/templates/${moving}`).set(key).send({ from: 'news@unverified.org' });
  const res = await t.http().post(`/campaigns/${id}/send`).set(key).send({});
  expect(res.status).toBe(422);
  expect(fieldsOf(res)).toEqual(['from:unverified_domain']);
  expect((await t.http().get(`/campaigns/${id}`).set(key)).body.data.status).toBe('DRAFT');
});
