import type { Knex } from 'knex';
import { outcomeOf, type Deliverer, type Outcome, type Prepared } from '../sending/delivery';
import { DELIVERY_FIELDS, Email, type DeliveryEmail } from '../db/models/Email';
import { preparedStatement } from '../db/prepared';
import type { Logger } from '../logging/logger';
import { DELIVERY_RETRY } from '../workflows/policy';
import { gaveUp } from '../workflows/failure';
import { CAMPAIGN_FAILED_EMAIL_ERROR } from '../campaigns/lifecycle';
import { SHARED_WINDOW_MAX_RATE, sharedSendWindow } from './sendWindow';
import { HEARTBEAT_MS, STALE_AFTER_MS } from './workerIdentity';
import { loopState, runClaimLoop } from './claimLoop';
import { onEmailsQueued } from '../metrics/queued';

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
 * Durability: a claimed email is SENDING with `claimed_by` = this worker's executor id, unique among live processes
 * (worker/workerIdentity.ts). It counts as in flight from its claim until its outcome is committed, and at most
 * `maxUnrecorded` emails of a worker may be between the start of their send and that commit: a send waits for one of
 * those places, and a place frees only when the outcome is written. A crash therefore re-sends at most `maxUnrecorded`
 * emails (at-least-once, with the same Message-ID), however far the database lags behind the SMTP server. Outcomes are
 * written in group commits: one write at a time per worker, taking every outcome that arrived meanwhile.
 * Who requeues a crashed worker's claims: the worker itself when it restarts under its id (at once), or any worker
 * once the dead one's heartbeat is STALE_AFTER_MS old. Claims of ids that never registered a heartbeat (Herald before
 * heartbeats, or a queue started without an identity) are requeued after the lease.
 * Transient SMTP failures go back to QUEUED with `available_at` = now + backoff (DELIVERY_RETRY); after the last
 * attempt the email is FAILED.
 *
 * Cancel means stop: a cancel (campaigns/lifecycle.ts) marks the campaign's QUEUED emails CANCELLED, but those a worker
 * has claimed are SENDING and wait for their slot, up to HORIZON_MS ahead. Right before each send, once it has its slot
 * (and its place in the shared window), the worker looks whether the email's campaign is CANCELLED or FAILED
 * (`campaignStops`: one query for every campaign this worker has in flight, shared by the sends that ask together);
 * if so the email is not sent and its outcome is CANCELLED. So once a cancel has committed, only the sends that had
 * already passed that look (handed to SMTP, a millisecond or two later) may still leave. The cancel itself leaves
 * SENDING rows to their worker: only it knows whether a send has been handed to SMTP (then the row ends SENT, as the
 * message did) or not (CANCELLED). A final outcome is never overwritten (sending/delivery.ts, record).
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
  /** A claim under an id without a heartbeat row, older than this, is taken to belong to a dead worker and requeued. */
  leaseMs?: number;
  /** The claims of a worker whose heartbeat is older than this are requeued. */
  staleAfterMs?: number;
  /** How often this worker looks for dead workers' claims. */
  livenessCheckMs?: number;
  /** At most this many emails between the start of their send and the commit of their outcome (see above). */
  maxUnrecorded?: number;
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
/**
 * The default bound on sends whose outcome is not yet committed: four times the SMTP pool's connections
 * (mail/transport.ts), so that the pool stays busy while outcomes are gathered (half the bound a write) and written.
 * Twice the pool left writes of 5-8 outcomes, whose fixed cost was most of the database's CPU per email (section 50).
 */
export const MAX_UNRECORDED = 40;
/**
 * At rates above SHARED_WINDOW_MAX_RATE, a send may rely on a look at its campaign's status begun at most this long
 * before it asks (one query serves the sends of this many milliseconds); at lower rates every send looks afresh.
 */
const STOP_LOOK_MAX_AGE_MS = 20;
/** Outcome writes in flight at once per worker. */
const WRITERS = 2;
/** How long a write waits at most for more outcomes while sends are still out (see flush). */
const GATHER_MS = 20;

