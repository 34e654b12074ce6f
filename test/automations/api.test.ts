import { recordEvents } from '../../db/queries/events';
import { bearer, createTestContext, type TestContext } from '../support/app';

/**
 * The /workflows API without an engine: validation (422 naming the step), tenancy (404), lists, the template in use
 * (409), and the trigger decision made inside the event write (the execution rows: the outbox).
 */
let t: TestContext;
let key: { Authorization: string };
let templateId: string;

beforeAll(async () => {
  t = await createTestContext();
  key = bearer(t.project.secretKey);
  templateId = (await t.http().post('/templates').set(key).send({ name: 'T', subject: 's', body: 'b', from: 'a@example.com' })).body.data.id;
});
afterAll(async () => { await t.close(); });

const create = (body: object, k = key) => t.http().post('/workflows').set(k).send(body);
const valid = (extra: object = {}) => ({
  name: 'Onboarding', trigger: { type: 'EVENT', event: 'signed_up' },
  steps: [
    { id: 'welcome', type: 'SEND_EMAIL', config: { template: templateId }, next: 'wait' },
    { id: 'wait', type: 'DELAY', config: { amount: 2, unit: 'days' }, next: 'check' },
    { id: 'check', type: 'CONDITION', config: { filter: { logic: 'AND', groups: [{ filters: [{ field: 'event.purchased', operator: 'notTriggered' }] }] } }, branches: { yes: 'hook', no: null } },
    { id: 'hook', type: 'WEBHOOK', config: { url: 'https://hooks.example.com/x' } },
  ],
  ...extra,
});

test('create → 201 with the stored definition; get, list (keyset, enabled filter), patch, delete → 204', async () => {
  const res = await create(valid({ description: 'first steps' }));
  expect(res.status).toBe(201);
  const w = res.body.data;
  expect(w).toMatchObject({ name: 'Onboarding', description: 'first steps', enabled: false, allowReentry: false, trigger: { type: 'EVENT', event: 'signed_up' } });
  expect(w.steps).toHaveLength(4);
  expect((await t.http().get(`/workflows/${w.id}`).set(key)).body.data).toEqual(w);

  const second = (await create(valid({ name: 'Second', enabled: true }))).body.data;
  const page1 = (await t.http().get('/workflows?limit=1').set(key)).body.data;
  expect(page1).toMatchObject({ total: 2, hasMore: true });
  expect(page1.items[0].id).toBe(second.id);
  const page2 = (await t.http().get(`/workflows?limit=1&cursor=${page1.nextCursor}`).set(key)).body.data;
  expect(page2.items[0].id).toBe(w.id);
  expect(page2.hasMore).toBe(false);
  expect((await t.http().get('/workflows?enabled=true').set(key)).body.data.items.map((x: { id: string }) => x.id)).toEqual([second.id]);

  const patched = await t.http().patch(`/workflows/${w.id}`).set(key).send({ name: 'Renamed', allowReentry: true });
  expect(patched.status).toBe(200);
  expect(patched.body.data).toMatchObject({ name: 'Renamed', allowReentry: true, enabled: false });
  expect((await t.http().delete(`/workflows/${w.id}`).set(key)).status).toBe(204);
  expect((await t.http().get(`/workflows/${w.id}`).set(key)).status).toBe(404);
  await t.http().delete(`/workflows/${second.id}`).set(key);
});

