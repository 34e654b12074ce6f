import type { Membership, User } from '../../people/users';
import { clearedOidcFlowCookie, clearedSessionCookie, OIDC_FLOW_COOKIE, oidcFlowCookie, sessionCookie, sessionTokenOf } from '../cookies';
import { ApiError, conflict } from '../errors';
import { noContent, ok } from '../openapi/operations';
import { deleted, personRoute, rawRoute, reply } from '../route';
import { FLOW_SECONDS } from '../../people/oidc';
import type { RouterContext } from '@koa/router';
import * as A from '../schemas/answers';
import {
  loginSchema, twoFactorConfirmSchema, twoFactorDisableSchema, twoFactorLoginSchema,
  type LoginBody, type TwoFactorConfirmBody, type TwoFactorDisableBody, type TwoFactorLoginBody,
} from '../schemas/auth';

const SET_COOKIE = { 'Set-Cookie': 'herald_session: HttpOnly; Path=/; SameSite=Lax; Secure when PUBLIC_URL is https.' };

/** Where a failed single sign-on lands: the console's login page, told only a code (people/oidc.ts OidcRefusal). */
function toLoginPage(ctx: RouterContext, secure: boolean, error: string): void {
  ctx.set('Set-Cookie', clearedOidcFlowCookie(secure));
  redirect(ctx, `/app/login?error=${encodeURIComponent(error)}`);
}

function redirect(ctx: RouterContext, location: string): void {
  ctx.set('Cache-Control', 'no-store');
  ctx.status = 302;
  ctx.set('Location', location);
  ctx.body = '';
}

const signedIn = (user: User, projects: Membership[], session: { id: string; createdAt: Date; expiresAt: Date }, twoFactor: { enabled: boolean }) => ({
  user: { id: user.id, email: user.email, name: user.name, operator: user.operator },
  operator: user.operator,
  projects,
  session: { id: session.id, createdAt: session.createdAt.toISOString(), expiresAt: session.expiresAt.toISOString() },
  twoFactor,
});

/** A refused login (either step): the throttle's 429 with Retry-After, else one 401 that tells nothing apart. */
function loginRefused(outcome: { refused: 'credentials' } | { refused: 'throttled'; wait: number }, message: string, suggestion: string): never {
  if (outcome.refused === 'throttled') {
    throw new ApiError(429, 'LOGIN_THROTTLED', `Too many failed logins: retry in ${outcome.wait} seconds`, {
      suggestion: 'Wait, then try again; if you forgot your password, ask for a reset.', headers: { 'Retry-After': String(outcome.wait) },
    });
  }
  throw new ApiError(401, 'INVALID_CREDENTIALS', message, { suggestion });
}

/** A session opened by either step of a login: its answer and its cookie. */
function sessionReply(outcome: { user: User; memberships: Membership[]; session: { token: string; id: string; createdAt: Date; expiresAt: Date } }, twoFactor: boolean, secureCookies: boolean) {
  const { session, user, memberships } = outcome;
  const maxAge = (session.expiresAt.getTime() - Date.now()) / 1000;
  return { ...reply(signedIn(user, memberships, session, { enabled: twoFactor })), headers: { 'Set-Cookie': sessionCookie(session.token, maxAge, secureCookies) } };
}

const PROVE = 'Send the 6 digits of your authenticator app, or one of your recovery codes.';

/**
 * People signing in (issue 27): the login sets the `herald_session` cookie (api/cookies.ts); with it, every project
 * route is open to the person in the project named by `Herald-Project`, as their role allows (api/middleware/auth.ts).
 */
