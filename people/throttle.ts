import type { Knex } from 'knex';
import { addressKey } from '../core/addresses';
import { deleteInBatches } from '../db/prune';

/**
 * Failed logins, slowed and then locked per account and per client address (issue 27), counted in PostgreSQL
 * (table login_failures) so that every API process shares the counts.
 *
 * Every attempt is counted BEFORE its password is checked, by one upsert that also says whether it may go on: an
 * attacker's parallel guesses are serialised on the row and each meets the lock its predecessor set, instead of all
 * passing a read made before any failure was written. A success then takes its own attempt back. Beyond
 * `free` attempts within the hour, each one sets a wait before the next: 1 s, 2 s, 4 s … at most 15 minutes. A locked
 * attempt changes no count and is told when to retry. The account's key is its (lower-cased) address whether or not
 * an account has it, so a lock says nothing of which addresses have accounts.
 */

export interface ThrottleLimits {
  freeFailuresPerAccount: number;
  freeFailuresPerAddress: number;
}

/** After this long without an attempt, the counts start again. */
const WINDOW = "interval '1 hour'";
/** The longest wait between attempts. */
const MAX_WAIT_SECONDS = 900;

export const accountKey = (email: string) => `account:${email.trim().toLowerCase()}`;
export const clientKey = (address: string) => `address:${addressKey(address)}`;

/** Counts one attempt; `wait` (seconds) when it must not go on, the account or the address being locked. */
export async function beginAttempt(knex: Knex, keys: { account: string; address: string }, limits: ThrottleLimits): Promise<{ wait?: number }> {
  const free = `CASE WHEN f.key LIKE 'account:%' THEN ${Math.trunc(limits.freeFailuresPerAccount)} ELSE ${Math.trunc(limits.freeFailuresPerAddress)} END`;
  const locked = 'f.locked_until > now()';
  const failures = `CASE WHEN f.last_failure_at < now() - ${WINDOW} THEN 1 ELSE f.failures + 1 END`;
  const { rows } = await knex.raw(`INSERT INTO login_failures AS f (key, failures, last_failure_at, locked_until, admitted)
    SELECT k, 1, now(), CASE WHEN 1 > (CASE WHEN k LIKE 'account:%' THEN ${Math.trunc(limits.freeFailuresPerAccount)} ELSE ${Math.trunc(limits.freeFailuresPerAddress)} END)
      THEN now() + interval '1 second' END, true
    FROM unnest(?::text[]) AS t(k) ORDER BY k
    ON CONFLICT (key) DO UPDATE SET
      admitted = NOT COALESCE(${locked}, false),
      failures = CASE WHEN ${locked} THEN f.failures ELSE ${failures} END,
      last_failure_at = CASE WHEN ${locked} THEN f.last_failure_at ELSE now() END,
      locked_until = CASE WHEN ${locked} THEN f.locked_until
        WHEN ${failures} > ${free} THEN now() + make_interval(secs => LEAST(${MAX_WAIT_SECONDS}, power(2, ${failures} - ${free} - 1)))
        ELSE NULL END
    RETURNING admitted, CEIL(EXTRACT(EPOCH FROM (locked_until - now())))::int AS wait`, [[keys.account, keys.address]]);
  const refused = (rows as { admitted: boolean; wait: number | null }[]).filter((r) => !r.admitted);
  if (refused.length === 0) return {};
  return { wait: Math.max(1, ...refused.map((r) => r.wait ?? 1)) };
}

/** A success takes its attempt back: the account's count is cleared, the address's lowered by one (one statement). */
export async function attemptSucceeded(knex: Knex, keys: { account: string; address: string }): Promise<void> {
  await knex.raw(`WITH cleared AS (DELETE FROM login_failures WHERE key = ?)
    UPDATE login_failures SET failures = GREATEST(failures - 1, 0) WHERE key = ?`, [keys.account, keys.address]);
}

/**
 * Deletes the counts of those who have not tried for an hour (login_failures_last_failure_idx), in short batches
 * (db/prune.ts): the workers' housekeeping (worker/housekeeping.ts) runs it, so that guesses at many addresses leave
 * no table that grows without bound.
 */
export function pruneLoginFailures(knex: Knex): Promise<number> {
  return deleteInBatches(knex, 'login_failures', `last_failure_at < now() - ${WINDOW} AND (locked_until IS NULL OR locked_until < now())`, []);
}
