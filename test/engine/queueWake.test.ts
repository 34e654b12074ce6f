import { queuePollAvailable, ENQUEUED_CHANNEL } from '../../engine/queueWake';
import { startEndToEnd, type EndToEnd } from '../support/endToEnd';
import { waitFor } from '../support/processes';

/**
 * An enqueued workflow starts when its enqueue is announced, not at its queue's next poll (engine/queueWake.ts): with
 * DBOS's queue timers at ten minutes, a campaign started through the API is delivered within seconds, also after the
 * worker's listening connection was cut.
 */
let e2e: EndToEnd;

beforeAll(async () => {
  e2e = await startEndToEnd({ queuePollMs: 600_000 });
  for (const email of ['a@example.org', 'b@example.org', 'c@example.org']) {
    expect((await e2e.t.http().post('/contacts').set(e2e.key).send({ email })).status).toBe(201);
  }
});
afterAll(() => e2e.close());

async function sendCampaign(name: string): Promise<string> {
  const created = await e2e.t.http().post('/campaigns').set(e2e.key)
    .send({ name, subject: name, body: '<p>Hi</p>', from: 'news@example.com', audienceType: 'ALL' });
  expect(created.status).toBe(201);
  expect((await e2e.t.http().post(`/campaigns/${created.body.data.id}/send`).set(e2e.key).send({})).status).toBe(200);
  return created.body.data.id;
}

const subjects = (subject: string) => e2e.smtp.received.filter((m) => m.parsed.subject === subject).length;

test('the DBOS this Herald pins still has the queue poll the wake-ups use', () => {
  expect(queuePollAvailable()).toBe(true);
});

test('a campaign starts at its announcement, with the queue timers at ten minutes', async () => {
  const started = Date.now();
  await sendCampaign('Announced');
  await waitFor('three messages', () => (subjects('Announced') === 3 ? true : undefined), 15_000);
  expect(Date.now() - started).toBeLessThan(15_000);
});

test('the worker listens again after its connection is cut, and the next start is heard', async () => {
  const cut = await e2e.t.db.knex.raw(
    `SELECT pid, pg_terminate_backend(pid) AS cut FROM pg_stat_activity WHERE datname = current_database() AND query = ?`, [`LISTEN ${ENQUEUED_CHANNEL}`]);
  expect(cut.rows).toEqual([{ pid: expect.any(Number), cut: true }]);
  // Listening again takes a second; a start announced before that waits for the timers (ten minutes here). The LISTEN
  // is in effect once it has committed: its connection idle after it, not while it runs (a loaded run announced the
  // start inside that window once, and the campaign waited for the timers). And it is a new connection's: the one cut
  // may still be listed, idle, until its backend has exited (a loaded CI run took it for the new one and announced the
  // start before the worker listened again).
  await waitFor('listening again', async () => ((await e2e.t.db.knex.raw(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query = ? AND state = 'idle' AND pid <> ?",
    [`LISTEN ${ENQUEUED_CHANNEL}`, cut.rows[0].pid])).rows[0].n === 1 ? true : undefined), 10_000, 100);
  await sendCampaign('Heard again');
  await waitFor('three messages', () => (subjects('Heard again') === 3 ? true : undefined), 15_000);
});
