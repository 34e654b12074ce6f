import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { Secret, TOTP } from 'otpauth';
import { conflict, invalid } from '../core/errors';
import { seal, unseal } from '../core/sealed';
import { deleteInBatches } from '../db/prune';
import { newToken, tokenHash } from './tokens';

/**
 * TOTP two-factor (issue 27) through `otpauth`: RFC 6238 with SHA-1, 6 digits and a 30 s step (what every
 * authenticator app reads from an otpauth:// URI), a code accepted from the step before to the step after (clocks
 * drift), and each step at most once: the step of an accepted code is written with a condition that it is later than
 * the last one, in one statement, so two requests racing with the same code cannot both pass.
 *
 * The secret is sealed at rest (core/sealed.ts), bound to its user. Recovery codes are ten random codes shown once,
 * stored as SHA-256 (they carry 80 random bits: no slow hash needed), each removed by the statement that accepts it.
 */

const PURPOSE = 'two-factor secret';
const PERIOD = 30;
const WINDOW = 1;
export const RECOVERY_CODES = 10;
/** How long the password step of a two-factor login stays good for its second step. */
export const CHALLENGE_MINUTES = 5;

const totpOf = (secret: string, label = '') =>
  new TOTP({ issuer: 'Herald', label, algorithm: 'SHA1', digits: 6, period: PERIOD, secret: Secret.fromBase32(secret) });

/** A recovery code as typed: case, spaces and dashes do not matter. */
const normalRecovery = (code: string) => code.replace(/[\s-]/g, '').toLowerCase();

/** Ten characters of base32 (lower-case, no padding) in two groups of five: easy to copy from paper. */
function newRecoveryCode(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  const bytes = randomBytes(10);
  const chars = [...bytes].map((b) => alphabet[b & 31]).join('');
  return `${chars.slice(0, 5)}-${chars.slice(5)}`;
}

export interface TwoFactorStatus { enabled: boolean }

export async function twoFactorStatus(knex: Knex, userId: string): Promise<TwoFactorStatus> {
  const row = await knex('two_factor').where('user_id', userId).first('enabled_at');
  return { enabled: Boolean(row?.enabled_at) };
}

/**
 * Starts (or restarts) an enrolment: a fresh secret, sealed, not enabled until a code confirms it. A user whose
 * two-factor is on must turn it off first: starting again would let a stolen session replace the second factor.
 */
export async function startEnrolment(knex: Knex, secretKey: Buffer, user: { id: string; email: string }): Promise<{ secret: string; uri: string }> {
  const secret = new Secret({ size: 20 }).base32;
  const sealed = seal(secretKey, PURPOSE, user.id, secret);
  const { rows } = await knex.raw(`INSERT INTO two_factor (user_id, secret_sealed) VALUES (?, ?)
    ON CONFLICT (user_id) DO UPDATE SET secret_sealed = EXCLUDED.secret_sealed, last_step = NULL, recovery_hashes = '{}', created_at = now()
      WHERE two_factor.enabled_at IS NULL
    RETURNING user_id`, [user.id, sealed]);
  if (rows.length === 0) throw conflict('Two-factor is already on', 'Turn it off first (DELETE /auth/two-factor) to enrol another device.');
  return { secret, uri: totpOf(secret, user.email).toString() };
}

/**
 * Checks a code against the user's secret and, when it is good, records its step so it never passes again. Answers
 * false for a wrong, reused or malformed code, or when the user has no secret (pending ones only with `pending`).
 */
async function acceptCode(knex: Knex, secretKey: Buffer, userId: string, code: string, pending: boolean): Promise<boolean> {
  if (!/^\d{6}$/.test(code)) return false;
  const row = await knex('two_factor').where('user_id', userId).first('secret_sealed', 'enabled_at');
  if (!row || Boolean(row.enabled_at) === pending) return false;
  const secret = unseal(secretKey, PURPOSE, userId, row.secret_sealed);
  const now = Date.now();
  const delta = totpOf(secret).validate({ token: code, timestamp: now, window: WINDOW });
  if (delta === null) return false;
  const step = Math.floor(now / 1000 / PERIOD) + delta;
  const { rowCount } = await knex.raw('UPDATE two_factor SET last_step = ? WHERE user_id = ? AND (last_step IS NULL OR last_step < ?)', [step, userId, step]);
  return rowCount > 0;
}

