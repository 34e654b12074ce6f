import type { Knex } from 'knex';
import type { Logger } from '../logging/logger';

/**
 * What the email queue (worker/deliveryQueue.ts) and the webhook queue (worker/webhookQueue.ts) share: both claim rows
 * of a table for this worker (`claimed_by` = its executor id), and both must give back the claims a crash left, then
 * claim in a loop until stopped. These parts were copies of each other; one copy keeps them from drifting apart (a fix
 * to the requeue query, or to the loop's error handling, reaches both queues).
 *
 * What stays in each queue: how much to claim, the claim itself, what to do with it, and how its outcomes are written.
 * Nothing here runs per claimed row (the email queue is the hot path): the loop runs once per claim, the requeue once
 * per liveness check. Per row there is only the `wake?.()` of a finished send, now a field of the loop's state.
 */

/**
 * What a queue's loop shares with its sends and writes: whether it stops, and its interruptible sleep. `wake` is set
 * while a nap runs and ends it at once: a send that finishes frees a place, and the loop may claim again without
 * waiting out its poll; stop() ends the nap too. (A field rather than a method: a finished send calls `wake?.()` as
 * before, and calls nothing when no nap runs.)
 */
export interface LoopState {
  stopping: boolean;
  wake: (() => void) | undefined;
  nap(ms: number): Promise<void>;
}

/** The longest nap once a loop is stopping: the drains wait for their sends in naps of this length (a send's end wakes them). */
const STOPPING_NAP_MS = 20;

export function loopState(): LoopState {
  const n: LoopState = {
    stopping: false,
    wake: undefined,
    nap: (ms) => new Promise<void>((resolve) => {
      // Once stopping, at most a drain's short wait: a stop that came while the turn was in a query found no nap to end,
      // and the nap the turn then takes would be its whole poll (a CI run's stop waited for a two-minute one).
      const timer = setTimeout(() => { n.wake = undefined; resolve(); }, n.stopping ? Math.min(ms, STOPPING_NAP_MS) : ms);
      n.wake = () => { clearTimeout(timer); n.wake = undefined; resolve(); };
    }),
  };
  return n;
}

/** Where a queue's claims live, and what a requeue writes back. */
export interface Claims {
  table: string;
  /** The status of a claimed row (SENDING, DELIVERING). */
  claimedStatus: string;
  /** The status a requeued row returns to (QUEUED, PENDING). */
  queuedStatus: string;
  /** Columns a requeue sets besides the status and the claim (set after them, before `updated_at`). */
  extra?: () => Record<string, Knex.Raw | string | number | null>;
  executorId: string;
  /** The claims of a worker whose heartbeat is older than this are a dead worker's. */
  staleAfterMs: number;
  /** A claim under an id without a heartbeat row, older than this, is a dead worker's. */
  leaseMs: number;
}

/**
 * Requeues claims left by a crash: this worker's own (`own`, at start: its id is held by no other live process), or
 * those of dead workers (a stale heartbeat in `workers`; an id without a heartbeat row after the lease). Answers how
 * many rows went back.
 */
export async function requeueClaims(knex: Knex, c: Claims, own: boolean): Promise<number> {
  const q = knex(c.table).where('status', c.claimedStatus);
  if (own) q.where('claimed_by', c.executorId);
  else {
    q.where((w) => w
      .whereIn('claimed_by', knex('workers').select('executor_id').where('heartbeat_at', '<', knex.raw("now() - ?::int * interval '1 millisecond'", [c.staleAfterMs])))
      .orWhere((l) => l.whereNotIn('claimed_by', knex('workers').select('executor_id'))
        .where('claimed_at', '<', knex.raw("now() - ?::int * interval '1 millisecond'", [c.leaseMs]))));
  }
  return q.update({ status: c.queuedStatus, claimed_by: null, claimed_at: null, ...c.extra?.(), updated_at: knex.fn.now() });
}

export interface ClaimLoopOptions {
  knex: Knex;
  log: Logger;
  claims: Claims;
  /** The messages this loop logs (each queue keeps its own words). */
  logs: { requeuedOwn: string; requeuedDead: string; requeueOwnFailed: string; claimFailed: string };
  pollMs: number;
  /** How often the loop looks for dead workers' claims. */
  livenessCheckMs: number;
  /** One turn of the loop: claim and hand out the work, or nap. A failure is logged and retried after a longer nap. */
  turn: () => Promise<void>;
}

export interface ClaimLoop {
  /** Stops claiming (ending a nap at once), waits for the loop to end, then for `drain` (the work in flight, its writes). */
  stop(drain: () => Promise<void>): Promise<void>;
}

/**
 * Runs a queue's claim loop (`n`: its state, see loopState): requeues this worker's own earlier claims first, then, until
 * stopped, looks for dead workers' claims every `livenessCheckMs` (at start too: claims of workers that never came
 * back) and takes a turn.
 */
export function runClaimLoop(n: LoopState, o: ClaimLoopOptions): ClaimLoop {
  const { knex, log, claims, logs } = o;
  const requeue = async (own: boolean) => {
    const count = await requeueClaims(knex, claims, own);
    if (count) log.warn({ count, own }, own ? logs.requeuedOwn : logs.requeuedDead);
  };
  const loop = (async () => {
    try {
      await requeue(true);
    } catch (err) {
      log.error({ err }, logs.requeueOwnFailed);
    }
    let lastLivenessCheck = 0;
    while (!n.stopping) {
      try {
        if (Date.now() - lastLivenessCheck > o.livenessCheckMs) {
          lastLivenessCheck = Date.now();
          await requeue(false);
        }
        await o.turn();
      } catch (err) {
        if (n.stopping) break;
        log.error({ err }, logs.claimFailed);
        await n.nap(Math.max(o.pollMs, 1000));
      }
    }
  })();
  return {
    async stop(drain) {
      n.stopping = true;
      n.wake?.();
      await loop;
      await drain();
    },
  };
}
