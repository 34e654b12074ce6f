import type { Knex } from 'knex';
import { notFound } from '../core/errors';
import { login, type LoginOutcome } from './login';
import { warmPasswords } from './passwords';
import { endSession, endSessionByToken, endUserSession, listSessions, type SessionInfo, type SessionLifetimes } from './sessions';
import type { ThrottleLimits } from './throttle';
import { membershipsOf, type Membership } from './users';

/** What the /auth routes call (api/routes/auth.ts): people's logins and sessions, bound to the database and settings. */
export function peopleService(deps: { knex: Knex; sessions: SessionLifetimes & ThrottleLimits }) {
  const { knex, sessions } = deps;
  warmPasswords();
  return {
    lifetimes: sessions,
    /** A login; the session the browser had before (if any) ends, so that a login never keeps an old id alive. */
    async login(input: { email: string; password: string; address: string; userAgent?: string; previousToken?: string }): Promise<LoginOutcome> {
      const outcome = await login(knex, input, sessions);
      if (!('refused' in outcome) && input.previousToken) await endSessionByToken(knex, input.previousToken);
      return outcome;
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
