import type { ChildProcess } from 'node:child_process';
import { createEmbeddedEngine } from '../engine/embedded';
import type { Engine } from '../engine/types';
import { createLogger } from '../logging/logger';
import { addDomain } from '../projects/service';
import { bearer, createTestContext, type TestContext } from './support/app';
import { createTestDatabase } from './support/db';
import { killGroup, spawnWorker, waitFor } from './support/processes';
import { startSmtpServer, type TestSmtpServer } from './support/smtp';

/**
 * A schedule is a durable timer of the engine: the worker process is SIGKILLed after the campaign is scheduled and
 * started again; the campaign still goes out at its time, once.
 */
let smtp: TestSmtpServer;
let engine: Engine;
let t: TestContext;
const children: ChildProcess[] = [];

beforeAll(async () => {
  smtp = await startSmtpServer();
  const db = await createTestDatabase();
  engine = await createEmbeddedEngine({ databaseUrl: db.url, log: createLogger('silent') });
  t = await createTestContext({ engine, db });
  await addDomain(t.project.id, 'example.com', true);
  for (const email of ['a@example.org', 'b@example.org']) await t.http().post('/contacts').set(bearer(t.project.secretKey)).send({ email });
});
afterAll(async () => {
  for (const c of children) killGroup(c);
  await engine.close();
  await t.close();
  await smtp.close();
});

function startWorker(): ChildProcess {
  const child = spawnWorker({ DATABASE_URL: t.db.url, SMTP_URL: smtp.url, EXECUTOR_ID: 'schedule-worker' });
  children.push(child);
  return child;
}

test('schedule → worker killed and restarted → sent at the scheduled time, once', async () => {
  const key = bearer(t.project.secretKey);
  const worker = startWorker();
  const id = (await t.http().post('/campaigns').set(key).send({ name: 'Later', subject: 'Later', body: '<p>x</p>', from: 'news@example.com', audienceType: 'ALL' })).body.data.id;
  const at = new Date(Date.now() + 8000);
  expect((await t.http().post(`/campaigns/${id}/send`).set(key).send({ scheduledAt: at.toISOString() })).status).toBe(200);
  await new Promise((r) => setTimeout(r, 1500));
  killGroup(worker, 'SIGKILL');
  await new Promise((r) => setTimeout(r, 1000));
  expect((await t.http().get(`/campaigns/${id}`).set(key)).body.data.status).toBe('SCHEDULED');
  expect(smtp.received).toHaveLength(0);

  startWorker();
  const done = await waitFor('campaign SENT', async () => {
    const c = (await t.http().get(`/campaigns/${id}`).set(key)).body.data;
    return c.status === 'SENT' ? c : undefined;
  }, 60_000, 200);
  expect(new Date(done.startedAt).getTime()).toBeGreaterThanOrEqual(at.getTime() - 50);
  expect(smtp.received.map((m) => m.envelopeTo[0]).sort()).toEqual(['a@example.org', 'b@example.org']);
}, 90_000);