test.each([
  ['an unknown step type', { steps: [{ id: 'a', type: 'TELEPORT', config: {} }] }, 'steps.0.type'],
  ['a bad DELAY', { steps: [{ id: 'a', type: 'DELAY', config: { amount: 0, unit: 'days' } }] }, 'steps.0.config.amount'],
  ['a dangling next', { steps: [{ id: 'a', type: 'DELAY', config: { amount: 1, unit: 'days' }, next: 'nowhere' }] }, 'steps.0.next'],
  ['a dangling branch', { steps: [{ id: 'a', type: 'CONDITION', config: { filter: { logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'exists' }] }] } }, branches: { yes: null, no: 'b' } }] }, 'steps.0.branches.no'],
  ['an unreachable step', { steps: [{ id: 'a', type: 'EXIT' }, { id: 'b', type: 'EXIT' }] }, 'steps.1'],
  ['a cycle without a wait', { steps: [{ id: 'a', type: 'UPDATE_CONTACT', config: { data: { x: 1 } }, next: 'b' }, { id: 'b', type: 'UPDATE_CONTACT', config: { data: { y: 1 } }, next: 'a' }] }, 'steps.0'],
  ['a bad filter', { steps: [{ id: 'a', type: 'CONDITION', config: { filter: { logic: 'AND', groups: [{ filters: [{ field: 'nope', operator: 'equals', value: 1 }] }] } }, branches: { yes: null, no: null } }] }, 'steps.0.config.filter.groups.0.filters.0.field'],
  ['a CR/LF webhook header', { steps: [{ id: 'a', type: 'WEBHOOK', config: { url: 'https://x.example.com', headers: { 'X-A': 'v\r\nInjected: 1' } } }] }, 'steps.0.config.headers.X-A'],
  ['a template of another project', { steps: [{ id: 'a', type: 'SEND_EMAIL', config: { template: '0190a5a0-0000-7000-8000-000000000000' } }] }, 'steps.0.config.template'],
])('%s → 422 naming the step', async (_name, patch, field) => {
  const res = await create(valid(patch));
  expect(res.status).toBe(422);
  expect(res.body.error.code).toBe('VALIDATION_ERROR');
  expect(res.body.error.errors.map((e: { field: string }) => e.field)).toContain(field);
});

test('a cycle through a DELAY is a recurring journey: allowed', async () => {
  const res = await create(valid({ steps: [
    { id: 'mail', type: 'SEND_EMAIL', config: { template: templateId }, next: 'wait' },
    { id: 'wait', type: 'DELAY', config: { amount: 7, unit: 'days' }, next: 'mail' },
  ] }));
  expect(res.status).toBe(201);
  await t.http().delete(`/workflows/${res.body.data.id}`).set(key);
});

test('patch validates the new steps the same way; a template of another project is 422 there too', async () => {
  const other = await t.newProject();
  const foreignTemplate = (await t.http().post('/templates').set(bearer(other.secretKey)).send({ name: 'F', subject: 's', body: 'b' })).body.data.id;
  const w = (await create(valid())).body.data;
  const res = await t.http().patch(`/workflows/${w.id}`).set(key).send({ steps: [{ id: 'x', type: 'SEND_EMAIL', config: { template: foreignTemplate } }] });
  expect(res.status).toBe(422);
  expect(res.body.error.errors[0].field).toBe('steps.0.config.template');
  expect((await t.http().patch(`/workflows/${w.id}`).set(key).send({})).status).toBe(422);
  await t.http().delete(`/workflows/${w.id}`).set(key);
});

test('tenancy: another project\'s workflow is a 404 on every route; its list does not show ours', async () => {
  const w = (await create(valid())).body.data;
  const other = await t.newProject();
  const k = bearer(other.secretKey);
  expect((await t.http().get(`/workflows/${w.id}`).set(k)).status).toBe(404);
  expect((await t.http().patch(`/workflows/${w.id}`).set(k).send({ name: 'x' })).status).toBe(404);
  expect((await t.http().delete(`/workflows/${w.id}`).set(k)).status).toBe(404);
  expect((await t.http().get(`/workflows/${w.id}/executions`).set(k)).status).toBe(404);
  expect((await t.http().get('/workflows').set(k)).body.data.total).toBe(0);
  expect((await t.http().get('/workflows/not-a-uuid').set(key)).status).toBe(404);
  await t.http().delete(`/workflows/${w.id}`).set(key);
});

test('a template used by an enabled workflow cannot be deleted (409); once the workflow is disabled it can', async () => {
  const tpl = (await t.http().post('/templates').set(key).send({ name: 'Used', subject: 's', body: 'b' })).body.data.id;
  const w = (await create(valid({ enabled: true, steps: [{ id: 'm', type: 'SEND_EMAIL', config: { template: tpl } }] }))).body.data;
  const res = await t.http().delete(`/templates/${tpl}`).set(key);
  expect(res.status).toBe(409);
  expect(res.body.error.message).toContain('Onboarding');
  await t.http().patch(`/workflows/${w.id}`).set(key).send({ enabled: false });
  expect((await t.http().delete(`/templates/${tpl}`).set(key)).status).toBe(204);
  // Enabling it again with its template gone: 422 at the step, not a journey that fails at its first email.
  const again = await t.http().patch(`/workflows/${w.id}`).set(key).send({ enabled: true });
  expect(again.status).toBe(422);
  expect(again.body.error.errors[0].field).toBe('steps.0.config.template');
  await t.http().delete(`/workflows/${w.id}`).set(key);
});

