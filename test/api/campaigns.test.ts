import { addDomain } from '../../domains/rows';
import { bearer, createTestContext, type TestContext } from '../support/app';

let t: TestContext;
let key: { Authorization: string };
let segmentId: string;
beforeAll(async () => {
  t = await createTestContext();
  key = bearer(t.project.secretKey);
  await addDomain(t.project.id, 'example.com', true);
  segmentId = (await t.http().post('/segments').set(key).send({ name: 'VIP', type: 'STATIC' })).body.data.id;
});
afterAll(async () => { await t.close(); });

const base = { name: 'Spring sale', subject: 'Hi {{ data.firstName }}', body: '<p>Sale!</p>', from: 'news@example.com', audienceType: 'ALL' };

test('create answers 201 with the spec fields (type MARKETING, status DRAFT)', async () => {
  const res = await t.http().post('/campaigns').set(key).send({ ...base, description: 'd', fromName: 'News', replyTo: 'reply@example.com' });
  expect(res.status).toBe(201);
  expect(res.body.data).toMatchObject({
    id: expect.any(String), name: 'Spring sale', subject: 'Hi {{ data.firstName }}', type: 'MARKETING', status: 'DRAFT', scheduledAt: null,
    from: 'news@example.com', fromName: 'News', replyTo: 'reply@example.com', audienceType: 'ALL', segmentId: null, audienceFilter: null,
  });
});

test('audience types: SEGMENT needs segmentId, FILTERED needs audienceFilter, each refuses the other', async () => {
  expect((await t.http().post('/campaigns').set(key).send({ ...base, audienceType: 'SEGMENT', segmentId })).status).toBe(201);
  const filter = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] };
  expect((await t.http().post('/campaigns').set(key).send({ ...base, audienceType: 'FILTERED', audienceFilter: filter })).status).toBe(201);
  const cases: [object, string, string][] = [
    [{ ...base, audienceType: 'SEGMENT' }, 'segmentId', 'required'],
    [{ ...base, audienceType: 'FILTERED' }, 'audienceFilter', 'required'],
    [{ ...base, audienceType: 'ALL', segmentId }, 'segmentId', 'unrecognized_key'],
    [{ ...base, audienceType: 'SEGMENT', segmentId: '01a20131-0000-7000-8000-000000000000' }, 'segmentId', 'not_found'],
    [{ ...base, audienceType: 'FILTERED', audienceFilter: { logic: 'AND', groups: [{ filters: [{ field: 'data.x', operator: 'triggered' }] }] } }, 'audienceFilter.groups.0.filters.0.operator', 'invalid_operator'],
    [{ ...base, audienceType: 'EVERYONE' }, 'audienceType', 'invalid_enum_value'],
    [{ ...base, from: 'news@unverified.org' }, 'from', 'unverified_domain'],
    [{ ...base, subject: '{% if %}' }, 'subject', 'invalid_template'],
    [{ ...base, subject: 'a\r\nBcc: x@y.z' }, 'subject', 'invalid_string'],
    [{ ...base, name: undefined }, 'name', 'required'],
  ];
  for (const [body, field, code] of cases) {
    const res = await t.http().post('/campaigns').set(key).send(body);
    expect({ status: res.status, error: res.body.error?.errors?.find((e: { field: string }) => e.field === field)?.code }).toEqual({ status: 422, error: code });
  }
});

test('patch only in DRAFT; changing the audience type drops the old audience', async () => {
  const { body } = await t.http().post('/campaigns').set(key).send({ ...base, audienceType: 'SEGMENT', segmentId });
  const id = body.data.id;
  const patched = await t.http().patch(`/campaigns/${id}`).set(key).send({ name: 'Renamed', audienceType: 'ALL' });
  expect(patched.status).toBe(200);
  expect(patched.body.data).toMatchObject({ name: 'Renamed', audienceType: 'ALL', segmentId: null });
  expect((await t.http().patch(`/campaigns/${id}`).set(key).send({ from: 'x@unverified.org' })).status).toBe(422);
  await t.db.knex('campaigns').where({ id }).update({ status: 'SCHEDULED' });
  const refused = await t.http().patch(`/campaigns/${id}`).set(key).send({ name: 'Late' });
  expect(refused.status).toBe(409);
  expect(refused.body.error.code).toBe('CONFLICT');
});

test('delete only DRAFT or CANCELLED', async () => {
  for (const [status, expected] of [['DRAFT', 204], ['CANCELLED', 204], ['SCHEDULED', 409], ['SENDING', 409], ['SENT', 409], ['FAILED', 409]] as const) {
    const { body } = await t.http().post('/campaigns').set(key).send(base);
    await t.db.knex('campaigns').where({ id: body.data.id }).update({ status });
    expect([status, (await t.http().delete(`/campaigns/${body.data.id}`).set(key)).status]).toEqual([status, expected]);
  }
});

test('list with status filter; tenancy', async () => {
  const p = await t.newProject('campaign list');
  const k = bearer(p.secretKey);
  await addDomain(p.id, 'example.com', true);
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push((await t.http().post('/campaigns').set(k).send({ ...base, name: `C${i}` })).body.data.id);
  await t.db.knex('campaigns').where({ id: ids[1] }).update({ status: 'SENT' });
  const all = await t.http().get('/campaigns?limit=2').set(k);
  expect(all.body.data).toMatchObject({ total: 3, hasMore: true });
  expect(all.body.data.items.map((c: { name: string }) => c.name)).toEqual(['C2', 'C1']);
  const sent = await t.http().get('/campaigns?status=SENT').set(k);
  expect(sent.body.data.items.map((c: { name: string }) => c.name)).toEqual(['C1']);
  for (const method of ['get', 'patch', 'delete'] as const) {
    expect((await t.http()[method](`/campaigns/${ids[0]}`).set(key).send({ name: 'x' })).status).toBe(404);
  }
});
