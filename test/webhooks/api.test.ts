import { bearer, createTestContext, type TestContext } from '../support/app';
import { WEBHOOK_EVENT_TYPES } from '../../webhooks/types';

/** The /webhooks routes: CRUD, the secret shown once, rotation, the error contract (404, 422) and tenancy. */
let t: TestContext;
let key: { Authorization: string };
beforeAll(async () => {
  t = await createTestContext();
  key = bearer(t.project.secretKey);
});
afterAll(async () => { await t.close(); });

const create = (body: unknown, k = key) => t.http().post('/webhooks').set(k).send(body as object);

test('create answers the whsec_ secret once; get, list, patch and delete never show it', async () => {
  const res = await create({ url: 'https://hooks.example.com/herald', events: ['email.sent', 'contact.created', 'email.sent'] });
  expect(res.status).toBe(201);
  const hook = res.body.data;
  expect(hook).toMatchObject({ url: 'https://hooks.example.com/herald', events: ['email.sent', 'contact.created'], enabled: true, status: 'healthy', failingSince: null });
  expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
  // Stored sealed: the secret's text is nowhere in the row.
  const stored = await t.db.knex('webhook_endpoints').where('id', hook.id).first();
  expect(Buffer.from(stored.secret).toString('latin1')).not.toContain(hook.secret.slice(6));

  const got = await t.http().get(`/webhooks/${hook.id}`).set(key);
  expect(got.status).toBe(200);
  expect(got.body.data.secret).toBeUndefined();
  expect(got.body.data).toMatchObject({ id: hook.id, events: ['email.sent', 'contact.created'] });

  const list = await t.http().get('/webhooks?limit=10').set(key);
  expect(list.status).toBe(200);
  expect(list.body.data.items.map((h: { id: string }) => h.id)).toContain(hook.id);
  expect(JSON.stringify(list.body)).not.toContain(hook.secret);

  const patched = await t.http().patch(`/webhooks/${hook.id}`).set(key).send({ enabled: false, events: ['campaign.sent'] });
  expect(patched.status).toBe(200);
  expect(patched.body.data).toMatchObject({ enabled: false, events: ['campaign.sent'], url: 'https://hooks.example.com/herald' });
  expect(patched.body.data.secret).toBeUndefined();

  const rotated = await t.http().post(`/webhooks/${hook.id}/rotate-secret`).set(key);
  expect(rotated.status).toBe(200);
  expect(rotated.body.data.secret).toMatch(/^whsec_/);
  expect(rotated.body.data.secret).not.toBe(hook.secret);

  expect((await t.http().delete(`/webhooks/${hook.id}`).set(key)).status).toBe(204);
  expect((await t.http().get(`/webhooks/${hook.id}`).set(key)).status).toBe(404);
  expect((await t.http().delete(`/webhooks/${hook.id}`).set(key)).status).toBe(404);
});

test('every event type of the one list is accepted', async () => {
  const res = await create({ url: 'http://hooks.example.com/all', events: [...WEBHOOK_EVENT_TYPES] });
  expect(res.status).toBe(201);
  expect(res.body.data.events).toEqual([...WEBHOOK_EVENT_TYPES]);
});

test.each([
  ['an unknown event type', { url: 'https://hooks.example.com/', events: ['email.sent', 'email.exploded'] }, 'events.1'],
  ['no event types', { url: 'https://hooks.example.com/', events: [] }, 'events'],
  ['a URL that is not one', { url: 'not a url', events: ['email.sent'] }, 'url'],
  ['a non-HTTP scheme', { url: 'ftp://hooks.example.com/', events: ['email.sent'] }, 'url'],
  ['credentials in the URL', { url: 'https://user:pw@hooks.example.com/', events: ['email.sent'] }, 'url'],
  ['a CR/LF in the URL', { url: 'https://hooks.example.com/\r\nX-Evil: 1', events: ['email.sent'] }, 'url'],
  ['no URL', { events: ['email.sent'] }, 'url'],
  ['an unknown field', { url: 'https://hooks.example.com/', events: ['email.sent'], secret: 'whsec_mine' }, 'secret'],
])('%s is a 422 naming the field', async (_what, body, field) => {
  const res = await create(body);
  expect(res.status).toBe(422);
  expect(res.body.success).toBe(false);
  expect(res.body.error.errors.map((e: { field: string }) => e.field)).toContain(field);
});

