import { bearer } from './support/app';
import { killGroup, waitFor } from './support/processes';
import { workerProcesses } from './support/workerProcesses';

/**
 * A worker process is killed (SIGKILL: no shutdown at all) in the middle of 200 queued sends and started again
 * with the same executor id. Every email must be delivered; the only duplicates allowed are the deliveries that
 * were in flight at the kill (sent by SMTP, not yet recorded), which are resent with the same Message-ID.
 */
const TOTAL = 200;
const harness = workerProcesses('durability-worker');
const startWorker = () => harness.startWorker({ SEND_RATE_PER_SECOND: '40' });

const statusCounts = async () => Object.fromEntries(
  (await harness.t.db.knex('emails').where({ project_id: harness.t.project.id }).groupBy('status').select('status').count('* as n')).map((r) => [r.status, Number(r.n)]),
);

test(`${TOTAL} queued sends survive a SIGKILLed worker: all delivered, duplicates only from deliveries in flight`, async () => {
  for (let batch = 0; batch < TOTAL / 50; batch++) {
    const to = Array.from({ length: 50 }, (_, i) => `r${batch * 50 + i}@example.org`);
    const res = await harness.t.http().post('/v1/send').set(bearer(harness.t.project.secretKey)).send({ to, from: 'hi@example.com', subject: 'Durable', body: '<p>x</p>' });
    expect(res.status).toBe(200);
  }
  expect(await statusCounts()).toEqual({ QUEUED: TOTAL });

  const first = startWorker();
  await waitFor('a third of the mail delivered', () => (harness.smtp.received.length >= TOTAL / 3 ? true : undefined), 60_000);
  killGroup(first, 'SIGKILL');
  await new Promise((r) => first.once('exit', r));
  const deliveredAtKill = harness.smtp.received.length;
  const atKill = await statusCounts();
  const inFlight = atKill.SENDING ?? 0;
  expect(deliveredAtKill).toBeLessThan(TOTAL);

  const second = startWorker();
  await waitFor('every email SENT', async () => ((await statusCounts()).SENT === TOTAL ? true : undefined), 90_000, 200);
  const byRecipient = new Map<string, number>();
  for (const m of harness.smtp.received) byRecipient.set(m.envelopeTo[0]!, (byRecipient.get(m.envelopeTo[0]!) ?? 0) + 1);
  const duplicates = harness.smtp.received.length - byRecipient.size;
  console.log(`durability: killed after ${deliveredAtKill}/${TOTAL} delivered with ${inFlight} in flight; after restart ${byRecipient.size} distinct recipients, ${duplicates} duplicate(s)`);

  expect(byRecipient.size).toBe(TOTAL);
  expect(duplicates).toBeLessThanOrEqual(inFlight);
  // A resent duplicate carries the same Message-ID, so the receiver can drop it.
  const ids = new Set(harness.smtp.received.map((m) => m.parsed.messageId));
  expect(ids.size).toBe(TOTAL);

  killGroup(second, 'SIGTERM');
  const code = await new Promise((r) => second.once('exit', (c) => r(c)));
  expect([0, null]).toContain(code);
});
