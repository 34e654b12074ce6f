import type { Response } from 'supertest';
import { bearer, createTestContext, type TestContext } from '../support/app';

let t: TestContext;
let key: { Authorization: string };
beforeAll(async () => {
  t = await createTestContext();
  key = bearer(t.project.secretKey);
});
afterAll(async () => { await t.close(); });

const full = {
  name: 'Welcome', description: 'First mail', subject: 'Welcome {{ name }}', body: '<p>Hi {{ name }}</p>',
  from: 'Hello@Example.com', fromName: 'Team', replyTo: 'help@example.com', type: 'MARKETING',
};

test('create (201) with every field, get, patch, delete (204), then 404', async () => {
  const created = await t.http().post('/templates').set(key).send(full);
  expect(created.status).toBe(201);
  expect(created.body.data).toEqual({
    id: expect.any(String), name: 'Welcome', description: 'First mail', subject: 'Welcome {{ name }}', body: '<p>Hi {{ name }}</p>',
    from: 'hello@example.com', fromName: 'Team', replyTo: 'help@example.com', type: 'MARKETING', bodyType: 'html',
    createdAt: expect.any(String), updatedAt: expect.any(String),
  });
  const id = created.body.data.id;
  expect((await t.http().get(`/templates/${id}`).set(key)).body.data).toEqual(created.body.data);

  const patched = await t.http().patch(`/templates/${id}`).set(key).send({ subject: 'New {{ x }}', fromName: null, type: 'TRANSACTIONAL' });
  expect(patched.status).toBe(200);
  expect(patched.body.data).toMatchObject({ subject: 'New {{ x }}', fromName: null, type: 'TRANSACTIONAL', body: '<p>Hi {{ name }}</p>' });
  expect(new Date(patched.body.data.updatedAt).getTime()).toBeGreaterThanOrEqual(new Date(created.body.data.updatedAt).getTime());

  expect((await t.http().delete(`/templates/${id}`).set(key)).status).toBe(204);
  expect((await t.http().get(`/templates/${id}`).set(key)).status).toBe(404);
  expect((await t.http().patch(`/templates/${id}`).set(key).send({ name: 'x' })).status).toBe(404);
  expect((await t.http().delete(`/templates/${id}`).set(key)).status).toBe(404);
});

test('bodyType: html by default, or markdown (checked as markdown at create and patch); anything else is 422', async () => {
  const md = await t.http().post('/templates').set(key).send({ name: 'Md', subject: 's', body: '# Hi {{ name }}', bodyType: 'markdown' });
  expect(md.status).toBe(201);
  expect(md.body.data).toMatchObject({ bodyType: 'markdown', type: 'TRANSACTIONAL' });
  const patched = await t.http().patch(`/templates/${md.body.data.id}`).set(key).send({ bodyType: 'html' });
  expect(patched.body.data.bodyType).toBe('html');
  for (const bodyType of ['text', 'HTML', 1]) {
    const bad = await t.http().post('/templates').set(key).send({ name: 'Bad', subject: 's', body: 'b', bodyType });
    expect(bad.status).toBe(422);
    expect(bad.body.error.errors[0].field).toBe('bodyType');
  }
});

test('defaults: type TRANSACTIONAL, optional fields null', async () => {
  const res = await t.http().post('/templates').set(key).send({ name: 'Min', subject: 's', body: 'b' });
  expect(res.body.data).toMatchObject({ type: 'TRANSACTIONAL', description: null, from: null, fromName: null, replyTo: null });
});

test.each([
  [{ ...full, name: undefined }, 'name'],
  [{ ...full, subject: 'a\nb' }, 'subject'],
  [{ ...full, fromName: 'a\r\nBcc: x@y.z' }, 'fromName'],
  [{ ...full, from: 'nope' }, 'from'],
  [{ ...full, replyTo: 'nope' }, 'replyTo'],
  [{ ...full, type: 'SPAM' }, 'type'],
  [{ ...full, body: '{% for %}' }, 'body'],
  [{ ...full, subject: '{{ x | nosuch }}' }, 'subject'],
  [{ ...full, extra: 1 }, 'extra'],
])('invalid create %# → 422 on %s', async (body, field) => {
  const res = await t.http().post('/templates').set(key).send(body);
  expect(res.status).toBe(422);
  expect(res.body.error.errors.map((e: { field: string }) => e.field)).toContain(field);
});

test('a patch that would break the syntax is refused and changes nothing', async () => {
  const { body } = await t.http().post('/templates').set(key).send(full);
  const res = await t.http().patch(`/templates/${body.data.id}`).set(key).send({ body: '{% if %}' });
  expect(res.status).toBe(422);
  expect(res.body.error.errors[0].field).toBe('body');
  expect((await t.http().get(`/templates/${body.data.id}`).set(key)).body.data.body).toBe(full.body);
});

test('list: newest first, keyset pages, type filter, total', async () => {
  const p = await t.newProject('templates list');
  const k = bearer(p.secretKey);
  for (let i = 0; i < 7; i++) await t.http().post('/templates').set(k).send({ name: `T${i}`, subject: 's', body: 'b', type: i % 2 ? 'MARKETING' : 'TRANSACTIONAL' });
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const res: Response = await t.http().get(`/templates?limit=3${cursor ? `&cursor=${cursor}` : ''}`).set(k);
    expect(res.body.data.total).toBe(7);
    seen.push(...res.body.data.items.map((x: { name: string }) => x.name));
    cursor = res.body.data.nextCursor;
  } while (cursor);
  expect(seen).toEqual(['T6', 'T5', 'T4', 'T3', 'T2', 'T1', 'T0']);
  const marketing = await t.http().get('/templates?type=MARKETING').set(k);
  expect(marketing.body.data.items.map((x: { name: string }) => x.name)).toEqual(['T5', 'T3', 'T1']);
  expect((await t.http().get('/templates?type=nope').set(k)).status).toBe(400);
});

test("another project's template is 404 everywhere", async () => {
  const { body } = await t.http().post('/templates').set(key).send(full);
  const other = bearer((await t.newProject('tpl thief')).secretKey);
  expect((await t.http().get(`/templates/${body.data.id}`).set(other)).status).toBe(404);
  expect((await t.http().patch(`/templates/${body.data.id}`).set(other).send({ name: 'x' })).status).toBe(404);
  expect((await t.http().delete(`/templates/${body.data.id}`).set(other)).status).toBe(404);
  expect((await t.http().get(`/templates/${body.data.id}`).set(key)).status).toBe(200);
});
