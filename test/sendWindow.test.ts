import { sharedSendWindow } from '../worker/sendWindow';
import { createTestDatabase, type TestDatabase } from './support/db';

/**
 * The shared send window (worker/sendWindow.ts) against a real PostgreSQL: two workers' gates, sends of uneven length
 * (5 to 185 ms, as SMTP sends are), never more than the limit begun within any second; and a worker's restart frees
 * the room its dead sends held.
 */
let db: TestDatabase;
beforeAll(async () => { db = await createTestDatabase(); });
afterAll(async () => { await db.close(); });

const worstWindow = (times: number[]) => {
  const at = [...times].sort((a, b) => a - b);
  let worst = 0;
  for (let i = 0, j = 0; i < at.length; i++) {
    while (at[j]! <= at[i]! - 1000) j++;
    worst = Math.max(worst, i - j + 1);
  }
  return worst;
};

test('two workers asking at twice the rate: at most 14 sends begin in any second, and the window fills again as sends complete', async () => {
  const a = sharedSendWindow(db.knex, 14, 'worker-a');
  const b = sharedSendWindow(db.knex, 14, 'worker-b');
  const starts: number[] = [];
  await Promise.all(Array.from({ length: 40 }, async (_, i) => {
    await new Promise((r) => setTimeout(r, i * 35)); // 28 a second asked for
    const gate = i % 2 ? a : b;
    const ticket = await gate.acquire();
    starts.push(Date.now());
    await new Promise((r) => setTimeout(r, 5 + (i % 7) * 30));
    await gate.release(ticket);
  }));
  expect(starts).toHaveLength(40);
  expect(worstWindow(starts)).toBeLessThanOrEqual(14);
  expect(worstWindow(starts)).toBeGreaterThanOrEqual(13); // the room is used, not merely rationed
}, 30_000);

test("a worker that died with sends open: its restart (same executor id) drops them, so they hold no room", async () => {
  const dead = sharedSendWindow(db.knex, 2, 'worker-c');
  await dead.acquire();
  await dead.acquire(); // both in flight forever: the worker was SIGKILLed
  const restarted = sharedSendWindow(db.knex, 2, 'worker-c');
  const ticket = await restarted.acquire(); // would wait a minute for the stale sends otherwise
  await restarted.release(ticket);
  expect(await db.knex('delivery_window').where({ holder: 'worker-c' }).whereNull('completed_at').count('* as n').first()).toEqual({ n: 0 });
}, 30_000);

test('freed room goes to the send that waited first, whichever worker looks first when it frees', async () => {
  const a = sharedSendWindow(db.knex, 1, 'worker-d');
  const b = sharedSendWindow(db.knex, 1, 'worker-e');
  const c = sharedSendWindow(db.knex, 1, 'worker-f');
  await a.release(await a.acquire()); // the window (1 a second) is full for a second
  const order: string[] = [];
  const first = b.acquire().then(async (ticket) => { order.push('waited first'); await b.release(ticket); });
  await new Promise((r) => setTimeout(r, 50));
  // c looks again at the same moment as b when the room frees (both wait until the oldest send leaves the window).
  const second = c.acquire().then(async (ticket) => { order.push('asked later'); await c.release(ticket); });
  await Promise.all([first, second]);
  expect(order).toEqual(['waited first', 'asked later']);
}, 30_000);

test("a send with room keeps off while another worker's earlier waiter is in line, and not once that waiter is stale", async () => {
  await db.knex('delivery_window').delete();
  const c = sharedSendWindow(db.knex, 2, 'worker-g');
  // Another worker's send, waiting since before c asked, and looking again every 100 ms as a live worker does.
  const [{ id }] = await db.knex('delivery_window').insert({ holder: 'worker-h', waiting: true, seen_at: db.knex.fn.now() }).returning('id');
  const alive = setInterval(() => { void db.knex('delivery_window').where({ id }).update({ seen_at: db.knex.fn.now() }); }, 100);
  let got = false;
  const acquired = c.acquire().then((ticket) => { got = true; return ticket; });
  await new Promise((r) => setTimeout(r, 400));
  expect(got).toBe(false); // room for two, none taken: it is the waiter's turn
  // The waiter stops looking (its worker died or stalled): after a second it is passed by, and pruned.
  clearInterval(alive);
  await c.release(await acquired);
  expect(got).toBe(true);
  expect(await db.knex('delivery_window').where({ id }).first()).toBeUndefined();
}, 30_000);
