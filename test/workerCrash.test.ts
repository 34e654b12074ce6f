import type { ChildProcess } from 'node:child_process';
import { createEmbeddedEngine } from '../engine/embedded';
import type { Engine } from '../engine/types';
import { MAX_UNRECORDED } from '../worker/deliveryQueue';
import { createLogger } from '../logging/logger';
import { addDomain } from '../domains/rows';
import { bearer, createTestContext, type TestContext } from './support/app';
import { createTestDatabase } from './support/db';
import { childEnv, exited, killGroup, runHerald, spawnWorker, waitFor } from './support/processes';
import { startSinkProcess, type SinkProcess } from './support/smtp';

/**
 * What a crashed worker costs, as an operator meets it (issue 12): the API, two worker processes (bin/worker.ts) at a
 * lifted rate, 5,000 emails, one worker SIGKILLed when 40 % have reached the SMTP server.
 * - Restarted under its EXECUTOR_ID: nothing lost, and no more duplicates than the sends it may have had between SMTP's
 *   answer and the commit of their outcomes (MAX_UNRECORDED, worker/deliveryQueue.ts).
 * - Never restarted: the other worker notices the stale heartbeat and delivers the dead one's claims within 30 s.
 * - Identity: a second process under a live EXECUTOR_ID refuses to start; without EXECUTOR_ID, each takes its own.
 * The SMTP server is a sink in a process of its own, so that the test's process (the API) does not slow the workers.
 */
jest.setTimeout(240_000); // 5,000 emails a test, alongside the rest of the suite on two cores
const TOTAL = 5000;
const RATE = '100000'; // lifted: the workers as busy as they can be, where unrecorded outcomes used to pile up
let t: TestContext;
let engine: Engine;
let sink: SinkProcess;
const children: ChildProcess[] = [];

beforeAll(async () => {
  sink = await startSinkProcess();
  const db = await createTestDatabase();
  engine = await createEmbeddedEngine({ databaseUrl: db.url, log: createLogger('silent') });
  t = await createTestContext({ engine, db });
  await addDomain(t.project.id, 'example.com', true);
});
afterAll(async () => {
  for (const c of children) killGroup(c);
  await engine.close();
  await t.close();
  sink.close();
});

const worker = (env: Record<string, string> = {}) => {
  const child = spawnWorker({ DATABASE_URL: t.db.url, SMTP_URL: sink.url, SEND_RATE_PER_SECOND: RATE, ...env });
  children.push(child);
  return child;
};
const stop = async (child: ChildProcess) => {
  killGroup(child, 'SIGTERM');
  await exited(child);
};

/** Queues `n` emails to `<tag>-<i>@example.org` through /v1/send, 50 recipients a request. */
async function queue(tag: string, n: number): Promise<void> {
  for (let batch = 0; batch < n / 50; batch++) {
    const to = Array.from({ length: 50 }, (_, i) => `${tag}-${batch * 50 + i}@example.org`);
    const res = await t.http().post('/v1/send').set(bearer(t.project.secretKey)).send({ to, from: 'hi@example.com', subject: 'Receipt', body: '<p>Thanks</p>' });
    expect(res.status).toBe(200);
  }
}

/** Deliveries of this run at the sink: how many, and how many distinct recipients. */
async function atSink(tag: string): Promise<{ total: number; distinct: number }> {
  const mine = (await sink.received()).recipients.filter((r) => r.startsWith(`${tag}-`));
  return { total: mine.length, distinct: new Set(mine).size };
}

const sentCount = async (tag: string) => Number((await t.db.knex('emails').where({ project_id: t.project.id, status: 'SENT' })
  .where('to_email', 'like', `${tag}-%`).count('* as n').first())!.n);

