import { createDeliverer } from '../sending/delivery';
import { retryDelayMs, startDeliveryQueue, type DeliveryQueue } from '../worker/deliveryQueue';
import { createLogger } from '../logging/logger';
import { createMailer, type Mailer } from '../mail/transport';
import { createProject } from '../projects/service';
import { createSender, sendCommand } from '../sending/sender';
import { addDomain } from '../domains/rows';
import { TEST_SECRET, testAppDeps } from './support/app';
import { createTestDatabase, type TestDatabase } from './support/db';
import { startSmtpServer, type TestSmtpServer } from './support/smtp';

/**
 * The embedded engine's delivery queue (the emails table) against real PostgreSQL and a real SMTP server:
 * the shared pace across workers, transactional priority, requeue of a dead worker's claims, the retry budget.
 */
let smtp: TestSmtpServer;
let db: TestDatabase;
let mailer: Mailer;
let projectId: string;
const log = createLogger('silent');
const running: DeliveryQueue[] = [];

beforeAll(async () => {
  smtp = await startSmtpServer();
  db = await createTestDatabase();
  mailer = createMailer({ smtpUrl: smtp.url, dataDir: '/nonexistent' });
  projectId = (await createProject('queue')).id;
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((q) => q.stop()));
  await db.knex('emails').del();
});
afterAll(async () => {
  mailer.close();
  await db.close();
  await smtp.close();
});

/** When each send began (the pace governs these; arrival times add each connection's latency). */
const sendsBegun: number[] = [];

function start(executorId: string, ratePerSecond: number, extra: { leaseMs?: number; pollMs?: number } = {}): DeliveryQueue {
  const counting: Mailer = { ...mailer, send: (message) => { sendsBegun.push(performance.now()); return mailer.send(message); } };
  const deliverer = createDeliverer({ knex: db.knex, mailer: counting, log, secret: TEST_SECRET, publicUrl: 'http://herald.test' });
  const queue = startDeliveryQueue({ knex: db.knex, log, deliverer, ratePerSecond, executorId, pollMs: 20, ...extra });
  running.push(queue);
  return queue;
}

/** Stores QUEUED emails (one new contact each) as the send API leaves them; returns their ids in order. */
async function queue(tag: string, n: number, columns: Record<string, unknown> = {}): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const [contact] = await db.knex('contacts').insert({ project_id: projectId, email: `${tag}-${i}@example.org` }).returning('id');
    const [email] = await db.knex('emails').insert({
      project_id: projectId, contact_id: contact.id, from_email: 'hi@example.com', to_email: `${tag}-${i}@example.org`,
      subject: `${tag} ${i}`, html: '<p>hi</p>', ...columns,
    }).returning('id');
    ids.push(email.id);
  }
  return ids;
}

