import { bearer, createTestContext, type TestContext } from '../support/app';

let t: TestContext;
beforeAll(async () => { t = await createTestContext(); });
afterAll(async () => { await t.close(); });

test('health answers ok', async () => {
  const res = await t.http().get('/health');
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ status: 'ok' });
});

test('creates a contact', async () => {
  const res = await t.http().post('/contacts').set(bearer(t.project.secretKey)).send({ email: 'a@example.com' });
  expect(res.status).toBe(201);
});
