import { claimWorkerIdentity, ClusterMismatchError, type WorkerIdentity } from '../../worker/workerIdentity';
import { createLogger } from '../../logging/logger';
import { createTestDatabase, type TestDatabase } from '../support/db';

/**
 * One engine, one rate (worker/workerIdentity.ts), as an operator changes the rate: stop every worker, start them all
 * with the new value. Workers started together must all start; a worker of another value must still be refused.
 */
let db: TestDatabase;
const log = createLogger('silent');
const held: WorkerIdentity[] = [];

beforeAll(async () => { db = await createTestDatabase(); });
afterEach(async () => { await Promise.all(held.splice(0).map((w) => w.release())); });
afterAll(async () => { await db.close(); });

const claim = async (id: string, rate: number) => {
  const w = await claimWorkerIdentity({ databaseUrl: db.url, log, requested: id, cluster: { engine: 'embedded', sendRatePerSecond: rate }, onLost: () => undefined });
  held.push(w);
  return w;
};
const recorded = async () => (await db.knex('delivery_pace').where({ name: 'email' }).first('engine', 'send_rate_per_second'));

test('workers started together with a new rate all start (none mistakes another for a live worker of the old rate)', async () => {
  await claim('old-1', 200);
  for (const [round, rate] of [2, 14, 5, 2, 14, 5, 2, 14].entries()) {
    // Every worker stopped, then four started at once with the new value.
    await Promise.all(held.splice(0).map((w) => w.release()));
    const started = await Promise.allSettled([1, 2, 3, 4].map((n) => claim(`w${n}`, rate)));
    expect({ round, refused: started.filter((s) => s.status === 'rejected').map((s) => String((s as PromiseRejectedResult).reason)) }).toEqual({ round, refused: [] });
    expect(await recorded()).toEqual({ engine: 'embedded', send_rate_per_second: rate });
  }
});

test('while they live, a worker of another rate is refused, naming the difference, and leaves its id free', async () => {
  await claim('w1', 14);
  await expect(claim('w9', 20)).rejects.toThrow(ClusterMismatchError);
  await expect(claim('w9', 20)).rejects.toThrow(/live: w1 .*SEND_RATE_PER_SECOND differs/);
  // The refused process took w9 under the pace row's lock: its refusal let it go with its session.
  expect((await claim('w9', 14)).executorId).toBe('w9');
  expect(await recorded()).toEqual({ engine: 'embedded', send_rate_per_second: 14 });
});