export const authRoutes = [
  personRoute<'/auth/login', LoginBody, undefined, 'open'>({ operationId: 'login', method: 'post', path: '/auth/login', summary: 'Sign in', tag: 'People', access: 'open', people: true,
    description: 'Checks the email and password and opens a session: a new `herald_session` cookie at every login. A wrong password, an unknown address and a disabled account answer the same 401. '
      + 'Failed logins of an account and from an address are slowed and then locked (429 with Retry-After). A request with an `Origin` header must come from Herald\'s own origin.',
    body: loginSchema, answers: { 200: { description: 'Signed in (the user, their projects and the session), or, for an account with two-factor on, the challenge of the second step and no cookie.', data: A.loginAnswer, headers: SET_COOKIE } }, errors: [400, 401, 403, 413, 415, 429],
    async handle({ body, client, services }) {
      const outcome = await services.people.login({ ...body, address: client.address, userAgent: client.userAgent, previousToken: client.sessionToken });
      if ('refused' in outcome) loginRefused(outcome, 'Wrong email or password', 'Check both; an account may also be disabled by an operator.');
      // Two-factor on: no cookie yet; the second step trades the challenge and a code for the session.
      if ('twoFactor' in outcome) return reply({ twoFactorRequired: true, challenge: outcome.twoFactor.challenge, expiresAt: outcome.twoFactor.expiresAt.toISOString() });
      return sessionReply(outcome, false, client.secureCookies);
    } }),

  personRoute<'/auth/login/two-factor', TwoFactorLoginBody, undefined, 'open'>({ operationId: 'loginTwoFactor', method: 'post', path: '/auth/login/two-factor', summary: 'Sign in: the second factor', tag: 'People', access: 'open', people: true,
    description: 'The second step of a login for an account with two-factor on: the `challenge` answered by POST /auth/login (good for 5 minutes, used once) with a `code` of the authenticator app '
      + 'or a `recoveryCode` (each works once). Sets the `herald_session` cookie as a login does. A wrong code, a reused code and an unknown or expired challenge answer the same 401, '
      + 'and count in the login throttle of the account and the address (429 with Retry-After).',
    body: twoFactorLoginSchema, answers: { 200: { description: 'Signed in: the user, their projects and the session.', data: A.signedInAnswer, headers: SET_COOKIE } }, errors: [400, 401, 403, 413, 415, 429],
    async handle({ body, client, services }) {
      const outcome = await services.people.completeLogin({ ...body, address: client.address, userAgent: client.userAgent, previousToken: client.sessionToken });
      if ('refused' in outcome) loginRefused(outcome, 'Wrong or expired code', `${PROVE} A challenge lasts 5 minutes: sign in again when it has expired.`);
      return sessionReply(outcome, true, client.secureCookies);
    } }),

  personRoute({ operationId: 'logout', method: 'post', path: '/auth/logout', summary: 'Sign out', tag: 'People', access: 'session', people: true,
    description: 'Ends the session on the server (its cookie opens nothing from now on) and clears the cookie.',
    answers: { 204: { description: 'Signed out.', media: 'none', headers: SET_COOKIE } },
    async handle({ person, client, services }) {
      await services.people.logout(person.sessionId);
      return { ...deleted, headers: { 'Set-Cookie': clearedSessionCookie(client.secureCookies) } };
    } }),

  personRoute({ operationId: 'getSession', method: 'get', path: '/auth/session', summary: 'Who is signed in', tag: 'People', access: 'session', people: true,
    description: 'The person of the session, whether they are an operator and have two-factor on, and their projects with their role in each and whether it requires two-factor.',
    answers: ok('The person signed in.', A.signedInAnswer),
    async handle({ person, services }) {
      const user: User = { id: person.userId, email: person.email, name: person.name, operator: person.operator, disabled: false };
      const [projects, twoFactor] = await Promise.all([services.people.memberships(person.userId), services.people.twoFactor.status(person.userId)]);
      return reply(signedIn(user, projects, { id: person.sessionId, createdAt: person.createdAt, expiresAt: person.expiresAt }, twoFactor));
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

  personRoute({ operationId: 'startTwoFactor', method: 'post', path: '/auth/two-factor', summary: 'Start two-factor enrolment', tag: 'People', access: 'session', people: true,
    description: 'A fresh TOTP secret (RFC 6238: SHA-1, 6 digits, 30 s) as base32 and as an `otpauth://` URI for a QR code. Stored encrypted and not on until POST /auth/two-factor/confirm; '
      + 'starting again replaces a pending secret. 409 when two-factor is already on.',
    answers: ok('The secret to add to an authenticator app.', A.twoFactorEnrolmentAnswer), errors: [409],
    async handle({ person, services }) {
      return reply(await services.people.twoFactor.start({ id: person.userId, email: person.email }));
    } }),

  personRoute<'/auth/two-factor/confirm', TwoFactorConfirmBody>({ operationId: 'confirmTwoFactor', method: 'post', path: '/auth/two-factor/confirm', summary: 'Turn two-factor on', tag: 'People', access: 'session', people: true,
    description: 'Turns two-factor on with one current code of the pending secret, and answers ten single-use recovery codes: shown in this answer only (stored hashed). '
      + 'From now on a login asks for a code after the password.',
    body: twoFactorConfirmSchema, answers: ok('Two-factor is on: the recovery codes.', A.recoveryCodesAnswer), errors: [400, 409, 413, 415],
    async handle({ person, body, services }) {
      return reply(await services.people.twoFactor.confirm(person.userId, body.code));
    } }),

  personRoute<'/auth/two-factor', TwoFactorDisableBody>({ operationId: 'disableTwoFactor', method: 'delete', path: '/auth/two-factor', summary: 'Turn two-factor off', tag: 'People', access: 'session', people: true,
    description: 'Turns two-factor off (its secret and recovery codes are deleted), proven by the `password` or a current `code`: a session alone is not enough. '
      + 'Failed proofs count in the login throttle (429 with Retry-After). 409 when two-factor is not on.',
    body: twoFactorDisableSchema, answers: noContent('Two-factor is off.'), errors: [400, 401, 409, 413, 415, 429],
    async handle({ person, body, services, client }) {
      const outcome = await services.people.twoFactor.disable({ id: person.userId, email: person.email }, body, client.address);
      if (outcome.refused === 'not_enabled') throw conflict('Two-factor is not on', 'POST /auth/two-factor to enrol.');
      if (outcome.refused) loginRefused(outcome, 'Wrong password or code', 'Send your password, or the 6 digits your authenticator app shows now.');
      return deleted;
    } }),

  personRoute({ operationId: 'listSignInProviders', method: 'get', path: '/auth/providers', summary: 'Ways to sign in', tag: 'People', access: 'open', people: true,
    description: 'What the console\'s login page offers besides the password: single sign-on with OpenID Connect when the operator configured it (OIDC_ISSUER).',
    answers: ok('The ways to sign in.', A.providersAnswer),
    async handle({ services }) {
      const { oidc } = services;
      return reply({ oidc: { enabled: oidc.enabled, loginUrl: oidc.enabled ? oidc.loginPath : null } });
    } }),

  rawRoute({ operationId: 'startOidcLogin', method: 'get', path: '/auth/oidc/login', summary: 'Sign in with single sign-on (OpenID Connect)', tag: 'People', access: 'open',
    description: 'Sends the browser to the OpenID Connect provider (authorization code with PKCE S256, `state` and `nonce`), keeping the flow in a short-lived '
      + '`herald_oidc` cookie (HttpOnly, SameSite=Lax, sealed). SSO off or the provider unreachable: to `/app/login?error=unavailable`.',
    answers: { 302: { description: 'To the provider\'s authorization endpoint, or to `/app/login?error=<code>`.', media: 'none',
      headers: { Location: 'The provider\'s authorization URL.', 'Set-Cookie': 'herald_oidc: HttpOnly; Path=/auth/oidc; SameSite=Lax; 10 minutes.' } } },
    async serve(ctx, { oidc, secureCookies }) {
      if (!oidc.enabled) return toLoginPage(ctx, secureCookies, 'unavailable');
      const started = await oidc.start();
      if ('refused' in started) return toLoginPage(ctx, secureCookies, started.refused);
      ctx.set('Set-Cookie', oidcFlowCookie(started.flow, FLOW_SECONDS, secureCookies));
      redirect(ctx, started.url);
    } }),

  rawRoute({ operationId: 'finishOidcLogin', method: 'get', path: '/auth/oidc/callback', summary: 'Single sign-on callback (OpenID Connect)', tag: 'People', access: 'open',
    description: 'Where the provider sends the browser back. Checks `state` against the flow cookie, exchanges the code with the PKCE verifier, checks the ID token '
      + '(issuer, audience, nonce, expiry) and that the provider verified the address (`email_verified`), finds the account of that address (or creates one '
      + 'without projects when OIDC_ALLOW_SIGNUP is true) and opens a session as `POST /auth/login` does. Any failure lands on `/app/login?error=<code>`: '
      + '`state`, `provider`, `email_unverified`, `no_account` (also a disabled account) or `unavailable`.',
    answers: { 302: { description: 'Signed in: to `/app/`, with the session cookie; else to `/app/login?error=<code>`.', media: 'none',
      headers: { Location: '`/app/` or `/app/login?error=<code>`.', ...SET_COOKIE } } },
    async serve(ctx, { oidc, secureCookies }) {
      const outcome = await oidc.finish({ query: ctx.querystring, flow: ctx.cookies.get(OIDC_FLOW_COOKIE) || undefined, address: ctx.ip,
        userAgent: ctx.get('user-agent') || undefined, previousToken: sessionTokenOf(ctx) });
      if ('refused' in outcome) return toLoginPage(ctx, secureCookies, outcome.refused);
      const maxAge = (outcome.session.expiresAt.getTime() - Date.now()) / 1000;
      ctx.set('Set-Cookie', [clearedOidcFlowCookie(secureCookies), sessionCookie(outcome.session.token, maxAge, secureCookies)]);
      redirect(ctx, '/app/');
    } }),
];