/** The columns a claim returns: what delivery reads (db/models/Email.ts DELIVERY_FIELDS), in SQL's snake case. */
const CLAIMED_COLUMNS = DELIVERY_FIELDS.map((f) => `e.${f.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}`).join(', ');

/**
 * The claim of `claim` (see there), a named statement (db/prepared.ts): parsed and planned once per connection rather
 * than at every claim. Bindings: lead (ms), how many at most, the horizon (ms), the interval (ms), the executor id, the
 * interval again.
 */
export const CLAIM_SQL = `WITH pace AS (
     SELECT greatest(next_at, now() + ?::float8 * interval '1 millisecond') AS next_at FROM delivery_pace WHERE name = 'email' FOR UPDATE
   ), picked AS (
     SELECT tableoid AS t, ctid AS c, partition_at FROM emails
     WHERE status = 'QUEUED' AND available_at <= now()
     ORDER BY priority, id
     LIMIT least(?::int, greatest(0, floor(extract(epoch FROM (now() - (SELECT next_at FROM pace))) * 1000 + ?::int) / ?::float8 + 1)::int)
     FOR UPDATE SKIP LOCKED
   ), claimed AS (
     UPDATE emails e SET status = 'SENDING', attempts = e.attempts + 1, claimed_by = ?, claimed_at = now(), updated_at = now()
     -- The picked rows themselves, locked above, by their physical address (a row's ctid is its partition's own, hence
     -- the partition's oid with it): the planner cannot know how many rows the LIMIT picks, and for a join on the key
     -- it read every queued row of the partition (125 ms a claim with 100,000 queued), or, with a generic plan, looked
     -- each one up through the wrong index. A TID scan reads just those rows, whatever the plan; with the partition
     -- key, in the row's own partition only (pruned as the join runs).
     FROM picked p
     WHERE e.ctid = ANY(ARRAY(SELECT c FROM picked)) AND e.tableoid = p.t AND e.ctid = p.c AND e.partition_at = p.partition_at
     RETURNING ${CLAIMED_COLUMNS}
   ), paced AS (
     UPDATE delivery_pace SET next_at = (SELECT next_at FROM pace) + (SELECT count(*) FROM claimed) * ?::float8 * interval '1 millisecond'
     WHERE name = 'email' AND EXISTS (SELECT 1 FROM claimed)
   )
   SELECT c.*,
          extract(epoch FROM ((SELECT next_at FROM pace) - now())) * 1000 AS slot_ms
   FROM (SELECT 1) one LEFT JOIN claimed c ON true
   ORDER BY c.priority, c.id`;
const runClaim = preparedStatement('herald_claim_emails', CLAIM_SQL);

