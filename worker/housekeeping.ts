import { loadSessionConfig } from '../config';
import type { Knex } from 'knex';
import { purgeExpiredIdempotencyKeys } from '../db/queries/idempotency';
import type { Logger } from '../logging/logger';
import { pruneTokens } from '../people/links';
import { pruneSessions } from '../people/sessions';
import { pruneLoginFailures } from '../people/throttle';
import { pruneLoginChallenges } from '../people/twoFactor';
import { pruneEventWindows } from '../tracking/record';
import { pruneInbound } from '../inbound/messages';
import { ensurePartitions } from '../db/partitions';
import { mergePendingEntries } from '../db/searchIndexes';
import { loopState } from './claimLoop';

/**
 * Rows that matter only for a while, deleted by every worker once they no longer do: tracking windows that have passed
 * (tracking/record.ts), idempotency keys past their 24 hours (db/queries/idempotency.ts), failed-login counts an hour
 * old (people/throttle.ts), and a day after their end, sessions (people/sessions.ts) and single-use tokens
 * (people/links.ts), and expired two-factor login challenges (people/twoFactor.ts), and received messages past
 * INBOUND_RETENTION_DAYS with their raw bytes and attachments (inbound/messages.ts). Every ten minutes it also makes sure
 * the months ahead of the partitioned tables exist (db/partitions.ts ensurePartitions: a catalog read when they do), so
 * that a cluster whose engine does not run the retention job still never writes into the default partition. Each sweep deletes in short batches (db/prune.ts), so workers sweeping at once share the rows rather than wait on each other. A failed
 * sweep is logged and tried again at the next round.
 *
 * On a cadence of its own (every second), it merges the new entries of the contact search index into it
 * (db/searchIndexes.ts), so that sends creating contacts never wait for that merge.
 */
export interface HousekeepingOptions {
  knex: Knex;
  log: Logger;
  /** The tracking routes' event window (TRACKING_EVENT_WINDOW_SECONDS): a window row older than it has passed. */
  eventWindowMs: number;
  /** SESSION_IDLE_MINUTES: a session unused this long has ended (its row goes a day later). */
  sessionIdleMinutes?: number;
  /** INBOUND_RETENTION_DAYS (default 30). */
  inboundRetentionDays?: number;
  /** Between rounds; the first round runs at start. */
  intervalMs?: number;
  /** Between merges of the search index's pending entries (default 1 s). */
  pendingMergeMs?: number;
}

export interface Housekeeping {
  /** Runs a round now (tests); answers the rows deleted by sweep. */
  round(): Promise<Record<string, number>>;
  stop(): Promise<void>;
}

export function startHousekeeping(opts: HousekeepingOptions): Housekeeping {
  const { knex, log } = opts;
  let partitionsCheckedAt = 0;
  const sweeps: Record<string, () => Promise<number>> = {
    trackingWindows: () => pruneEventWindows(knex, opts.eventWindowMs),
    idempotencyKeys: () => purgeExpiredIdempotencyKeys(knex),
    loginFailures: () => pruneLoginFailures(knex),
    sessions: () => pruneSessions(knex, opts.sessionIdleMinutes ?? loadSessionConfig({}).idleMinutes),
    authTokens: () => pruneTokens(knex),
    loginChallenges: () => pruneLoginChallenges(knex),
    inboundMessages: () => pruneInbound(knex, opts.inboundRetentionDays ?? 30),
    partitionsAhead: async () => {
      if (Date.now() - partitionsCheckedAt < 10 * 60_000) return 0;
      partitionsCheckedAt = Date.now();
      return (await ensurePartitions(knex)).length;
    },
  };
  async function round(): Promise<Record<string, number>> {
    const deleted: Record<string, number> = {};
    for (const [name, sweep] of Object.entries(sweeps)) {
      try {
        deleted[name] = await sweep();
      } catch (err) {
        log.warn({ err: (err as Error).message, sweep: name }, 'housekeeping sweep failed; next round retries');
      }
    }
    if (Object.values(deleted).some((n) => n > 0)) log.debug({ deleted }, 'housekeeping');
    return deleted;
  }
  const state = loopState();
  const loop = (async () => {
    while (!state.stopping) {
      await round();
      if (!state.stopping) await state.nap(opts.intervalMs ?? 60_000);
    }
  })();
  const merging = loopState();
  const merges = (async () => {
    while (!merging.stopping) {
      await mergePendingEntries(knex).catch((err: Error) => log.warn({ err: err.message }, 'could not merge the search index\'s pending entries; next round retries'));
      if (!merging.stopping) await merging.nap(opts.pendingMergeMs ?? 1_000);
    }
  })();
  return {
    round,
    stop: async () => {
      state.stopping = true;
      merging.stopping = true;
      state.wake?.();
      merging.wake?.();
      await Promise.all([loop, merges]);
    },
  };
}
