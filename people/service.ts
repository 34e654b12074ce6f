import type { Knex } from 'knex';
import { notFound } from '../core/errors';
import { completeLogin, login, type LoginOutcome } from './login';
import { passwordMatches, warmPasswords } from './passwords';
import { endSession, endSessionByToken, endUserSession, listSessions, type SessionInfo, type SessionLifetimes } from './sessions';
import { accountKey, attemptSucceeded, beginAttempt, clientKey, type ThrottleLimits } from './throttle';
import { checkSecondFactor, confirmEnrolment, disableTwoFactor, startEnrolment, twoFactorStatus } from './twoFactor';
import { findUserByEmail, membershipsOf, type Membership } from './users';

/** What the /auth routes call (api/routes/auth.ts): people's logins and sessions, bound to the database and settings. */
export function peopleService(deps: { knex: Knex; secret: Buffer; sessions: SessionLifetimes & ThrottleLimits }) {
  const { knex, secret, sessions } = deps;
  warmPasswords();
  return {
    lifetimes: sessions,
    /** A login; the session the browser had before (if any) ends, so that a login never keeps an old id alive. */
    async login(input: { email: string; password: string; address: string; userAgent?: string; previousToken?: string }): Promise<LoginOutcome> {
      const outcome = await login(knex, input, sessions);
      // Only a session opened replaces the old one: a password step that awaits its code leaves the browser as it was.
      if ('session' in outcome && input.previousToken) await endSessionByToken(knex, input.previousToken);
      return outcome;
    },
    /** The second step of a two-factor login; as login, it ends the session the browser had. */
    async completeLogin(input: { challenge: string; code?: string; recoveryCode?: string; address: string; userAgent?: string; previousToken?: string }) {
      const outcome = await completeLogin(knex, secret, input, sessions);
      if (!('refused' in outcome) && input.previousToken) await endSessionByToken(knex, input.previousToken);
      return outcome;
    },
    twoFactor: {
      status: (userId: string) => twoFactorStatus(knex, userId),
      start: (user: { id: string; email: string }) => startEnrolment(knex, secret, user),
      confirm: (userId: string, code: string) => confirmEnrolment(knex, secret, userId, code),
      /**
       * Turns two-factor off, proven by the password or a current code (a session alone is not enough: a browser
       * left open must not be able to drop the second factor). Each attempt counts in the login throttle, as a login.
       */
      async disable(user: { id: string; email: string }, proof: { password?: string; code?: string }, address: string):
        Promise<{ refused?: undefined } | { refused: 'credentials' } | { refused: 'not_enabled' } | { refused: 'throttled'; wait: number }> {
        const keys = { account: accountKey(user.email), address: clientKey(address) };
        const { wait } = await beginAttempt(knex, keys, sessions);
        if (wait !== undefined) return { refused: 'throttled', wait };
        if (!(await twoFactorStatus(knex, user.id)).enabled) return { refused: 'not_enabled' };
        const good = proof.password !== undefined
          ? await passwordMatches(proof.password, (await findUserByEmail(knex, user.email))?.passwordHash)
          : await checkSecondFactor(knex, secret, user.id, { code: proof.code });
        if (!good) return { refused: 'credentials' };
        await attemptSucceeded(knex, keys);
        await disableTwoFactor(knex, user.id);
        return {};
      },
    },
    logout: (sessionId: string) => endSession(knex, sessionId),
    memberships: (userId: string): Promise<Membership[]> => membershipsOf(knex, userId),
    sessions: (userId: string): Promise<SessionInfo[]> => listSessions(knex, userId, sessions),
    /** Ends one of the user's own sessions; another's id (or an ended one) is not found. */
    async endSession(userId: string, sessionId: string): Promise<void> {
      if (!(await endUserSession(knex, userId, sessionId))) throw notFound('Session');
    },
  };
}
