import type { Knex } from 'knex';
import { passwordMatches } from './passwords';
import { startSession, type SessionLifetimes } from './sessions';
import { accountKey, attemptSucceeded, beginAttempt, clientKey, type ThrottleLimits } from './throttle';
import { findUserByEmail, membershipsOf, type Membership, type User } from './users';

export type LoginOutcome =
  | { user: User; memberships: Membership[]; session: { id: string; token: string; createdAt: Date; expiresAt: Date } }
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
  await attemptSucceeded(knex, keys);
  const session = await startSession(knex, user.id, config, { address: input.address, userAgent: input.userAgent });
  const { passwordHash: _hash, ...shown } = user;
  return { user: shown, memberships: await membershipsOf(knex, user.id), session };
}
