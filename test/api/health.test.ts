import net, { type AddressInfo } from 'node:net';
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

test('GET /health waits HEALTH_TIMEOUT_MS for a database that does not answer, then 503', async () => {
  // A server that takes the connection and never says a word: the database's connection hangs, as a stuck one would.
  const sockets = new Set<net.Socket>();
  const silent = net.createServer((s) => { sockets.add(s); });
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const dead = createKnex(`postgres://nobody:nothing@127.0.0.1:${(silent.address() as AddressInfo).port}/none`);
  try {
    const app = createApp(testAppDeps(dead, { healthTimeoutMs: 300 }));
    const started = performance.now();
    const res = await request(app.callback()).get('/health');
    const waited = performance.now() - started;
    expect(res.status).toBe(503);
    expect(res.body).toEqual(documented(503));
    // Its own timeout, not the default 2 s (nor the connection's).
    expect(waited).toBeGreaterThanOrEqual(290);
    expect(waited).toBeLessThan(1900);
  } finally {
    for (const s of sockets) s.destroy(); // the hanging connection fails, and the pool's wait for it ends
    await dead.destroy();
    await new Promise((r) => silent.close(r));
  }
});
