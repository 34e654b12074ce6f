import type { Knex } from 'knex';
import { outcomeOf, type Deliverer, type Outcome, type Prepared } from '../activities/delivery';
import { Email } from '../db/models/Email';
import type { Logger } from '../logging/logger';
import { DELIVERY_RETRY } from '../workflows/policy';
import { gaveUp } from '../workflows/failure';
import { SHARED_WINDOW_MAX_RATE, sharedSendWindow } from './sendWindow';

/**
 * The embedded engine's rate-limited delivery queue: the emails table itself. Every worker process claims QUEUED
 * rows in batches (`FOR UPDATE SKIP LOCKED`, transactional mail first), sends them through the pooled mailer and
 * writes the outcomes in batches. Why not one DBOS workflow per email: DBOS's bookkeeping costs about ten
 * statements per workflow, which capped delivery at ~350 emails/s on two vCPUs; a claim or a write here covers a
 * whole batch (BENCHMARKS.md section 2). DBOS still runs campaigns, schedules and automations.
 *
 * Rate: one shared row (`delivery_pace`) holds the theoretical time of the next send (GCRA). A claim of n emails
 * takes the next n slots, 1/rate apart, across all workers; each email is sent at its slot. So at most
 * SEND_RATE_PER_SECOND emails leave per second, whatever the number of workers, and a worker reserves at most
 * about one second ahead.
 *
 * Durability: a claimed email is SENDING with `claimed_by` = this worker's stable executor id. A worker that
 * restarts requeues its own claims at once (the deliveries in flight at a crash are sent again, with the same
 * Message-ID: at-least-once), and any worker requeues claims older than the lease (a worker that never returned).
 * Transient SMTP failures go back to QUEUED with `available_at` = now + backoff (DELIVERY_RETRY); after the last
 * attempt the email is FAILED.
 */

export interface DeliveryQueueOptions {
  knex: Knex;
  log: Logger;
  deliverer: Deliverer;
  ratePerSecond: number;
  /** Stable per process across restarts (EXECUTOR_ID): names this worker's claims. */
  executorId: string;
  /** Sends in flight at once in this process. */
  concurrency?: number;
  /** How often an idle worker looks for work. */
  pollMs?: number;
  /** A claim older than this is taken to belong to a dead worker and requeued. */
  leaseMs?: number;
}

export interface DeliveryQueue {
  /** Stops claiming, finishes the sends in flight and writes their outcomes. */
  stop(): Promise<void>;
}

/** How long to wait before attempt `attempts + 1` after a transient failure of attempt `attempts` (1-based). */
export function retryDelayMs(attempts: number): number {
  const { initialIntervalMs, backoffCoefficient, maximumIntervalMs } = DELIVERY_RETRY;
  return Math.min(initialIntervalMs * backoffCoefficient ** (attempts - 1), maximumIntervalMs);
}

/** The most emails one claim takes: more only lengthens the transaction without saving a round trip that matters. */
const MAX_CLAIM = 200;
/** A worker reserves slots at most this far ahead of now. */
const HORIZON_MS = 1000;
/** Outcomes are written in batches: when this many wait, or after FLUSH_MS. */
const FLUSH_AT = 100;
const FLUSH_MS = 10;