test('the trigger is decided in the event write: one execution row per listening enabled workflow, one at a time per contact unless reentry', async () => {
  const listen = async (extra: object) => (await create(valid({ enabled: true, trigger: { type: 'EVENT', event: 'ordered' }, ...extra }))).body.data.id as string;
  const once = await listen({});
  const reentrant = await listen({ allowReentry: true });
  const disabled = await listen({ enabled: false });
  const other = await listen({ trigger: { type: 'EVENT', event: 'other' } });
  const track = () => t.http().post('/v1/track').set(bearer(t.project.publicKey)).send({ email: 'buyer@example.org', event: 'ordered' });
  expect((await track()).status).toBe(200);
  expect((await track()).status).toBe(200);
  const counts = async (id: string) => (await t.http().get(`/workflows/${id}/executions`).set(key)).body.data.total;
  expect(await counts(once)).toBe(1);
  expect(await counts(reentrant)).toBe(2);
  expect(await counts(disabled)).toBe(0);
  expect(await counts(other)).toBe(0);
  const rows = await t.db.knex('automation_executions').where({ project_id: t.project.id, automation_id: reentrant });
  expect(rows.every((r) => r.outbox === 'START' && r.status === 'RUNNING')).toBe(true);
  // Executions list filters.
  const contactId = rows[0].contact_id;
  expect((await t.http().get(`/workflows/${once}/executions?status=RUNNING&contactId=${contactId}`).set(key)).body.data.total).toBe(1);
  expect((await t.http().get(`/workflows/${once}/executions?status=COMPLETED`).set(key)).body.data.total).toBe(0);
  expect((await t.http().get(`/workflows/${once}/executions?status=BOGUS`).set(key)).status).toBe(400);

  // A rolled-back event write starts nothing: the trigger and the event share one transaction.
  await t.db.knex.transaction(async (trx) => {
    await recordEvents(trx, t.project.id, [{ name: 'ordered', contactId }]);
    await trx.rollback();
  }).catch(() => undefined);
  expect(await counts(reentrant)).toBe(2);

  // Disabling cancels them, in the same transaction as the update.
  await t.http().patch(`/workflows/${reentrant}`).set(key).send({ enabled: false });
  const after = await t.db.knex('automation_executions').where({ project_id: t.project.id, automation_id: reentrant });
  expect(after.map((r) => [r.status, r.outbox])).toEqual([['CANCELLED', null], ['CANCELLED', null]]);
  for (const id of [once, reentrant, disabled, other]) await t.http().delete(`/workflows/${id}`).set(key);
});

test('executions: the total is exact up to 1,000 (totalExact), and past it says "at least 1,000"', async () => {
  const wf = (await create(valid())).body.data.id as string;
  expect((await t.http().get(`/workflows/${wf}/executions`).set(key)).body.data).toMatchObject({ total: 0, totalExact: true });
  // 1,001 contacts and an execution each, one INSERT apiece: the point is the count, not how they came.
  await t.db.knex.raw(
    `WITH c AS (INSERT INTO contacts (project_id, email) SELECT ?::uuid, 'x' || g || '@cap.example' FROM generate_series(1, 1001) g RETURNING id)
     INSERT INTO automation_executions (project_id, automation_id, contact_id, status, exclusive) SELECT ?::uuid, ?::uuid, id, 'COMPLETED', false FROM c`,
    [t.project.id, t.project.id, wf]);
  const page = (await t.http().get(`/workflows/${wf}/executions?limit=5`).set(key)).body.data;
  expect(page).toMatchObject({ total: 1000, totalExact: false, hasMore: true });
  expect(page.items).toHaveLength(5);
  expect((await t.http().get(`/workflows/${wf}/executions?status=FAILED`).set(key)).body.data).toMatchObject({ total: 0, totalExact: true });
});
