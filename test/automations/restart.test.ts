import { bearer } from '../support/app';
import { DAY, stepClock, waitForExecutions } from '../support/automations';
import { killGroup, waitFor } from '../support/processes';
import { workerProcesses } from '../support/workerProcesses';

/**
 * A worker process (bin/worker.ts, as `npm run worker` runs it) is SIGKILLed while executions wait, and started again
 * with the same executor id. Both kinds of wait resume: a 1-minute delay, whose engine run is live (DBOS recovers it
 * on restart), and a 2-day delay, which is parked (its row holds where the next run begins). Deadlines are the rows';
 * the clock is stepped past them rather than waited for. Each contact is mailed once per journey.
 */
const harness = workerProcesses('automation-restart');
const startWorker = () => harness.startWorker();

test('a worker killed in the middle of delays: after a restart with the same executor id, live and parked waits resume and complete', async () => {
  const { t, smtp } = harness;
  const key = bearer(t.project.secretKey);
  const template = (await t.http().post('/templates').set(key).send({ name: 'Later', subject: 'Later', body: '<p>hi</p>', from: 'hi@example.com' })).body.data.id;
  const journey = async (event: string, amount: number, unit: string) => (await t.http().post('/workflows').set(key).send({
    name: event, enabled: true, trigger: { type: 'EVENT', event },
    steps: [{ id: 'wait', type: 'DELAY', config: { amount, unit }, next: 'mail' }, { id: 'mail', type: 'SEND_EMAIL', config: { template } }],
  })).body.data.id as string;
  const long = await journey('downloaded', 2, 'days');
  const short = await journey('clicked', 1, 'minutes');
  for (const n of [1, 2, 3]) {
    expect((await t.http().post('/v1/track').set(key).send({ email: `dl${n}@example.org`, event: 'downloaded' })).status).toBe(200);
    expect((await t.http().post('/v1/track').set(key).send({ email: `dl${n}@example.org`, event: 'clicked' })).status).toBe(200);
  }

  const first = startWorker();
  await waitForExecutions(t.http, key, long, (x) => x.status === 'WAITING', 3, 60_000);
  await waitForExecutions(t.http, key, short, (x) => x.status === 'WAITING', 3, 60_000);
  // WAITING comes first, then the long waits park.
  await waitFor('the long waits parked', async () => (
    Number((await t.db.knex('automation_executions').where({ project_id: t.project.id, parked: true }).count('* as n').first())!.n) === 3 ? true : undefined));
  const parked = await t.db.knex('automation_executions').where({ project_id: t.project.id }).select('automation_id', 'parked');
  expect(parked.filter((r) => r.parked).map((r) => r.automation_id)).toEqual([long, long, long]);
  killGroup(first, 'SIGKILL');
  await new Promise((r) => first.once('exit', r));

  startWorker();
  // The wake-ups go through the outbox: to the recovered live runs, and as new runs of the parked ones.
  expect(await stepClock(t.db.knex, 2 * DAY)).toBe(6);
  for (const wf of [long, short]) {
    const xs = await waitForExecutions(t.http, key, wf, (x) => x.status === 'COMPLETED', 3, 60_000);
    expect(xs.every((x) => x.currentStepId === 'mail')).toBe(true);
  }
  await smtp.waitFor(6, 30_000);
  const to = smtp.received.map((m) => m.envelopeTo[0]).sort();
  expect(to).toEqual(['dl1@example.org', 'dl1@example.org', 'dl2@example.org', 'dl2@example.org', 'dl3@example.org', 'dl3@example.org']);
  const runs = await t.db.knex('automation_step_runs').where({ project_id: t.project.id }).groupBy('step_id').select('step_id').count('* as n');
  expect(Object.fromEntries(runs.map((r) => [r.step_id, Number(r.n)]))).toEqual({ wait: 6, mail: 6 });
}, 180_000);