export function startDeliveryQueue(opts: DeliveryQueueOptions): DeliveryQueue {
  const { knex, log, deliverer, executorId } = opts;
  const concurrency = opts.concurrency ?? 100;
  const pollMs = opts.pollMs ?? 100;
  const leaseMs = opts.leaseMs ?? 5 * 60_000;
  const staleAfterMs = opts.staleAfterMs ?? STALE_AFTER_MS;
  const livenessCheckMs = opts.livenessCheckMs ?? HEARTBEAT_MS;
  const maxUnrecorded = opts.maxUnrecorded ?? MAX_UNRECORDED;
  // Slots 2% further apart than 1/rate: each worker times its sends with its own timers, and a send that leaves a few
  // milliseconds late would otherwise crowd the next worker's punctual one into the same second.
  const intervalMs = (1000 / opts.ratePerSecond) * 1.02;
  // At low rates the shared window makes the limit strict at the receiving server, whatever the sends' latencies.
  const window = opts.ratePerSecond <= SHARED_WINDOW_MAX_RATE ? sharedSendWindow(knex, opts.ratePerSecond, executorId) : undefined;
  const stops = campaignStops(knex, opts.ratePerSecond <= SHARED_WINDOW_MAX_RATE ? 0 : STOP_LOOK_MAX_AGE_MS);
  // The first slot of a claim is at least this far ahead, so that loading the batch's content does not make its first
  // sends late (a late send bunches up with the next worker's punctual ones). Zero when the rate is effectively lifted.
  const leadMs = Math.min(50, intervalMs);
  // Claim in batches: at a finite rate, at most what the horizon allows; otherwise whatever is free.
  const maxClaim = Math.max(1, Math.min(MAX_CLAIM, Math.floor(opts.ratePerSecond * HORIZON_MS / 1000)));

  // Whether the loop stops, and its nap, which a finished send ends (`run.wake`): shared with the webhook queue's loop.
  const run = loopState();
  let inflight = 0;

  // ---- outcomes, written in group commits ----
  // `unrecorded`: sends begun whose outcome is not committed yet; a send waits in `places` for room under the bound.
  let unrecorded = 0;
  const places: (() => void)[] = [];
  const takePlace = (): Promise<void> | undefined => {
    if (unrecorded < maxUnrecorded) { unrecorded++; return undefined; }
    return new Promise<void>((resolve) => places.push(() => { unrecorded++; resolve(); }));
  };
  const freePlace = () => {
    unrecorded--;
    places.shift()?.();
  };
  // Each settled outcome, with the callback that ends its email's time in flight once the outcome is committed.
  let pending: { outcome: Outcome; done: () => void }[] = [];
  const write = async (batch: typeof pending) => {
    for (let attempt = 1; ; attempt++) {
      try {
        await deliverer.record(batch.map((p) => p.outcome));
        return;
      } catch (err) {
        // The emails stay SENDING under this worker's claim: if the process dies now, its restart sends them again.
        log.error({ err, count: batch.length, attempt }, 'could not record delivery outcomes; retrying');
        if (run.stopping && attempt >= 3) return;
        await new Promise((r) => setTimeout(r, Math.min(5000, 200 * attempt)));
      }
    }
  };
  /**
   * Writes what is pending now, then whatever arrived during that write. Up to WRITERS writes run at once: while one
   * waits for its commit to reach the disk, the next one's statements run (one at a time, a worker measured 22 % slower).
   */
  let writers = 0;
  const writersDone: (() => void)[] = [];
  // A write waits for more outcomes (at most GATHER_MS) while fewer than half of the bound are pending and sends are
  // still out; a settled outcome that ends that condition ends the waits of every writer (`gatherers`) at once.
  const worthGathering = () => pending.length < maxUnrecorded / 2 && unrecorded > pending.length;
  const gatherers = new Set<() => void>();
  const flush = () => {
    // A second write only for a batch worth its commit: small batches cost the database more per email than they save.
    if (pending.length === 0 || writers >= WRITERS || (writers > 0 && pending.length < maxUnrecorded / 2)) return;
    writers++;
    void (async () => {
      while (pending.length) {
        // More sends per commit while others are still out: a write's fixed cost (~1.7 ms of the database's CPU, its
        // statement's many parts) is most of its cost at a few outcomes a write (BENCHMARKS.md section 50).
        if (worthGathering()) {
          await new Promise<void>((resolve) => {
            const end = () => { clearTimeout(timer); gatherers.delete(end); resolve(); };
            const timer = setTimeout(end, GATHER_MS);
            gatherers.add(end);
          });
        }
        const batch = pending;
        pending = [];
        await write(batch);
        for (const p of batch) p.done();
      }
      writers--;
      if (writers === 0) writersDone.splice(0).forEach((f) => f());
    })();
  };
  const written = () => (writers === 0 ? Promise.resolve() : new Promise<void>((resolve) => writersDone.push(resolve)));
  const settle = (outcome: Outcome, done: () => void) => {
    pending.push({ outcome, done });
    if (gatherers.size && !worthGathering()) for (const end of [...gatherers]) end();
    flush();
  };

  /** Sends one email; a transient failure after the last attempt of the retry budget is final. */
  const attempt = async (email: DeliveryEmail, prepared: Prepared): Promise<Outcome> => {
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
  async function claim(want: number): Promise<{ emails: DeliveryEmail[]; firstSlotAt: number; waitMs: number }> {
    const { rows } = await runClaim(knex, [leadMs, want, HORIZON_MS, intervalMs, executorId, intervalMs]);
    // Offsets count from the statement's now(); counting them from the answer's arrival can only make slots later.
    const answeredAt = performance.now();
    const slotMs = Number((rows[0] as { slot_ms: number }).slot_ms);
    const emails = rows.filter((r: { id: string | null }) => r.id !== null).map((r: Record<string, unknown>) => Email.fromDatabaseJson(r));
    // Nothing claimed: the next slot frees up once the pace's next slot is within the horizon.
    return { emails, firstSlotAt: answeredAt + slotMs, waitMs: slotMs - HORIZON_MS };
  }

  /** Sends each email at its slot (`firstSlotAt`: performance.now() time of the first). */
  async function deliverBatch(emails: DeliveryEmail[], firstSlotAt: number): Promise<void> {
    let prepared: Map<string, Prepared>;
    try {
      prepared = await deliverer.prepare(emails);
    } catch (err) {
      log.error({ err }, 'could not load what to send; the emails go back to the queue');
      for (const email of emails) {
        inflight++;
        settle({ email, status: 'QUEUED', error: 'could not load the email', retryInMs: retryDelayMs(1) }, () => { inflight--; run.wake?.(); });
      }
      return;
    }
    emails.forEach((email, i) => {
      inflight++;
      let placed = false;
      stops.hold(email);
      // In flight until its outcome is committed: only then may the claim loop take another email in its stead.
      const done = () => {
        if (placed) freePlace();
        stops.drop(email);
        inflight--;
        run.wake?.();
      };
      void (async () => {
        const wait = firstSlotAt + i * intervalMs - performance.now();
        if (wait > 1) await new Promise((r) => setTimeout(r, wait));
        await takePlace();
        placed = true;
        const ticket = await window?.acquire();
        let sent = false;
        try {
          // The last look before SMTP: a campaign cancelled (or failed) since the claim is not sent (see above).
          const stopped = await stops.stopped(email);
          if (stopped) {
            settle({ email, status: 'CANCELLED', error: stopped }, done);
            return;
          }
          sent = true;
          settle(await attempt(email, prepared.get(email.id)!), done);
        } finally {
          // A send that did not happen leaves no trace in the window: it would take a send's room for a second. (Its
          // outcome is settled already: a failure here must not settle it again.)
          if (ticket) await (sent ? window!.release(ticket) : window!.abandon(ticket)).catch((err: unknown) => log.warn({ err }, 'could not update the send window'));
        }
      })().catch((err) => {
        log.error({ err, emailId: email.id }, 'delivery crashed; the email goes back to the queue');
        settle({ email, status: 'QUEUED', error: 'delivery crashed', retryInMs: retryDelayMs(email.attempts) }, done);
      });
    });
  }

  // Emails this process just committed (metrics/queued.ts) end the nap of an idle loop, one that found the queue empty:
  // the first email of a campaign or of a send leaves at once rather than at the next poll. Other naps are not cut
  // short: a busy loop is woken by its own finished sends, and one waiting for the pace would only claim nothing.
  let queuedNews = false;
  let idleNap = false;
  const stopHearing = onEmailsQueued(() => {
    queuedNews = true;
    if (idleNap) run.wake?.();
  });
  // The loop (worker/claimLoop.ts) requeues crashed claims (own at start, dead workers' every livenessCheckMs), logs a
  // failed turn and naps max(pollMs, 1000) after it. A turn claims:
  const turn = async () => {
    const free = concurrency - inflight;
    // While busy, wait for half of the slots rather than claiming a few emails at a time.
    if (free < Math.min(maxClaim, Math.ceil(concurrency / 2))) {
      await run.nap(pollMs);
      return;
    }
    // Idle: one read of the (small) queue index instead of a claim, which locks and writes the shared pace row. News
    // of emails committed while it read (too late for it to see them) means a look again at once, not a nap.
    if (inflight === 0) {
      queuedNews = false;
      if (!(await anyDue())) {
        if (queuedNews) return;
        idleNap = true;
        await run.nap(pollMs);
        idleNap = false;
        return;
      }
    }
    const { emails, firstSlotAt, waitMs } = await claim(Math.min(free, maxClaim));
    if (emails.length === 0) {
      // Nothing due, or the pace is booked ahead: look again when it frees up.
      await run.nap(Math.max(5, Math.min(pollMs, waitMs > 0 ? waitMs : pollMs)));
      return;
    }
    await deliverBatch(emails, firstSlotAt);
    // At a finite rate the claim above booked up to a second ahead: the next claim waits for the pace anyway.
  };
  const loop = runClaimLoop(run, {
    knex, log, pollMs, livenessCheckMs, turn,
    claims: { table: 'emails', claimedStatus: 'SENDING', queuedStatus: 'QUEUED', executorId, staleAfterMs, leaseMs },
    logs: {
      requeuedOwn: 'requeued the claims this worker left when it stopped',
      requeuedDead: 'requeued the claims of a worker that stopped beating',
      requeueOwnFailed: 'could not requeue this worker\'s earlier claims',
      claimFailed: 'delivery queue: claim failed; retrying',
    },
  });

  return {
    // A finished send ends the nap (`run.wake`): the drain ends with the last outcome, not up to 20 ms later.
    stop: () => loop.stop(async () => {
      stopHearing();
      while (inflight > 0) await run.nap(20);
      await written();
    }),
  };
}

/** A key of a campaign: its project and id. */
const campaignKey = (email: DeliveryEmail) => `${email.projectId}/${email.campaignId}`;

/**
 * Which of the campaigns this worker has emails in flight for are stopped (CANCELLED or FAILED), for the look before
 * each send (see the top of this file). Sends that ask while a look is under way share the next one: at most one query
 * at a time, and none for transactional or test mail. A look counts for a send when it began no more than `maxAgeMs`
 * before the send asked (0: after it asked).
 */
function campaignStops(knex: Knex, maxAgeMs: number) {
  /** The campaigns of the emails in flight here, with how many each has. */
  const held = new Map<string, { projectId: string; campaignId: string; n: number }>();
  /** One query: which of `covers` (the campaigns held when it began) are stopped, with the error to record. */
  type Look = { startedAt: number; covers: Set<string>; result: Promise<Map<string, string>>; done: boolean };
  let current: Look | undefined;
  let next: Promise<Map<string, string>> | undefined;
  const begin = (): Look => {
    const keys = [...held.values()].map((c) => [c.projectId, c.campaignId]);
    const look: Look = {
      startedAt: performance.now(),
      covers: new Set(held.keys()),
      done: false,
      result: (async () => {
        const rows: { project_id: string; id: string; status: string }[] = keys.length === 0 ? []
          : await knex('campaigns').whereIn(['project_id', 'id'], keys).whereIn('status', ['CANCELLED', 'FAILED']).select('project_id', 'id', 'status');
        return new Map(rows.map((r) => [`${r.project_id}/${r.id}`, r.status === 'FAILED' ? CAMPAIGN_FAILED_EMAIL_ERROR : 'the campaign was cancelled']));
      })().finally(() => { look.done = true; }),
    };
    current = look;
    return look;
  };
  const lookSince = (askedAt: number, key: string): Promise<Map<string, string>> => {
    if (current && current.startedAt >= askedAt - maxAgeMs && current.covers.has(key)) return current.result;
    if (!current || current.done) return begin().result;
    // A look under way began too early for this send: the one after it serves every send that asks meanwhile.
    next ??= current.result.catch(() => undefined).then(() => { next = undefined; return begin().result; });
    return next;
  };
  const applies = (email: DeliveryEmail) => email.campaignId !== null && !email.isTest;
  return {
    hold(email: DeliveryEmail) {
      if (!applies(email)) return;
      const key = campaignKey(email);
      const c = held.get(key);
      if (c) c.n++;
      else held.set(key, { projectId: email.projectId, campaignId: email.campaignId!, n: 1 });
    },
    drop(email: DeliveryEmail) {
      if (!applies(email)) return;
      const key = campaignKey(email);
      const c = held.get(key);
      if (c && --c.n === 0) held.delete(key);
    },
    /** Why this email must not be sent (its campaign's end), or undefined. */
    async stopped(email: DeliveryEmail): Promise<string | undefined> {
      if (!applies(email)) return undefined;
      const key = campaignKey(email);
      return (await lookSince(performance.now(), key)).get(key);
    },
  };
}
