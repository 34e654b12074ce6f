import type { ChildProcess } from 'node:child_process';
import { createEmbeddedEngine } from '../../engine/embedded';
import type { Engine } from '../../engine/types';
import { createLogger } from '../../logging/logger';
import { addDomain } from '../../projects/service';
import { bearer, createTestContext, type TestContext } from '../support/app';
import { DAY, stepClock, waitForExecutions } from '../support/automations';
import { createTestDatabase } from '../support/db';
import { killGroup, spawnWorker } from '../support/processes';
import { startSmtpServer, type TestSmtpServer } from '../support/smtp';

/**
 * A worker process (bin/worker.ts, as `npm run worker` runs it) is SIGKILLed while executions sit in a 2-day DELAY,
 * and started again with the same executor id: DBOS recovers the workflows, and the delay resumes where it was
 * (its deadline is the row's; the clock is stepped past it rather than waited for). Each contact is mailed once.
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
});
afterAll(async () => {
  for (const c of children) killGroup(c);
  await engine.close();
  await t.close();
  await smtp.close();
});

function startWorker(): ChildProcess {
  const child = spawnWorker({ DATABASE_URL: t.db.url, SMTP_URL: smtp.url, EXECUTOR_ID: 'automation-restart' });
  children.push(child);
  return child;
}

test('a worker killed in the middle of a 2-day delay: after a restart with the same executor id, the delay resumes and completes', async () => {
  const key = bearer(t.project.secretKey);
  const template = (await t.http().post('/templates').set(key).send({ name: 'Later', subject: 'Two days later', body: '<p>hi</p>', from: 'hi@example.com' })).body.data.id;
  const wf = (await t.http().post('/workflows').set(key).send({
    name: 'Follow-up', enabled: true, trigger: { type: 'EVENT', event: 'downloaded' },
    steps: [{ id: 'wait', type: 'DELAY', config: { amount: 2, unit: 'days' }, next: 'mail' }, { id: 'mail', type: 'SEND_EMAIL', config: { template } }],
  })).body.data.id;
  for (const n of [1, 2, 3]) {
    expect((await t.http().post('/v1/track').set(key).send({ email: `dl${n}@example.org`, event: 'downloaded' })).status).toBe(200);
  }

  const first = startWorker();
  await waitForExecutions(t.http, key, wf, (x) => x.status === 'WAITING', 3, 60_000);
  killGroup(first, 'SIGKILL');
  await new Promise((r) => first.once('exit', r));

  const second = startWorker();
  // The wake-up is queued for the workflows wherever they are: DBOS recovers them when the worker launches.
  expect(await stepClock(t.db.knex, 2 * DAY)).toBe(3);
  const xs = await waitForExecutions(t.http, key, wf, (x) => x.status === 'COMPLETED', 3, 60_000);
  expect(xs.every((x) => x.currentStepId === 'mail')).toBe(true);
  await smtp.waitFor(3, 30_000);
  expect(smtp.received.map((m) => m.envelopeTo[0]).sort()).toEqual(['dl1@example.org', 'dl2@example.org', 'dl3@example.org']);
  const runs = await t.db.knex('automation_step_runs').where({ project_id: t.project.id }).groupBy('step_id').select('step_id').count('* as n');
  expect(Object.fromEntries(runs.map((r) => [r.step_id, Number(r.n)]))).toEqual({ wait: 3, mail: 3 });

  killGroup(second, 'SIGTERM');
  await new Promise((r) => second.once('exit', r));
}, 180_000);
