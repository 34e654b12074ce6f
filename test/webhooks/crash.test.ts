import type { ChildProcess } from 'node:child_process';
import { createEmbeddedEngine } from '../../engine/embedded';
import type { Engine } from '../../engine/types';
import { createLogger } from '../../logging/logger';
import { bearer, createTestContext, TEST_SECRET, type TestContext } from '../support/app';
import { createTestDatabase } from '../support/db';
import { exited, killGroup, spawnWorker, waitFor } from '../support/processes';
import { startSmtpServer, type TestSmtpServer } from '../support/smtp';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhookReceiver';

/**
 * A worker process (bin/worker.ts) killed with SIGKILL while its webhook requests are in flight loses none of them:
 * its claims come back to the queue (at its restart under the same EXECUTOR_ID, or when another worker sees its
 * heartbeat stale), and every message is delivered, a resent one with the same `webhook-id`.
 */
jest.setTimeout(180_000);
const TOTAL = 20;
let t: TestContext;
let engine: Engine;
let smtp: TestSmtpServer;
let receiver: WebhookReceiver;
const children: ChildProcess[] = [];

beforeAll(async () => {
  smtp = await startSmtpServer();
  receiver = await startWebhookReceiver(() => 'hang');
  const db = await createTestDatabase();
  engine = await createEmbeddedEngine({ databaseUrl: db.url, log: createLogger('silent') });
  t = await createTestContext({ engine, db });
});
afterAll(async () => {
  for (const c of children) killGroup(c);
  await engine.close();
  await t.close();
  await receiver.close();
  await smtp.close();
});

const worker = (executorId: string) => {
  const child = spawnWorker({
    DATABASE_URL: t.db.url, SMTP_URL: smtp.url, EXECUTOR_ID: executorId, SECRET_KEY: TEST_SECRET.toString('utf8'),
    WEBHOOK_ALLOW_PRIVATE: '127.0.0.1', WEBHOOK_TIMEOUT_MS: '120000', WEBHOOK_ENDPOINT_CONCURRENCY: '8',
  });
  children.push(child);
  return child;
};

async function scenario(path: string, restartAs: (killedId: string) => string) {
  const key = bearer(t.project.secretKey);
  const hook = await t.http().post('/webhooks').set(key).send({ url: `${receiver.url}${path}`, events: ['contact.created'] });
  expect(hook.status).toBe(201);
  receiver.behave(() => 'hang');
  for (let i = 0; i < TOTAL; i++) await t.http().post('/contacts').set(key).send({ email: `${path.slice(1)}-${i}@example.org` }).expect(201);
  const killedId = `wh-crash-${path.slice(1)}`;
  const killed = worker(killedId);
  // The worker has requests open at the receiver (claimed, unanswered): kill it there.
  await waitFor('requests in flight', () => (receiver.received.filter((r) => r.path === path).length >= 8 ? true : undefined), 60_000);
  const before = await t.db.knex('webhook_deliveries').where({ endpoint_id: hook.body.data.id, status: 'DELIVERING', claimed_by: killedId }).count('* as n').first();
  expect(Number(before!.n)).toBe(8);
  killGroup(killed);
  await exited(killed);
  const seenBefore = new Set(receiver.received.filter((r) => r.path === path).map((r) => r.headers['webhook-id']));
  receiver.behave(() => ({ status: 200 }));
  const next = worker(restartAs(killedId));
  const done = await waitFor('every delivery', async () => {
    const rows = await t.db.knex('webhook_deliveries').where('endpoint_id', hook.body.data.id).select('id', 'status', 'attempts');
    return rows.length === TOTAL && rows.every((r) => r.status === 'SUCCEEDED') ? rows : undefined;
  }, 90_000);
  killGroup(next, 'SIGTERM');
  await exited(next);
  const ids = receiver.verified(hook.body.data.secret, path).map((m) => m.id);
  // Nothing lost: every message arrived; those in flight at the kill arrived again, under the same webhook-id.
  expect(new Set(ids)).toEqual(new Set(done.map((r: { id: string }) => `msg_${r.id}`)));
  for (const id of seenBefore) expect(ids.filter((x) => x === id).length).toBeGreaterThanOrEqual(2);
  expect(ids.length).toBe(TOTAL + seenBefore.size);
}

test('restarted under its EXECUTOR_ID, a killed worker resends what it had in flight, with the same webhook-ids', async () => {
  await scenario('/restart', (id) => id);
});

test('never restarted: another worker takes over the dead one\'s claims once its heartbeat is stale', async () => {
  await scenario('/takeover', (id) => `${id}-survivor`);
});
