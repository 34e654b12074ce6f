import request from 'supertest';
import { createApp } from '../../api/app';
import { createKnex } from '../../db/database';
import { createTestContext, testAppDeps, type TestContext } from '../support/app';

let t: TestContext;
beforeAll(async () => { t = await createTestContext(); });
afterAll(async () => { await t.close(); });

test('GET /health answers 200 {status:"ok"} without a key', async () => {
  const res = await t.http().get('/health');
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ status: 'ok' });
});

test('GET /health answers 503 when the database does not answer', async () => {
  // Port 1 on loopback: nothing listens there, so every connection is refused.
  const dead = createKnex('postgres://nobody:nothing@127.0.0.1:1/none');
  try {
    const app = createApp(testAppDeps(dead, { apiRateLimitPerMinute: 10 }));
    const res = await request(app.callback()).get('/health');
    expect(res.status).toBe(503);
    expect(res.body.status).toBe('unavailable');
  } finally {
    await dead.destroy();
  }
});
