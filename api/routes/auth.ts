import type { Membership, User } from '../../people/users';
import { clearedSessionCookie, sessionCookie } from '../cookies';
import { ApiError } from '../errors';
import { noContent, ok } from '../openapi/operations';
import { deleted, personRoute, reply } from '../route';
import * as A from '../schemas/answers';
import { loginSchema, type LoginBody } from '../schemas/auth';

const SET_COOKIE = { 'Set-Cookie': 'herald_session: HttpOnly; Path=/; SameSite=Lax; Secure when PUBLIC_URL is https.' };

const signedIn = (user: User, projects: Membership[], session: { id: string; createdAt: Date; expiresAt: Date }) => ({
  user: { id: user.id, email: user.email, name: user.name, operator: user.operator },
  operator: user.operator,
  projects,
  session: { id: session.id, createdAt: session.createdAt.toISOString(), expiresAt: session.expiresAt.toISOString() },
});

/**
 * People signing in (issue 27): the login sets the `herald_session` cookie (api/cookies.ts); with it, every project
 * route is open to the person in the project named by `Herald-Project`, as their role allows (api/middleware/auth.ts).
 */
export const authRoutes = [
  personRoute<'/auth/login', LoginBody, undefined, 'open'>({ operationId: 'login', method: 'post', path: '/auth/login', summary: 'Sign in', tag: 'People', access: 'open', people: true,
    description: 'Checks the email and password and opens a session: a new `herald_session` cookie at every login. A wrong password, an unknown address and a disabled account answer the same 401. '
      + 'Failed logins of an account and from an address are slowed and then locked (429 with Retry-After). A request with an `Origin` header must come from Herald\'s own origin.',
    body: loginSchema, answers: { 200: { description: 'Signed in: the user, their projects and the session.', data: A.signedInAnswer, headers: SET_COOKIE } }, errors: [400, 401, 403, 413, 415, 429],
    async handle({ body, client, services }) {
      const outcome = await services.people.login({ ...body, address: client.address, userAgent: client.userAgent, previousToken: client.sessionToken });
      if ('refused' in outcome) {
        if (outcome.refused === 'throttled') {
          throw new ApiError(429, 'LOGIN_THROTTLED', `Too many failed logins: retry in ${outcome.wait} seconds`, {
            suggestion: 'Wait, then try again; if you forgot your password, ask for a reset.', headers: { 'Retry-After': String(outcome.wait) },
          });
        }
        throw new ApiError(401, 'INVALID_CREDENTIALS', 'Wrong email or password', { suggestion: 'Check both; an account may also be disabled by an operator.' });
      }
      const { session, user, memberships } = outcome;
      const maxAge = (session.expiresAt.getTime() - Date.now()) / 1000;
      return { ...reply(signedIn(user, memberships, session)), headers: { 'Set-Cookie': sessionCookie(session.token, maxAge, client.secureCookies) } };
    } }),

  personRoute({ operationId: 'logout', method: 'post', path: '/auth/logout', summary: 'Sign out', tag: 'People', access: 'session', people: true,
    description: 'Ends the session on the server (its cookie opens nothing from now on) and clears the cookie.',
    answers: { 204: { description: 'Signed out.', media: 'none', headers: SET_COOKIE } },
    async handle({ person, client, services }) {
      await services.people.logout(person.sessionId);
      return { ...deleted, headers: { 'Set-Cookie': clearedSessionCookie(client.secureCookies) } };
    } }),

  personRoute({ operationId: 'getSession', method: 'get', path: '/auth/session', summary: 'Who is signed in', tag: 'People', access: 'session', people: true,
    description: 'The person of the session, whether they are an operator, and their projects with their role in each.',
    answers: ok('The person signed in.', A.signedInAnswer),
    async handle({ person, services }) {
      const user: User = { id: person.userId, email: person.email, name: person.name, operator: person.operator, disabled: false };
      return reply(signedIn(user, await services.people.memberships(person.userId), { id: person.sessionId, createdAt: person.createdAt, expiresAt: person.expiresAt }));
    } }),

  personRoute({ operationId: 'listSessions', method: 'get', path: '/auth/sessions', summary: 'List your sessions', tag: 'People', access: 'session', people: true,
    description: 'The live sessions of the person signed in (every browser they signed in from), newest first; `current` marks this one.',
    answers: ok('The sessions.', A.sessionListAnswer),
    async handle({ person, services }) {
      const items = (await services.people.sessions(person.userId)).map((s) => ({
        id: s.id, createdAt: s.createdAt.toISOString(), lastSeenAt: s.lastSeenAt.toISOString(), expiresAt: s.expiresAt.toISOString(),
        address: s.address, userAgent: s.userAgent, current: s.id === person.sessionId,
      }));
      return reply({ items });
    } }),

  personRoute({ operationId: 'deleteSession', method: 'delete', path: '/auth/sessions/:id', summary: 'End one of your sessions', tag: 'People', access: 'session', people: true,
    description: 'Ends one of your own sessions (a browser left signed in elsewhere). Another person\'s session id is not found.',
    answers: noContent('Ended.'), errors: [404],
    async handle({ person, params, services }) {
      await services.people.endSession(person.userId, params.id);
      return deleted;
    } }),
];
