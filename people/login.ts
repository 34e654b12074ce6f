import type { Knex } from 'knex';
import { passwordMatches } from './passwords';
import { startSession, type SessionLifetimes } from './sessions';
import { accountKey, attemptSucceeded, beginAttempt, clientKey, type ThrottleLimits } from './throttle';
import { challengeUser, checkSecondFactor, newChallenge, spendChallenge, twoFactorStatus } from './twoFactor';
import { findUserByEmail, membershipsOf, type Membership, type User } from './users';

export type LoginOutcome =
  | { user: User; memberships: Membership[]; session: { id: string; token: string; createdAt: Date; expiresAt: Date } }
  /** The password was right and the account has two-factor on: the second step (completeLogin) trades this for a session. */
  | { twoFactor: { challenge: string; expiresAt: Date } }
  /** Wrong password, unknown address, disabled account or no password: one refusal, told apart by nothing. */
  | { refused: 'credentials' }
  /** Too many failed attempts of this account or from this address: retry after `wait` seconds. */
  | { refused: 'throttled'; wait: number };

/**
 * A login (POST /auth/login): counted first (people/throttle.ts), then the password checked, always with the same
 * work: an unknown address or an account without a password verifies against a dummy hash (people/passwords.ts), and a
 * disabled account's password is verified too, so that the three refusals take the same time and answer the same.
 * A success opens a new session: a fresh token at every login.
 */
export async function login(knex: Knex, input: { email: string; password: string; address: string; userAgent?: string },
  config: SessionLifetimes & ThrottleLimits): Promise<LoginOutcome> {
  const keys = { account: accountKey(input.email), address: clientKey(input.address) };
  const { wait } = await beginAttempt(knex, keys, config);
  if (wait !== undefined) return { refused: 'throttled', wait };
  const user = await findUserByEmail(knex, input.email);
  const matches = await passwordMatches(input.password, user?.passwordHash);
  if (!user || !matches || user.disabled) return { refused: 'credentials' };
  // The account's count is NOT cleared by the password alone when a second factor is due: otherwise whoever knows the
  // password could clear it between every few guesses of the code. The second step's success clears it.
  if ((await twoFactorStatus(knex, user.id)).enabled) return { twoFactor: await newChallenge(knex, user.id) };
  await attemptSucceeded(knex, keys);
  return signIn(knex, user, input, config);
}

async function signIn(knex: Knex, user: User & { passwordHash?: string | null }, client: { address: string; userAgent?: string }, config: SessionLifetimes):
  Promise<Extract<LoginOutcome, { session: unknown }>> {
  const session = await startSession(knex, user.id, config, { address: client.address, userAgent: client.userAgent });
  const { passwordHash: _hash, ...shown } = user;
  return { user: shown, memberships: await membershipsOf(knex, user.id), session };
}

/**
 * The second step of a two-factor login (POST /auth/login/two-factor): the challenge of the password step and a code
 * of the authenticator app, or a recovery code. Every attempt counts in the login throttle of the account and the
 * address, as a password does, so codes cannot be guessed faster than passwords. An unknown or expired challenge is
 * refused as a wrong code is. A success spends the challenge (once) and opens a session as a login does.
 */
export async function completeLogin(knex: Knex, secretKey: Buffer,
  input: { challenge: string; code?: string; recoveryCode?: string; address: string; userAgent?: string },
  config: SessionLifetimes & ThrottleLimits): Promise<Exclude<LoginOutcome, { twoFactor: unknown }>> {
  const owner = await challengeUser(knex, input.challenge);
  if (!owner) return { refused: 'credentials' };
  const keys = { account: accountKey(owner.email), address: clientKey(input.address) };
  const { wait } = await beginAttempt(knex, keys, config);
  if (wait !== undefined) return { refused: 'throttled', wait };
  if (!(await checkSecondFactor(knex, secretKey, owner.userId, input))) return { refused: 'credentials' };
  if (!(await spendChallenge(knex, input.challenge))) return { refused: 'credentials' };
  await attemptSucceeded(knex, keys);
  const user = await findUserByEmail(knex, owner.email);
  if (!user || user.disabled) return { refused: 'credentials' };
  return signIn(knex, user, input, config);
}