/** Turns two-factor on with the first good code of the pending secret; answers the recovery codes, shown this once. */
export async function confirmEnrolment(knex: Knex, secretKey: Buffer, userId: string, code: string): Promise<{ recoveryCodes: string[] }> {
  const status = await knex('two_factor').where('user_id', userId).first('enabled_at');
  if (!status) throw conflict('No two-factor enrolment was started', 'POST /auth/two-factor first, then confirm with a code from the app.');
  if (status.enabled_at) throw conflict('Two-factor is already on', 'Turn it off first (DELETE /auth/two-factor) to enrol another device.');
  if (!(await acceptCode(knex, secretKey, userId, code, true))) {
    throw invalid([{ field: 'code', message: 'code is not the current code of the authenticator app', code: 'invalid' }],
      'Type the 6 digits the app shows now; check that the device\'s clock is right.');
  }
  const recoveryCodes = Array.from({ length: RECOVERY_CODES }, newRecoveryCode);
  await knex.raw('UPDATE two_factor SET enabled_at = now(), recovery_hashes = ? WHERE user_id = ? AND enabled_at IS NULL',
    [recoveryCodes.map((c) => tokenHash(normalRecovery(c))), userId]);
  return { recoveryCodes };
}

/** A code of the user's enabled two-factor, or (with `recovery`) one of their recovery codes, spent by this check. */
export async function checkSecondFactor(knex: Knex, secretKey: Buffer, userId: string, proof: { code?: string; recoveryCode?: string }): Promise<boolean> {
  if (proof.code !== undefined) return acceptCode(knex, secretKey, userId, proof.code, false);
  if (proof.recoveryCode === undefined) return false;
  const hash = tokenHash(normalRecovery(proof.recoveryCode));
  const { rowCount } = await knex.raw(`UPDATE two_factor SET recovery_hashes = array_remove(recovery_hashes, ?::bytea)
    WHERE user_id = ? AND enabled_at IS NOT NULL AND ?::bytea = ANY(recovery_hashes)`, [hash, userId, hash]);
  return rowCount > 0;
}

/** Turns two-factor off (the secret and recovery codes are deleted); false when it was not on. */
export async function disableTwoFactor(knex: Knex, userId: string): Promise<boolean> {
  const { rowCount } = await knex.raw('DELETE FROM two_factor WHERE user_id = ?', [userId]);
  return rowCount > 0;
}

/** The password step of a two-factor login: a single-use token for the second step, stored hashed, short-lived. */
export async function newChallenge(knex: Knex, userId: string): Promise<{ challenge: string; expiresAt: Date }> {
  const { token, hash } = newToken();
  const { rows } = await knex.raw(`INSERT INTO login_challenges (token_hash, user_id, expires_at)
    VALUES (?, ?, now() + make_interval(mins => ?)) RETURNING expires_at AS "expiresAt"`, [hash, userId, CHALLENGE_MINUTES]);
  return { challenge: token, expiresAt: rows[0].expiresAt };
}

/** The user (and email, the throttle's account key) of a live challenge; undefined when unknown or expired. */
export async function challengeUser(knex: Knex, challenge: string): Promise<{ userId: string; email: string } | undefined> {
  const { rows } = await knex.raw(`SELECT c.user_id AS "userId", u.email FROM login_challenges c JOIN users u ON u.id = c.user_id
    WHERE c.token_hash = ? AND c.expires_at > now() AND NOT u.disabled`, [tokenHash(challenge)]);
  return rows[0];
}

/** Spends a challenge: true for the one request that deleted it (two racing second steps cannot both open a session). */
export async function spendChallenge(knex: Knex, challenge: string): Promise<boolean> {
  const { rowCount } = await knex.raw('DELETE FROM login_challenges WHERE token_hash = ? AND expires_at > now()', [tokenHash(challenge)]);
  return rowCount > 0;
}

/** Deletes expired challenges in short batches (worker/housekeeping.ts). */
export function pruneLoginChallenges(knex: Knex): Promise<number> {
  return deleteInBatches(knex, 'login_challenges', 'expires_at < now()', []);
}