export function startDeliveryQueue(opts: DeliveryQueueOptions): DeliveryQueue {
  const { knex, log, deliverer, executorId } = opts;
  const concurrency = opts.concurrency ?? 100;
  const pollMs = opts.pollMs ?? 100;
  const leaseMs = opts.leaseMs ?? 5 * 60_000;
  // Slots 2% further apart than 1/rate: each worker times its sends with its own timers, and a send that leaves a few
  // milliseconds late would otherwise crowd the next worker's punctual one into the same second.
  const intervalMs = (1000 / opts.ratePerSecond) * 1.02;
  // At low rates the shared window makes the limit strict at the receiving server, whatever the sends' latencies.
  const window = opts.ratePerSecond <= SHARED_WINDOW_MAX_RATE ? sharedSendWindow(knex, opts.ratePerSecond, executorId) : undefined;
  // The first slot of a claim is at least this far ahead, so that loading the batch's content does not make its first
  // sends late (a late send bunches up with the next worker's punctual ones). Zero when the rate is effectively lifted.
  const leadMs = Math.min(50, intervalMs);
  // Claim in batches: at a finite rate, at most what the horizon allows; otherwise whatever is free.
  const maxClaim = Math.max(1, Math.min(MAX_CLAIM, Math.floor(opts.ratePerSecond * HORIZON_MS / 1000)));

  let stopping = false;
  let inflight = 0;
  let wake: (() => void) | undefined;
  const nap = (ms: number) => new Promise<void>((resolve) => {
    const timer = setTimeout(() => { wake = undefined; resolve(); }, ms);
    wake = () => { clearTimeout(timer); wake = undefined; resolve(); };
  });

  // ---- outcomes, written in batches ----
  let pending: Outcome[] = [];
  let flushing: Promise<void> = Promise.resolve();
  let flushTimer: NodeJS.Timeout | undefined;
  const flush = (): Promise<void> => {
    if (flushTimer) { clearTimeout(flushTimer); flushTimer = undefined; }
    const batch = pending;
    pending = [];
    if (batch.length === 0) return flushing;
    flushing = flushing.then(async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          await deliverer.record(batch);
          return;
        } catch (err) {
          // The emails stay SENDING under this worker's claim: if the process dies now, its restart sends them again.
          log.error({ err, count: batch.length, attempt }, 'could not record delivery outcomes; retrying');
          if (stopping && attempt >= 3) return;
          await new Promise((r) => setTimeout(r, Math.min(5000, 200 * attempt)));
        }
      }
    });
    return flushing;
  };
  const settle = (outcome: Outcome) => {
    pending.push(outcome);
    if (pending.length >= FLUSH_AT) void flush();
    else flushTimer ??= setTimeout(() => void flush(), FLUSH_MS);
  };

  /** Sends one email; a transient failure after the last attempt of the retry budget is final. */
  const attempt = async (email: Email, prepared: Prepared): Promise<Outcome> => {
    const result = await deliverer.attempt(email, prepared);
    if (result.status === 'TRANSIENT' && email.attempts >= DELIVERY_RETRY.maximumAttempts) {
      return { email, status: 'FAILED', error: gaveUp(result.error) };
    }
    return outcomeOf(email, result, retryDelayMs(email.attempts));
  };

  /** Whether any email is due now (the claim's own condition, without its locks). */
  async function anyDue(): Promise<boolean> {
    const { rows } = await knex.raw("SELECT EXISTS (SELECT 1 FROM emails WHERE status = 'QUEUED' AND available_at <= now()) AS due");
    return (rows[0] as { due: boolean }).due;
  }

  /**
   * Claims up to `want` emails, no more than the free slots of the next HORIZON_MS, and books their slots, in one
   * statement. Answers when the first slot is (performance.now() time), or (nothing claimed) how long until a slot frees up.
   */
  async function claim(want: number): Promise<{ emails: Email[]; firstSlotAt: number; waitMs: number }> {
    const { rows } = await knex.raw(
      `WITH pace AS (
         SELECT greatest(next_at, now() + ?::float8 * interval '1 millisecond') AS next_at FROM delivery_pace WHERE name = 'email' FOR UPDATE
       ), picked AS (
         SELECT project_id, id FROM emails
         WHERE status = 'QUEUED' AND available_at <= now()
         ORDER BY priority, id
         LIMIT least(?::int, greatest(0, floor(extract(epoch FROM (now() - (SELECT next_at FROM pace))) * 1000 + ?::int) / ?::float8 + 1)::int)
         FOR UPDATE SKIP LOCKED
       ), claimed AS (
         UPDATE emails e SET status = 'SENDING', attempts = e.attempts + 1, claimed_by = ?, claimed_at = now(), updated_at = now()
         FROM picked p WHERE e.project_id = p.project_id AND e.id = p.id
         RETURNING e.*
       ), paced AS (
         UPDATE delivery_pace SET next_at = (SELECT next_at FROM pace) + (SELECT count(*) FROM claimed) * ?::float8 * interval '1 millisecond'
         WHERE name = 'email' AND EXISTS (SELECT 1 FROM claimed)
       )
       SELECT c.*,
              extract(epoch FROM ((SELECT next_at FROM pace) - now())) * 1000 AS slot_ms
       FROM (SELECT 1) one LEFT JOIN claimed c ON true
       ORDER BY c.priority, c.id`,
      [leadMs, want, HORIZON_MS, intervalMs, executorId, intervalMs],
    );
    // Offsets count from the statement's now(); counting them from the answer's arrival can only make slots later.
    const answeredAt = performance.now();
    const slotMs = Number((rows[0] as { slot_ms: number }).slot_ms);
    const emails = rows.filter((r: { id: string | null }) => r.id !== null).map((r: Record<string, unknown>) => Email.fromDatabaseJson(r));
    // Nothing claimed: the next slot frees up once the pace's next slot is within the horizon.
    return { emails, firstSlotAt: answeredAt + slotMs, waitMs: slotMs - HORIZON_MS };
  }

  /** Sends each email at its slot (`firstSlotAt`: performance.now() time of the first). */
  async function deliverBatch(emails: Email[], firstSlotAt: number): Promise<void> {
    let prepared: Map<string, Prepared>;
    try {
      prepared = await deliverer.prepare(emails);
    } catch (err) {
      log.error({ err }, 'could not load what to send; the emails go back to the queue');
      for (const email of emails) settle({ email, status: 'QUEUED', error: 'could not load the email', retryInMs: retryDelayMs(1) });
      return;
    }
    emails.forEach((email, i) => {
      inflight++;
      void (async () => {
        const wait = firstSlotAt + i * intervalMs - performance.now();
        if (wait > 1) await new Promise((r) => setTimeout(r, wait));
        const ticket = await window?.acquire();
        try {
          settle(await attempt(email, prepared.get(email.id)!));
        } finally {
          if (ticket) await window!.release(ticket);
        }
      })().catch((err) => {
        log.error({ err, emailId: email.id }, 'delivery crashed; the email goes back to the queue');
        settle({ email, status: 'QUEUED', error: 'delivery crashed', retryInMs: retryDelayMs(email.attempts) });
      }).finally(() => {
        inflight--;
        wake?.();
      });
    });
  }

  /** Requeues claims left by a crash: this worker's own (at start), and any older than the lease (dead workers). */
  async function requeue(own: boolean): Promise<void> {
    const q = knex('emails').where('status', 'SENDING');
    if (own) q.where('claimed_by', executorId);
    else q.where('claimed_at', '<', knex.raw("now() - ?::int * interval '1 millisecond'", [leaseMs]));
    const n = await q.update({ status: 'QUEUED', claimed_by: null, claimed_at: null, updated_at: knex.fn.now() });
    if (n) log.warn({ count: n, own }, 'requeued emails claimed by a worker that stopped without finishing them');
  }

  const loop = (async () => {
    try {
      await requeue(true);
    } catch (err) {
      log.error({ err }, 'could not requeue this worker\'s earlier claims');
    }
    let lastLeaseCheck = 0; // at start too: claims of workers that never came back
    while (!stopping) {
      try {
        if (Date.now() - lastLeaseCheck > 30_000) {
          lastLeaseCheck = Date.now();
          await requeue(false);
        }
        const free = concurrency - inflight;
        // While busy, wait for half of the slots rather than claiming a few emails at a time.
        if (free < Math.min(maxClaim, Math.ceil(concurrency / 2))) {
          await nap(pollMs);
          continue;
        }
        // Idle: one read of the (small) queue index instead of a claim, which locks and writes the shared pace row.
        if (inflight === 0 && !(await anyDue())) {
          await nap(pollMs);
          continue;
        }
        const { emails, firstSlotAt, waitMs } = await claim(Math.min(free, maxClaim));
        if (emails.length === 0) {
          // Nothing due, or the pace is booked ahead: look again when it frees up.
          await nap(Math.max(5, Math.min(pollMs, waitMs > 0 ? waitMs : pollMs)));
          continue;
        }
        await deliverBatch(emails, firstSlotAt);
        // At a finite rate the claim above booked up to a second ahead: the next claim waits for the pace anyway.
      } catch (err) {
        if (stopping) break;
        log.error({ err }, 'delivery queue: claim failed; retrying');
        await nap(Math.max(pollMs, 1000));
      }
    }
  })();

  return {
    async stop() {
      stopping = true;
      wake?.();
      await loop;
      while (inflight > 0) await nap(20);
      await flush();
    },
  };
}
