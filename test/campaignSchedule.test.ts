import { bearer } from './support/app';
import { killGroup, waitFor } from './support/processes';
import { workerProcesses } from './support/workerProcesses';

/**
 * A schedule is a durable timer of the engine: the worker process is SIGKILLed after the campaign is scheduled and
 * started again; the campaign still goes out at its time, once.
 */
const harness = workerProcesses('schedule-worker');
const startWorker = () => harness.startWorker();
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

  startWorker();
  const done = await waitFor('campaign SENT', async () => {
    const c = (await harness.t.http().get(`/campaigns/${id}`).set(key)).body.data;
    return c.status === 'SENT' ? c : undefined;
  }, 60_000, 200);
  expect(new Date(done.startedAt).getTime()).toBeGreaterThanOrEqual(at.getTime() - 50);
  expect(harness.smtp.received.map((m) => m.envelopeTo[0]).sort()).toEqual(['a@example.org', 'b@example.org']);
}, 90_000);