test('a PATCH with a bad event type or nothing to change is a 422', async () => {
  const { body } = await create({ url: 'https://hooks.example.com/p', events: ['email.sent'] });
  const bad = await t.http().patch(`/webhooks/${body.data.id}`).set(key).send({ events: ['nope'] });
  expect(bad.status).toBe(422);
  expect(bad.body.error.errors[0].field).toBe('events.0');
  expect((await t.http().patch(`/webhooks/${body.data.id}`).set(key).send({})).status).toBe(422);
});

test('another project\'s endpoint is a 404 on every route, and is not listed', async () => {
  const other = await t.newProject('Webhook tenant');
  const otherKey = bearer(other.secretKey);
  const { body } = await create({ url: 'https://hooks.example.com/mine', events: ['email.sent'] });
  const id = body.data.id as string;
  const delivery = '0190a0a0-0000-7000-8000-000000000000';
  // A delivery of its own: its page has rows for its project (which answer without looking the endpoint up), none for the other.
  await t.db.knex('webhook_deliveries').insert({ project_id: t.project.id, endpoint_id: id, type: 'email.sent', payload: {} });
  expect((await t.http().get(`/webhooks/${id}/deliveries`).set(key)).body.data.items).toHaveLength(1);
  for (const [method, path] of [
    ['get', `/webhooks/${id}`], ['patch', `/webhooks/${id}`], ['delete', `/webhooks/${id}`], ['post', `/webhooks/${id}/rotate-secret`],
    ['get', `/webhooks/${id}/deliveries`], ['post', `/webhooks/${id}/deliveries/${delivery}/redeliver`],
  ] as const) {
    const res = await t.http()[method](path).set(otherKey).send(method === 'patch' ? { enabled: false } : {});
    expect([method, path, res.status]).toEqual([method, path, 404]);
    expect(res.body.error.code).toBe('NOT_FOUND');
  }
  const list = await t.http().get('/webhooks').set(otherKey);
  expect(list.body.data.items.map((h: { id: string }) => h.id)).not.toContain(id);
  // Still there, untouched, for its own project.
  expect((await t.http().get(`/webhooks/${id}`).set(key)).body.data.enabled).toBe(true);
});

test('ids that are not UUIDs are 404s; an unknown delivery is a 404', async () => {
  expect((await t.http().get('/webhooks/not-an-id').set(key)).status).toBe(404);
  const { body } = await create({ url: 'https://hooks.example.com/d', events: ['email.sent'] });
  const res = await t.http().post(`/webhooks/${body.data.id}/deliveries/0190a0a0-0000-7000-8000-000000000000/redeliver`).set(key);
  expect(res.status).toBe(404);
  const deliveries = await t.http().get(`/webhooks/${body.data.id}/deliveries`).set(key);
  expect(deliveries.status).toBe(200);
  expect(deliveries.body.data).toMatchObject({ items: [], total: 0, hasMore: false });
});

test('lists are cursor pages', async () => {
  const p = await t.newProject('Webhook pages');
  const k = bearer(p.secretKey);
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push((await create({ url: `https://hooks.example.com/${i}`, events: ['email.sent'] }, k)).body.data.id);
  const first = await t.http().get('/webhooks?limit=2').set(k);
  expect(first.body.data).toMatchObject({ total: 3, hasMore: true });
  expect(first.body.data.items.map((h: { id: string }) => h.id)).toEqual([ids[2], ids[1]]);
  const second = await t.http().get(`/webhooks?limit=2&cursor=${first.body.data.nextCursor}`).set(k);
  expect(second.body.data.items.map((h: { id: string }) => h.id)).toEqual([ids[0]]);
  expect(second.body.data.hasMore).toBe(false);
});

test('deliveries: the total is exact up to 1,000 (totalExact), and past it says "at least 1,000"', async () => {
  const { body } = await create({ url: 'https://hooks.example.com/many', events: ['email.sent'] });
  const id = body.data.id as string;
  const add = (n: number) => t.db.knex.raw(
    `INSERT INTO webhook_deliveries (project_id, endpoint_id, type, payload) SELECT ?::uuid, ?::uuid, 'email.sent', '{}'::jsonb FROM generate_series(1, ?)`,
    [t.project.id, id, n]);
  await add(3);
  expect((await t.http().get(`/webhooks/${id}/deliveries`).set(key)).body.data).toMatchObject({ total: 3, totalExact: true });
  await add(998); // 1,001 in all, one INSERT
  const page = (await t.http().get(`/webhooks/${id}/deliveries?limit=5`).set(key)).body.data;
  expect(page).toMatchObject({ total: 1000, totalExact: false, hasMore: true });
  expect(page.items).toHaveLength(5);
});
