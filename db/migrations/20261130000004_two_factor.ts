import type { Knex } from 'knex';

/**
 * TOTP two-factor (issue 27): one row per user who started enrolling (people/twoFactor.ts). The secret is sealed with
 * the installation secret (core/sealed.ts), bound to its user, so a database dump yields no codes. `enabled_at` is
 * set by the first valid code; until then the row is a pending enrolment that does not change the login. `last_step`
 * is the TOTP step of the last code accepted: a code of that step or an earlier one is refused (no replay). Recovery
 * codes are random, so their SHA-256 is enough (no argon2); using one removes its hash in the same statement that
 * finds it, so it works once.
 *
 * login_challenges hold the password step of a two-factor login: a random token (stored as its SHA-256) that the
 * second step (POST /auth/login/two-factor) trades, with a code, for a session; deleted by that success, or useless
 * after `expires_at`.
 *
 * projects.require_two_factor: a project that refuses its members' sessions until they have two-factor on.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE TABLE two_factor (
    user_id uuid PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    secret_sealed bytea NOT NULL,
    enabled_at timestamptz,
    last_step bigint,
    recovery_hashes bytea[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now()
  )`);
  await knex.raw(`CREATE TABLE login_challenges (
    token_hash bytea PRIMARY KEY,
    user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    expires_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
  )`);
  // Serves the sweep of expired challenges.
  await knex.raw('CREATE INDEX login_challenges_expires_idx ON login_challenges (expires_at)');
  await knex.raw('ALTER TABLE projects ADD COLUMN require_two_factor boolean NOT NULL DEFAULT false');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE projects DROP COLUMN IF EXISTS require_two_factor');
  await knex.raw('DROP TABLE IF EXISTS login_challenges');
  await knex.raw('DROP TABLE IF EXISTS two_factor');
}
