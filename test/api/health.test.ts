import request from 'supertest';
import { createApp } from '../../api/app';
import { openApiDocument } from '../../api/openapi/document';
import { createKnex } from '../../db/database';
import { createTestContext, testAppDeps, type TestContext } from '../support/app';

let t: TestContext;
beforeAll(async () => { t = await createTestContext(); });
afterAll(async () => { await t.close(); });

test('GET /health answers 200 {status:"ok"} without a key', async () => {
  const res = await t.http().get('/health');
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ status: 'ok' });
  expect(res.body).toEqual(documented(200));
});

/** The example the reference shows (GET /openapi.json, /docs) for an answer of GET /health. */
const documented = (status: number) => ((openApiDocument().paths as Record<string, any>)['/health'].get.responses[String(status)].content['application/json'].example); // eslint-disable-line @typescript-eslint/no-explicit-any

test('GET /health answers 503 when the database does not answer', async () => {
  // Port 1 on loopback: nothing listens there, so every connection is refused.
  const dead = createKnex('postgres://nobody:nothing@127.0.0.1:1/none');
  try {
    const app = createApp(testAppDeps(dead, { apiRateLimitPerMinute: 10 }));
    const res = await request(app.callback()).get('/health');
    expect(res.status).toBe(503);
    expect(res.body.status).toBe('unavailable');
    expect(res.body).toEqual(documented(503));
  } finally {
    await dead.destroy();
  }
});
