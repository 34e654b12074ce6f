import type { Knex } from 'knex';
import { createWebhookClient } from '../outbound/http';
import type { Logger } from '../logging/logger';
import { attemptDelivery, type AttemptResult, type ClaimedDelivery } from '../webhooks/delivery';
import type { OutboundWebhookConfig } from '../webhooks/config';
import { HEARTBEAT_MS, STALE_AFTER_MS } from './workerIdentity';
import { loopState, runClaimLoop } from './claimLoop';
import { webhookDeliveries, type WebhookOutcome } from '../metrics/registry';

/**
 * Outbound webhook delivery, run by every worker process on both engines (bin/runtime.ts), like the email queue
 * (worker/deliveryQueue.ts): the `webhook_deliveries` outbox is the queue.
 *
 * Claim: per enabled endpoint with due deliveries, at most `endpointConcurrency` minus those already in flight to it
 * (counted across workers), oldest first, FOR UPDATE SKIP LOCKED, in one statement. So a hanging or dead endpoint
 * occupies at most its own few places and never the queue: the others' deliveries are claimed beside it (no
 * head-of-line blocking), and its failures move its deliveries into the future by the backoff.
 *
 * At-least-once: a claimed delivery is DELIVERING with `claimed_by` = this worker's executor id until its outcome is
 * written. A worker killed meanwhile leaves it so; it returns to PENDING when that worker restarts under its id, or
 * when any worker sees the dead one's heartbeat stale (or, for an id without a heartbeat, after the lease), and is
 * sent again with the same `webhook-id`, so the receiver can drop the duplicate.
 *
 * Outcomes are written in group commits (one statement for every outcome that arrived meanwhile): the status, the
 * attempt's log row, and the endpoint's failing mark (set when a delivery exhausts its retries, cleared by a success).
 */
export interface WebhookQueueOptions {
  knex: Knex;
  log: Logger;
  /** The installation secret (endpoint secrets are sealed with it). */
  secret: Buffer;
  executorId: string;
  config: OutboundWebhookConfig;
  /** Requests in flight at once in this worker. */
  concurrency?: number;
  pollMs?: number;
  leaseMs?: number;
  staleAfterMs?: number;
  livenessCheckMs?: number;
}

export interface WebhookQueue {
  /** Stops claiming, finishes the requests in flight and writes their outcomes. */
  stop(): Promise<void>;
}

interface Outcome {
  delivery: ClaimedDelivery;
  result: AttemptResult;
}

const MAX_CLAIM = 200;

/**
 * The claim (bindings: per-endpoint concurrency, how many, executor id): for each enabled endpoint with a due delivery,
 * its oldest due ones up to its free places, locked and marked DELIVERING, with the endpoint's URL and sealed secret.
 * Exported for the index test (test/webhooks/indexes.test.ts).
 */
export const CLAIM_SQL = `WITH eps AS (
    SELECT e.id, ?::int - (SELECT count(*) FROM webhook_deliveries x WHERE x.endpoint_id = e.id AND x.status = 'DELIVERING')::int AS free
    FROM webhook_endpoints e
    WHERE e.enabled
      AND EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.status = 'PENDING' AND d.next_attempt_at <= now())
  ), picked AS (
    SELECT p.id FROM eps, LATERAL (
      SELECT d.id FROM webhook_deliveries d
      WHERE d.endpoint_id = eps.id AND d.status = 'PENDING' AND d.next_attempt_at <= now()
      ORDER BY d.next_attempt_at
      LIMIT greatest(eps.free, 0)
      FOR UPDATE SKIP LOCKED) p
    LIMIT ?
  ), claimed AS (
    UPDATE webhook_deliveries w SET status = 'DELIVERING', attempts = w.attempts + 1, claimed_by = ?, claimed_at = now(), updated_at = now()
    FROM picked p WHERE w.id = p.id
    RETURNING w.id, w.project_id, w.endpoint_id, w.payload, w.attempts
  )
  SELECT c.*, e.url, e.secret FROM claimed c JOIN webhook_endpoints e ON e.id = c.endpoint_id`;

