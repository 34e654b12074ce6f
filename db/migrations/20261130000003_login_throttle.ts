import type { Knex } from 'knex';

/**
 * Failed logins, counted in PostgreSQL so that every API process shares the count (issue 27): one row per account
 * (`account:<email>`, whether or not the account exists, so that a lock says nothing of which addresses have one) and
 * per client address (`address:<addressKey>`). people/throttle.ts reads both rows before a password is checked and
 * writes both after a failure, each in one statement.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE TABLE login_failures (
    -- Serves every login's read and write: WHERE key = ANY(?)
    key text PRIMARY KEY,
    -- Attempts not (yet) followed by a success; an attempt more than an hour after the last starts the count again.
    failures integer NOT NULL,
    last_failure_at timestamptz NOT NULL DEFAULT now(),
    -- No login of this account (or from this address) is checked before then: the growing delay, or the lock.
    locked_until timestamptz,
    -- Whether the last attempt was let through (written by the attempt's own upsert, read by its RETURNING).
    admitted boolean NOT NULL DEFAULT true
  )`);
  // Serves the sweep of rows whose last failure is past the hour (people/throttle.ts pruneLoginFailures).
  await knex.raw('CREATE INDEX login_failures_last_failure_idx ON login_failures (last_failure_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS login_failures');
}
