import type { Knex } from 'knex';
import { createLogger } from '../../logging/logger';
import { loopState, runClaimLoop } from '../../worker/claimLoop';

/**
 * The claim loops' stop (worker/claimLoop.ts): a stop that comes while a turn is busy (in a query: no nap to end) does
 * not wait out the nap the turn takes after it.
 */
test('a stop during a turn ends the nap the turn then takes, not after the whole poll', async () => {
  const n = loopState();
  // The requeues answer at once; the turn "queries" for 200 ms, then naps for a minute (a long poll).
  const query: Record<string, unknown> = { update: async () => 0 };
  for (const m of ['where', 'whereIn', 'whereNotIn', 'orWhere', 'select']) query[m] = () => query;
  const knex = Object.assign(() => query, { raw: () => ({}), fn: { now: () => ({}) } }) as unknown as Knex;
  let turns = 0;
  let inTurn: () => void = () => undefined;
  const busy = new Promise<void>((r) => { inTurn = r; });
  const loop = runClaimLoop(n, {
    knex, log: createLogger('silent'), pollMs: 60_000, livenessCheckMs: 3_600_000,
    claims: { table: 't', claimedStatus: 'C', queuedStatus: 'Q', executorId: 'x', staleAfterMs: 1, leaseMs: 1 },
    logs: { requeuedOwn: '', requeuedDead: '', requeueOwnFailed: '', claimFailed: '' },
    turn: async () => {
      turns++;
      inTurn();
      await new Promise((r) => setTimeout(r, 200));
      await n.nap(60_000);
    },
  });
  await busy;
  const started = Date.now();
  await loop.stop(async () => undefined);
  expect(Date.now() - started).toBeLessThan(5_000);
  expect(turns).toBe(1);
});