export function startWebhookQueue(opts: WebhookQueueOptions): WebhookQueue {
  const { knex, log, executorId, config } = opts;
  const client = createWebhookClient(config.http);
  const concurrency = opts.concurrency ?? 256;
  const pollMs = opts.pollMs ?? 200;
  const leaseMs = opts.leaseMs ?? 5 * 60_000;
  const staleAfterMs = opts.staleAfterMs ?? STALE_AFTER_MS;
  const livenessCheckMs = opts.livenessCheckMs ?? HEARTBEAT_MS;
  const delays = config.retryDelaysMs;

  // Whether the loop stops, and its nap, which a finished delivery ends (`run.wake`): shared with the email queue's loop.
  const run = loopState();
  let inflight = 0;

  const statusOf = (o: Outcome) => (o.result.ok ? 'SUCCEEDED' : o.delivery.attempt > delays.length ? 'FAILED' : 'PENDING');
  const outcomeOf = (o: Outcome): WebhookOutcome => ({ SUCCEEDED: 'succeeded', FAILED: 'failed', PENDING: 'retried' } as const)[statusOf(o)];
  // ---- outcomes, in group commits: one writer at a time, taking whatever arrived meanwhile ----
  let pending: { outcome: Outcome; done: () => void }[] = [];
  let writing: Promise<void> | undefined;
  const write = async (batch: Outcome[]) => {
    await knex.raw(
      `WITH o AS (
         SELECT * FROM unnest(?::uuid[], ?::text[], ?::int[], ?::int[], ?::text[], ?::int[], ?::int[])
           AS o(id, status, code, latency, error, retry_ms, attempt)
       ), upd AS (
         UPDATE webhook_deliveries d SET
           status = o.status,
           next_attempt_at = CASE WHEN o.status = 'PENDING' THEN now() + o.retry_ms * interval '1 millisecond' ELSE d.next_attempt_at END,
           last_status_code = o.code, last_latency_ms = o.latency, last_error = o.error,
           delivered_at = CASE WHEN o.status = 'SUCCEEDED' THEN now() ELSE d.delivered_at END,
           claimed_by = NULL, claimed_at = NULL, updated_at = now()
         FROM o
         WHERE d.id = o.id AND d.status = 'DELIVERING' AND d.claimed_by = ?
         RETURNING d.id, d.endpoint_id, o.status, o.error
       ), logged AS (
         INSERT INTO webhook_attempts (delivery_id, attempt, status_code, latency_ms, error)
         SELECT o.id, o.attempt, o.code, o.latency, o.error FROM o JOIN upd ON upd.id = o.id
         RETURNING 1
       ), failing AS (
         UPDATE webhook_endpoints e SET failing_since = coalesce(e.failing_since, now()), last_error = f.error, updated_at = now()
         FROM (SELECT DISTINCT ON (endpoint_id) endpoint_id, error FROM upd WHERE status = 'FAILED' ORDER BY endpoint_id) f
         WHERE e.id = f.endpoint_id
         RETURNING 1
       ), healthy AS (
         UPDATE webhook_endpoints e SET failing_since = NULL, last_error = NULL, updated_at = now()
         WHERE e.failing_since IS NOT NULL
           AND e.id IN (SELECT endpoint_id FROM upd WHERE status = 'SUCCEEDED')
           AND e.id NOT IN (SELECT endpoint_id FROM upd WHERE status = 'FAILED')
         RETURNING 1
       )
       SELECT (SELECT count(*) FROM upd) AS n, (SELECT count(*) FROM logged) + (SELECT count(*) FROM failing) + (SELECT count(*) FROM healthy) AS side`,
      [
        batch.map((o) => o.delivery.id), batch.map(statusOf), batch.map((o) => o.result.statusCode), batch.map((o) => o.result.latencyMs),
        batch.map((o) => o.result.error), batch.map((o) => delays[o.delivery.attempt - 1] ?? 0), batch.map((o) => o.delivery.attempt), executorId,
      ] as Knex.RawBinding[],
    );
  };
  const flush = () => {
    if (writing || pending.length === 0) return;
    writing = (async () => {
      while (pending.length) {
        const batch = pending;
        pending = [];
        for (let attempt = 1; ; attempt++) {
          try {
            await write(batch.map((p) => p.outcome));
            for (const p of batch) webhookDeliveries.inc({ outcome: outcomeOf(p.outcome) }); // committed
            break;
          } catch (err) {
            // The deliveries stay DELIVERING under this worker's claim: if it dies now, they are requeued and resent.
            log.error({ err, count: batch.length, attempt }, 'could not record webhook outcomes; retrying');
            if (run.stopping && attempt >= 3) break;
            await new Promise((r) => setTimeout(r, Math.min(5000, 200 * attempt)));
          }
        }
        for (const p of batch) p.done();
      }
      writing = undefined;
    })();
  };

  async function claim(want: number): Promise<ClaimedDelivery[]> {
    const { rows } = await knex.raw(
      CLAIM_SQL,
      [config.endpointConcurrency, want, executorId],
    );
    return (rows as { id: string; project_id: string; endpoint_id: string; payload: Record<string, unknown>; attempts: number; url: string; secret: Buffer }[])
      .map((r) => ({ id: r.id, projectId: r.project_id, endpointId: r.endpoint_id, payload: r.payload, attempt: r.attempts, url: r.url, secret: r.secret }));
  }

  const deliver = (d: ClaimedDelivery) => {
    inflight++;
    const done = () => { inflight--; run.wake?.(); };
    void attemptDelivery(client, opts.secret, d).then((result) => {
      pending.push({ outcome: { delivery: d, result }, done });
      flush();
    });
  };

  // The loop (worker/claimLoop.ts) requeues crashed claims (own at start, dead workers' every livenessCheckMs), logs a
  // failed turn and naps max(pollMs, 1000) after it. A turn claims:
  const turn = async () => {
    const free = concurrency - inflight;
    if (free < Math.min(MAX_CLAIM, Math.ceil(concurrency / 4))) {
      await run.nap(pollMs);
      return;
    }
    const claimed = await claim(Math.min(free, MAX_CLAIM));
    if (claimed.length === 0) {
      await run.nap(pollMs);
      return;
    }
    for (const d of claimed) deliver(d);
  };
  const loop = runClaimLoop(run, {
    knex, log, pollMs, livenessCheckMs, turn,
    claims: {
      table: 'webhook_deliveries', claimedStatus: 'DELIVERING', queuedStatus: 'PENDING', executorId, staleAfterMs, leaseMs,
      // A requeued delivery is due at once.
      extra: () => ({ next_attempt_at: knex.fn.now() }),
    },
    logs: {
      requeuedOwn: 'requeued the webhook deliveries this worker left when it stopped',
      requeuedDead: 'requeued the webhook deliveries of a worker that stopped beating',
      requeueOwnFailed: 'could not requeue this worker\'s earlier webhook claims',
      claimFailed: 'webhook queue: claim failed; retrying',
    },
  });

  return {
    // Unlike the email queue's, this drain polls every 20 ms rather than napping (which a finished delivery would end).
    stop: () => loop.stop(async () => {
      while (inflight > 0) await new Promise((r) => setTimeout(r, 20));
      await writing;
    }),
  };
}
