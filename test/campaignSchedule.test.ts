import type { ChildProcess } from 'node:child_process';
import { bearer } from './support/app';
import { exited, killGroup, waitFor } from './support/processes';
import { workerProcesses } from './support/workerProcesses';

/**
 * A schedule is a durable timer of the engine: the worker process is SIGKILLed after the campaign is scheduled and
 * started again; the campaign still goes out at its time, once.
 */
const harness = workerProcesses('schedule-worker');
const startWorker = () => harness.startWorker();
const stopped = async (worker: ChildProcess) => {
  killGroup(worker, 'SIGKILL');
  await exited(worker);
};
beforeAll(async () => {
  for (const email of ['a@example.org', 'b@example.org']) await harness.t.http().post('/contacts').set(bearer(harness.t.project.secretKey)).send({ email });
});

test('schedule → worker killed and restarted → sent at the scheduled time, once', async () => {
  const key = bearer(harness.t.project.secretKey);
  const worker = startWorker();
  const id = (await harness.t.http().post('/campaigns').set(key).send({ name: 'Later', subject: 'Later', body: '<p>x</p>', from: 'news@example.com', audienceType: 'ALL' })).body.data.id;
  const at = new Date(Date.now() + 8000);
  expect((await harness.t.http().post(`/campaigns/${id}/send`).set(key).send({ scheduledAt: at.toISOString() })).status).toBe(200);
  await new Promise((r) => setTimeout(r, 1500));
  killGroup(worker, 'SIGKILL');
  await new Promise((r) => setTimeout(r, 1000));
  expect((await harness.t.http().get(`/campaigns/${id}`).set(key)).body.data.status).toBe('SCHEDULED');
  expect(harness.smtp.received).toHaveLength(0);

  const restarted = startWorker();
  const done = await waitFor('campaign SENT', async () => {
    const c = (await harness.t.http().get(`/campaigns/${id}`).set(key)).body.data;
    return c.status === 'SENT' ? c : undefined;
  }, 60_000, 200);
  expect(new Date(done.startedAt).getTime()).toBeGreaterThanOrEqual(at.getTime() - 50);
  expect(harness.smtp.received.map((m) => m.envelopeTo[0]).sort()).toEqual(['a@example.org', 'b@example.org']);
  // Gone before the next test starts its own worker under the same executor id (a live holder would refuse it).
  await stopped(restarted);
}, 90_000);

test('an A/B campaign\'s wait: the worker killed and restarted during it → the wait goes on, and the winner chosen then goes to the rest, each contact once', async () => {
  const key = bearer(harness.t.project.secretKey);
  for (let i = 0; i < 6; i++) await harness.t.http().post('/contacts').set(key).send({ email: `ab-${i}@example.org`, data: { ab: true } });
  const worker = startWorker();
  const id = (await harness.t.http().post('/campaigns').set(key).send({
    name: 'AB', subject: 'News', body: '<p>x</p>', from: 'news@example.com', audienceType: 'FILTERED',
    audienceFilter: { logic: 'AND', groups: [{ filters: [{ field: 'data.ab', operator: 'equals', value: true }] }] },
    variants: [{ subject: 'News A' }, { subject: 'News B' }], abTest: { samplePercent: 50, waitMinutes: 600, metric: 'opens' },
  })).body.data.id;
  const since = harness.smtp.received.length;
  expect((await harness.t.http().post(`/campaigns/${id}/send`).set(key).send({})).status).toBe(200);
  const waiting = await waitFor('the wait', async () => {
    const c = (await harness.t.http().get(`/campaigns/${id}`).set(key)).body.data;
    return c.abTest.phase === 'WAITING' ? c : undefined;
  }, 60_000, 200);
  await stopped(worker);
  startWorker();
  // The restarted worker recovers the waiting workflow (same executor id): its wait's end is the row's, unchanged.
  await new Promise((r) => setTimeout(r, 3000));
  const after = (await harness.t.http().get(`/campaigns/${id}`).set(key)).body.data;
  expect(after).toMatchObject({ status: 'SENDING', abTest: { phase: 'WAITING', waitEndsAt: waiting.abTest.waitEndsAt } });
  expect(harness.smtp.received.length - since).toBe(3);

  expect((await harness.t.http().post(`/campaigns/${id}/winner`).set(key).send({ variant: 'A' })).status).toBe(200);
  const done = await waitFor('campaign SENT', async () => {
    const c = (await harness.t.http().get(`/campaigns/${id}`).set(key)).body.data;
    return c.status === 'SENT' ? c : undefined;
  }, 60_000, 200);
  expect(done.abTest).toMatchObject({ phase: 'DECIDED', winner: 'A' });
  const mails = harness.smtp.received.slice(since);
  expect(mails).toHaveLength(6);
  expect(new Set(mails.map((m) => m.envelopeTo[0])).size).toBe(6);
  expect(mails.slice(3).every((m) => m.parsed.subject === 'News A')).toBe(true);
}, 120_000);