/** Starts two workers on `tag`'s emails and SIGKILLs the first once 40 % are at the sink; answers the survivor. */
async function killOneAt40(tag: string, killedId: string): Promise<{ survivor: ChildProcess; claimed: string[]; killedAt: number }> {
  await queue(tag, TOTAL);
  const killed = worker({ EXECUTOR_ID: killedId });
  const survivor = worker({ EXECUTOR_ID: `${killedId}-survivor` });
  await waitFor('40 % at the SMTP server', async () => ((await atSink(tag)).total >= TOTAL * 0.4 ? true : undefined), 120_000, 50);
  killGroup(killed, 'SIGKILL');
  const killedAt = Date.now();
  await exited(killed);
  const claimed = await t.db.knex('emails').where({ project_id: t.project.id, status: 'SENDING', claimed_by: killedId }).pluck('id');
  return { survivor, claimed, killedAt };
}

test('a worker SIGKILLed at 40 % and restarted under its id: 0 lost, duplicates at most its unrecorded sends', async () => {
  const { survivor, claimed } = await killOneAt40('restart', 'crash-restart');
  const restarted = worker({ EXECUTOR_ID: 'crash-restart' });
  await waitFor('every email SENT', async () => ((await sentCount('restart')) === TOTAL ? true : undefined), 120_000, 200);
  await waitFor('every email at the sink', async () => ((await atSink('restart')).distinct === TOTAL ? true : undefined), 10_000, 100);
  const { total, distinct } = await atSink('restart');
  const duplicates = total - distinct;
  console.log(`worker crash (restart): killed with ${claimed.length} claims open; ${distinct} of ${TOTAL} delivered, ${duplicates} duplicate(s), bound ${MAX_UNRECORDED}`);
  expect(distinct).toBe(TOTAL);
  expect(duplicates).toBeLessThanOrEqual(MAX_UNRECORDED);
  await Promise.all([stop(restarted), stop(survivor)]);
});

test('a worker that never comes back: the other delivers its claims within 30 s of the kill', async () => {
  const { survivor, claimed, killedAt } = await killOneAt40('gone', 'crash-gone');
  expect(claimed.length).toBeGreaterThan(0);
  await waitFor('the dead worker\'s claims SENT', async () => {
    const n = Number((await t.db.knex('emails').whereIn('id', claimed).where('status', 'SENT').count('* as n').first())!.n);
    return n === claimed.length ? true : undefined;
  }, 60_000, 200);
  const tookMs = Date.now() - killedAt;
  await waitFor('every email SENT', async () => ((await sentCount('gone')) === TOTAL ? true : undefined), 60_000, 200);
  const { total, distinct } = await atSink('gone');
  console.log(`worker crash (gone): ${claimed.length} claims of the dead worker delivered ${(tookMs / 1000).toFixed(1)} s after the kill; ${distinct} of ${TOTAL} delivered, ${total - distinct} duplicate(s)`);
  expect(tookMs).toBeLessThanOrEqual(30_000);
  expect(distinct).toBe(TOTAL);
  expect(total - distinct).toBeLessThanOrEqual(MAX_UNRECORDED);
  await stop(survivor);
});

test('an EXECUTOR_ID already live is refused, naming the variable; without one, each worker takes its own', async () => {
  const first = worker({ EXECUTOR_ID: 'taken' });
  await waitFor('the first worker registered', async () => ((await t.db.knex('workers').where('executor_id', 'taken').first()) ? true : undefined), 60_000, 100);
  const second = await runHerald('bin/worker.ts', [], childEnv({ DATABASE_URL: t.db.url, SMTP_URL: sink.url, EXECUTOR_ID: 'taken', LOG_LEVEL: 'warn' }));
  expect(second.code).toBe(2);
  expect(second.stderr).toMatch(/EXECUTOR_ID=taken is held by a live Herald worker \(host .+, pid \d+/);

  const since = new Date();
  const a = worker({ EXECUTOR_ID: '' });
  const b = worker({ EXECUTOR_ID: '' });
  const ids = await waitFor('both registered', async () => {
    const rows: { executor_id: string }[] = await t.db.knex('workers').where('started_at', '>=', since).select('executor_id');
    return rows.length === 2 ? rows.map((r) => r.executor_id).sort() : undefined;
  }, 60_000, 100);
  expect(ids).toEqual(['herald-1', 'herald-2']);
  await Promise.all([stop(first), stop(a), stop(b)]);
});