async function settled(ids: string[], timeoutMs = 30_000): Promise<Map<string, { status: string; error: string | null; attempts: number }>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await db.knex('emails').whereIn('id', ids).select('id', 'status', 'error', 'attempts');
    if (rows.every((r) => r.status !== 'QUEUED' && r.status !== 'SENDING')) return new Map(rows.map((r) => [r.id, r]));
    if (Date.now() > deadline) throw new Error(`still pending: ${rows.filter((r) => r.status === 'QUEUED' || r.status === 'SENDING').length}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const to = (tag: string) => smtp.received.filter((m) => m.envelopeTo[0]!.startsWith(`${tag}-`));

/** The most times in any window [t, t + windowMs). */
function mostInWindow(times: number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[j]! <= sorted[i]! - windowMs) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

test('two workers share one pace: at most the rate of sends begin in any one-second window, every email once', async () => {
  const ids = await queue('pace', 30);
  sendsBegun.length = 0;
  start('pace-a', 10);
  start('pace-b', 10);
  const rows = await settled(ids);
  expect([...rows.values()].every((r) => r.status === 'SENT')).toBe(true);
  const got = to('pace');
  expect(new Set(got.map((m) => m.envelopeTo[0])).size).toBe(30);
  expect(got).toHaveLength(30);
  expect(sendsBegun).toHaveLength(30);
  // Each worker times its sends with its own timers: a timer that fires late (a busy event loop) can move a send up to
  // a few ms; the pace leaves 1% slack for that. This allows 20 ms of it, so that a loaded CI machine does not flake.
  expect(mostInWindow(sendsBegun, 980)).toBeLessThanOrEqual(10);
});

test('transactional mail is claimed before campaign mail queued earlier', async () => {
  await queue('bulk', 8, { priority: 1 });
  await queue('urgent', 3);
  const before = smtp.received.length;
  start('priority', 4);
  await smtp.waitFor(before + 3);
  const first = smtp.received.slice(before, before + 3);
  expect(first.map((m) => m.envelopeTo[0]!.split('-')[0])).toEqual(['urgent', 'urgent', 'urgent']);
  await settled(await db.knex('emails').pluck('id'));
});

test('claims left by a crash are requeued: this worker’s own at once, a dead worker’s after the lease, a live one’s never', async () => {
  const [own] = await queue('own', 1, { status: 'SENDING', claimed_by: 'restarted', claimed_at: db.knex.fn.now(), attempts: 1 });
  const [dead] = await queue('dead', 1, { status: 'SENDING', claimed_by: 'gone', claimed_at: db.knex.raw("now() - interval '10 minutes'"), attempts: 1 });
  const [alive] = await queue('alive', 1, { status: 'SENDING', claimed_by: 'busy', claimed_at: db.knex.fn.now(), attempts: 1 });
  start('restarted', 100, { leaseMs: 60_000 });
  const rows = await settled([own!, dead!]);
  expect(rows.get(own!)).toMatchObject({ status: 'SENT', attempts: 2 });
  expect(rows.get(dead!)).toMatchObject({ status: 'SENT', attempts: 2 });
  expect(to('own')).toHaveLength(1);
  expect(to('dead')).toHaveLength(1);
  expect(await db.knex('emails').where('id', alive).first('status', 'claimed_by')).toEqual({ status: 'SENDING', claimed_by: 'busy' });
  expect(to('alive')).toHaveLength(0);
});

test('a transient failure on the last attempt of the retry budget makes the email FAILED, with an email.failed event', async () => {
  const [id] = await queue('budget', 1, { attempts: 9 });
  smtp.script([{ code: 421, message: 'Service not available' }]);
  start('budget', 100);
  const rows = await settled([id!]);
  expect(rows.get(id!)).toMatchObject({ status: 'FAILED', attempts: 10 });
  expect(rows.get(id!)!.error).toMatch(/^gave up after repeated transient failures: 421/);
  expect(await db.knex('events').where({ email_id: id, name: 'email.failed' })).toHaveLength(1);
});

test('the retry backoff doubles from 1 s up to 5 minutes', () => {
  expect([1, 2, 3, 4, 9, 10].map(retryDelayMs)).toEqual([1000, 2000, 4000, 8000, 256_000, 300_000]);
});

test('stop() finishes the sends in flight and records them: nothing is left SENDING', async () => {
  const ids = await queue('stop', 60);
  const q = start('stopper', 1000);
  await smtp.waitFor(smtp.received.length + 1);
  await q.stop();
  running.splice(running.indexOf(q), 1);
  const rows = await db.knex('emails').whereIn('id', ids).select('status');
  expect(rows.filter((r) => r.status === 'SENDING')).toHaveLength(0);
  const sent = rows.filter((r) => r.status === 'SENT').length;
  expect(sent).toBeGreaterThan(0);
  expect(to('stop')).toHaveLength(sent);
  start('stopper', 1000);
  await settled(ids);
  expect(new Set(to('stop').map((m) => m.envelopeTo[0])).size).toBe(60);
});

test('an idle worker hears of the emails its own process commits: a send leaves at once, not at the next poll', async () => {
  // A poll of two minutes: only the news of the commit (metrics/queued.ts) can make the worker look within the test.
  await addDomain(projectId, 'example.com', true);
  start('hearing', 1000, { pollMs: 120_000 });
  await new Promise((r) => setTimeout(r, 300)); // its first look found the queue empty (news during that look counts too)
  const sender = createSender(db.knex, testAppDeps(db.knex));
  const sent = await sender.send(sendCommand(projectId, { to: { email: 'heard-1@example.org' }, from: { email: 'hi@example.com' }, subject: 'Hi', body: '<p>hi</p>' }));
  const [email] = sent.data.emails as { email: string }[];
  await settled([email!.email], 30_000);
  expect(to('heard')).toHaveLength(1);
}, 60_000);
