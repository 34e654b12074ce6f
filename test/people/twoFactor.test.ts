import type { Server } from 'node:http';
import { Writable } from 'node:stream';
import { Secret, TOTP } from 'otpauth';
import pino from 'pino';
import request from 'supertest';
import { createApp } from '../../api/app';
import { createProject, type CreatedProject } from '../../projects/service';
import { pruneLoginChallenges } from '../../people/twoFactor';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { bearer, testAppDeps } from '../support/app';
import { answerChecker } from '../support/openapi';
import { cookieOf, ORIGIN, PASSWORD, person, signIn } from './support';

/**
 * TOTP two-factor (issue 27): enrolment and its confirmation, the two-step login, replays refused, recovery codes
 * once, wrong codes in the login throttle, turning it off, a project that requires it of its members' sessions (keys
 * unaffected), the secret sealed at rest, and nothing secret in the log.
 */
let db: TestDatabase;
let server: Server;
let project: CreatedProject;
const logged: string[] = [];
/** Checks an answer against the OpenAPI document. */
let check: (res: request.Response, method: string, path: string) => void;
const sessions = { idleMinutes: 720, maxDays: 14, freeFailuresPerAccount: 5, freeFailuresPerAddress: 50 };

beforeAll(async () => {
  db = await createTestDatabase();
  const log = pino({ level: 'debug' }, new Writable({ write(chunk, _enc, done) { logged.push(String(chunk)); done(); } }));
  server = createApp(testAppDeps(db.knex, { sessions, log })).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  project = await createProject('Two-factor project');
  const answers = answerChecker((await http().get('/openapi.json')).body);
  check = (res, method, path) => answers.check(method.toUpperCase(), path, res);
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  await db.close();
});

const http = () => request(server);
/** The code an authenticator app shows `steps` steps from now. */
const codeOf = (secret: string, steps = 0) => new TOTP({ secret: Secret.fromBase32(secret), period: 30, digits: 6, algorithm: 'SHA1' })
  .generate({ timestamp: Date.now() + steps * 30_000 });
/** The code of one 30-second step (its number since the epoch, as two_factor.last_step records it). */
const codeAt = (secret: string, step: number) => new TOTP({ secret: Secret.fromBase32(secret), period: 30, digits: 6, algorithm: 'SHA1' })
  .generate({ timestamp: step * 30_000 });
/** Time passing: the last accepted step is forgotten, so the next code of "now" is fresh again. */
const nextStep = (userId: string) => db.knex.raw('UPDATE two_factor SET last_step = NULL WHERE user_id = ?', [userId]);
const same = (cookie: string) => ({ Cookie: cookie, Origin: ORIGIN });

/** A person with two-factor on: their cookie, secret and recovery codes. */
async function enrolled(memberships: Parameters<typeof person>[1] = {}) {
  const p = await person(db.knex, memberships);
  const cookie = await signIn(server, p.email);
  const start = await http().post('/auth/two-factor').set(same(cookie));
  expect(start.status).toBe(200);
  const secret = start.body.data.secret as string;
  const confirm = await http().post('/auth/two-factor/confirm').set(same(cookie)).send({ code: codeOf(secret) });
  expect(confirm.status).toBe(200);
  return { ...p, cookie, secret, recoveryCodes: confirm.body.data.recoveryCodes as string[] };
}

test('enrolment: a secret and an otpauth URI, not on until a code confirms it; ten recovery codes once; the session says so', async () => {
  const p = await person(db.knex, { [project.id]: 'member' });
  const cookie = await signIn(server, p.email);
  const start = await http().post('/auth/two-factor').set(same(cookie));
  expect(start.status).toBe(200);
  check(start, 'post', '/auth/two-factor');
  const { secret, uri } = start.body.data;
  expect(secret).toMatch(/^[A-Z2-7]{32}$/);
  expect(uri).toMatch(new RegExp(`^otpauth://totp/Herald:${encodeURIComponent(p.email)}\\?.*secret=${secret}`));
  // Pending: the login still opens a session at once.
  expect(cookieOf(await http().post('/auth/login').send({ email: p.email, password: PASSWORD }))).toBeTruthy();

  const wrong = await http().post('/auth/two-factor/confirm').set(same(cookie)).send({ code: codeOf(secret, 5) });
  expect(wrong.status).toBe(422);
  expect(wrong.body.error.errors[0].field).toBe('code');
  const malformed = await http().post('/auth/two-factor/confirm').set(same(cookie)).send({ code: 'abc' });
  expect(malformed.status).toBe(422);
  expect(malformed.body.error.errors[0].field).toBe('code');

  const confirm = await http().post('/auth/two-factor/confirm').set(same(cookie)).send({ code: codeOf(secret) });
  expect(confirm.status).toBe(200);
  check(confirm, 'post', '/auth/two-factor/confirm');
  const codes = confirm.body.data.recoveryCodes as string[];
  expect(codes).toHaveLength(10);
  expect(new Set(codes).size).toBe(10);
  // Once on, neither starting again (a stolen session replacing the factor) nor confirming again.
  expect((await http().post('/auth/two-factor').set(same(cookie))).status).toBe(409);
  expect((await http().post('/auth/two-factor/confirm').set(same(cookie)).send({ code: codeOf(secret, 1) })).status).toBe(409);
  const who = await http().get('/auth/session').set('Cookie', cookie);
  check(who, 'get', '/auth/session');
  expect(who.body.data).toMatchObject({ twoFactor: { enabled: true }, projects: [{ projectId: project.id, twoFactorRequired: false }] });
});

test('the secret is sealed at rest and the recovery codes hashed: neither is in the database in plain', async () => {
  const p = await enrolled();
  const { rows } = await db.knex.raw('SELECT secret_sealed, recovery_hashes FROM two_factor WHERE user_id = ?', [p.id]);
  const sealed = rows[0].secret_sealed as Buffer;
  expect(sealed.includes(Buffer.from(p.secret))).toBe(false);
  expect(sealed.toString('latin1')).not.toContain(p.secret);
  const dump = JSON.stringify((await db.knex.raw('SELECT t::text FROM two_factor t WHERE user_id = ?', [p.id])).rows);
  expect(dump).not.toContain(p.secret);
  for (const code of p.recoveryCodes) expect(dump).not.toContain(code.replace('-', ''));
  expect(rows[0].recovery_hashes).toHaveLength(10);
});

test('login: the password answers a challenge and no cookie; the challenge and a code open a session; a code is refused the second time', async () => {
  const p = await enrolled({ [project.id]: 'member' });
  const first = await http().post('/auth/login').set('Cookie', p.cookie).send({ email: p.email, password: PASSWORD });
  expect(first.status).toBe(200);
  check(first, 'post', '/auth/login');
  // The password step opens nothing and ends nothing: the browser's old session lives until the second step.
  expect((await http().get('/auth/session').set('Cookie', p.cookie)).status).toBe(200);
  expect(first.headers['set-cookie']).toBeUndefined();
  expect(first.body.data).toEqual({ twoFactorRequired: true, challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), expiresAt: expect.any(String) });
  const { challenge } = first.body.data;
  const expires = Date.parse(first.body.data.expiresAt) - Date.now();
  expect(expires).toBeGreaterThan(4 * 60_000);
  expect(expires).toBeLessThanOrEqual(5 * 60_000 + 1000);

  // The confirmation's code was used: the same code again is a replay. Its step as recorded, not "now"'s: a 30-second
  // step may have begun since the confirmation, and now's code would then be a fresh one (a CI run once saw that).
  const used = Number((await db.knex('two_factor').where({ user_id: p.id }).first('last_step')).last_step);
  const replay = await http().post('/auth/login/two-factor').send({ challenge, code: codeAt(p.secret, used) });
  expect(replay.status).toBe(401);
  expect(replay.headers['set-cookie']).toBeUndefined();

  const next = codeAt(p.secret, used + 1); // the step after it: within the window of one step of now
  const done = await http().post('/auth/login/two-factor').set('Cookie', p.cookie).send({ challenge, code: next });
  expect(done.status).toBe(200);
  expect((await http().get('/auth/session').set('Cookie', p.cookie)).status).toBe(401); // replaced, as by a login
  check(done, 'post', '/auth/login/two-factor');
  const cookie = cookieOf(done);
  expect(cookie).not.toBe(p.cookie.split(';')[0]);
  expect(done.body.data).toMatchObject({ user: { id: p.id }, twoFactor: { enabled: true }, projects: [{ projectId: project.id }] });
  expect((await http().get('/contacts').set({ Cookie: cookie, 'Herald-Project': project.id })).status).toBe(200);

  // The challenge worked once; and the code, replayed on a new challenge, is refused.
  expect((await http().post('/auth/login/two-factor').send({ challenge, code: next })).status).toBe(401);
  const again = await http().post('/auth/login').send({ email: p.email, password: PASSWORD });
  expect((await http().post('/auth/login/two-factor').send({ challenge: again.body.data.challenge, code: next })).status).toBe(401);
  // A wrong password is still the one 401, and gives no challenge.
  const wrong = await http().post('/auth/login').send({ email: p.email, password: 'wrong password here' });
  expect(wrong.status).toBe(401);
  expect(wrong.body.data).toBeUndefined();
});

test('a recovery code works once (any case, with or without its dash); an unknown or expired challenge is refused', async () => {
  const p = await enrolled();
  const challenge = async () => (await http().post('/auth/login').send({ email: p.email, password: PASSWORD })).body.data.challenge as string;
  const code = p.recoveryCodes[3]!;
  const used = await http().post('/auth/login/two-factor').send({ challenge: await challenge(), recoveryCode: code.toUpperCase().replace('-', '') });
  expect(used.status).toBe(200);
  expect(cookieOf(used)).toBeTruthy();
  expect((await http().post('/auth/login/two-factor').send({ challenge: await challenge(), recoveryCode: code })).status).toBe(401);
  const { rows } = await db.knex.raw('SELECT cardinality(recovery_hashes) AS n FROM two_factor WHERE user_id = ?', [p.id]);
  expect(rows[0].n).toBe(9);

  expect((await http().post('/auth/login/two-factor').send({ challenge: 'A'.repeat(43), recoveryCode: p.recoveryCodes[0] })).status).toBe(401);
  const stale = await challenge();
  await db.knex.raw("UPDATE login_challenges SET expires_at = now() - interval '1 second' WHERE user_id = ?", [p.id]);
  expect((await http().post('/auth/login/two-factor').send({ challenge: stale, recoveryCode: p.recoveryCodes[0] })).status).toBe(401);
  expect(await pruneLoginChallenges(db.knex)).toBeGreaterThanOrEqual(1);
  // The unused code still works on a live challenge.
  expect((await http().post('/auth/login/two-factor').send({ challenge: await challenge(), recoveryCode: p.recoveryCodes[0] })).status).toBe(200);
});

test('bad bodies of the second step are 422s naming the field', async () => {
  const both = await http().post('/auth/login/two-factor').send({ challenge: 'A'.repeat(43), code: '123456', recoveryCode: 'abcde-fghij' });
  expect(both.status).toBe(422);
  const neither = await http().post('/auth/login/two-factor').send({ challenge: 'A'.repeat(43) });
  expect(neither.status).toBe(422);
  const badChallenge = await http().post('/auth/login/two-factor').send({ challenge: 'short', code: '123456' });
  expect(badChallenge.status).toBe(422);
  expect(badChallenge.body.error.errors[0].field).toBe('challenge');
  const badCode = await http().post('/auth/login/two-factor').send({ challenge: 'A'.repeat(43), code: '12345' });
  expect(badCode.status).toBe(422);
  expect(badCode.body.error.errors[0].field).toBe('code');
});

test('wrong codes count in the account\'s login throttle: after the free failures, a 429 with Retry-After that holds the right code back too', async () => {
  const p = await enrolled();
  await nextStep(p.id);
  const { challenge } = (await http().post('/auth/login').send({ email: p.email, password: PASSWORD })).body.data;
  const wrongCode = (codeOf(p.secret, 10));
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) statuses.push((await http().post('/auth/login/two-factor').send({ challenge, code: wrongCode })).status);
  // The password step counted one attempt (cleared only by the second step's success): 5 free in all, the 6th
  // attempt sets a wait, the 7th meets it.
  expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
  const locked = await http().post('/auth/login/two-factor').send({ challenge, code: codeOf(p.secret) });
  expect(locked.status).toBe(429);
  expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
  expect(locked.body.error.code).toBe('LOGIN_THROTTLED');
  // Unlocked, the right code opens the session and clears the account's count.
  await db.knex.raw("UPDATE login_failures SET locked_until = NULL, failures = 0 WHERE key = ?", [`account:${p.email}`]);
  expect((await http().post('/auth/login/two-factor').send({ challenge, code: codeOf(p.secret) })).status).toBe(200);
  expect(await db.knex('login_failures').where({ key: `account:${p.email}` }).first()).toBeUndefined();
});

test('turning it off takes the password or a current code (a session alone is not enough); then the login is one step again', async () => {
  const p = await enrolled();
  const noProof = await http().delete('/auth/two-factor').set(same(p.cookie)).send({});
  expect(noProof.status).toBe(422);
  expect((await http().delete('/auth/two-factor').set(same(p.cookie)).send({ password: 'not my password' })).status).toBe(401);
  expect((await http().delete('/auth/two-factor').set({ Cookie: p.cookie, Origin: 'https://evil.example' }).send({ password: PASSWORD })).status).toBe(403);
  await nextStep(p.id);
  const off = await http().delete('/auth/two-factor').set(same(p.cookie)).send({ code: codeOf(p.secret) });
  expect(off.status).toBe(204);
  expect(await db.knex('two_factor').where('user_id', p.id).first()).toBeUndefined();
  expect((await http().delete('/auth/two-factor').set(same(p.cookie)).send({ password: PASSWORD })).status).toBe(409);
  const login = await http().post('/auth/login').send({ email: p.email, password: PASSWORD });
  expect(cookieOf(login)).toBeTruthy();
  expect(login.body.data.twoFactor).toEqual({ enabled: false });

  const q = await enrolled();
  expect((await http().delete('/auth/two-factor').set(same(q.cookie)).send({ password: PASSWORD })).status).toBe(204);
});

test('a project that requires two-factor refuses the sessions of members without it (403 with a suggestion); keys and members with it pass', async () => {
  const required = await createProject('Requires two-factor');
  const { secretKey } = required;
  const without = await person(db.knex, { [required.id]: 'owner' });
  const withCookie = await enrolled({ [required.id]: 'member' });
  const cookie = await signIn(server, without.email);
  const as = (c: string) => ({ Cookie: c, 'Herald-Project': required.id, Origin: ORIGIN });

  // An owner without two-factor may not require it: their own session would be shut out at once.
  const selfLock = await http().patch('/settings').set(as(cookie)).send({ requireTwoFactor: true });
  expect(selfLock.status).toBe(409);
  const on = await http().patch('/settings').set(bearer(secretKey)).send({ requireTwoFactor: true });
  expect(on.status).toBe(200);
  expect(on.body.data.requireTwoFactor).toBe(true);
  const audit = await db.knex('audit_log').where({ project_id: required.id, operation: 'updateSettings' }).first();
  expect(audit.details).toMatchObject({ changed: { requireTwoFactor: true } });

  const refused = await http().get('/contacts').set(as(cookie));
  expect(refused.status).toBe(403);
  expect(refused.body.error.code).toBe('TWO_FACTOR_REQUIRED');
  expect(refused.body.error.message).toMatch(/requires two-factor/);
  expect(refused.body.error.suggestion).toMatch(/POST \/auth\/two-factor/);
  // Their person routes still work (to enrol), and the session says why.
  const who = await http().get('/auth/session').set('Cookie', cookie);
  expect(who.body.data).toMatchObject({ twoFactor: { enabled: false }, projects: [{ projectId: required.id, twoFactorRequired: true }] });
  expect((await http().get('/contacts').set(bearer(secretKey))).status).toBe(200);
  expect((await http().get('/contacts').set(as(withCookie.cookie))).status).toBe(200);

  // Enrolled, the same session passes.
  const start = await http().post('/auth/two-factor').set(same(cookie));
  await http().post('/auth/two-factor/confirm').set(same(cookie)).send({ code: codeOf(start.body.data.secret) });
  expect((await http().get('/contacts').set(as(cookie))).status).toBe(200);
  // Now with two-factor, the owner may turn the requirement off and on through the session.
  expect((await http().patch('/settings').set(as(cookie)).send({ requireTwoFactor: false })).status).toBe(200);
  expect((await http().patch('/settings').set(as(cookie)).send({ requireTwoFactor: true })).status).toBe(200);
});

test('nothing secret reaches the log: no TOTP secret, code, recovery code, challenge, password or cookie', async () => {
  const p = await enrolled();
  const first = await http().post('/auth/login').send({ email: p.email, password: PASSWORD });
  const done = await http().post('/auth/login/two-factor').send({ challenge: first.body.data.challenge, recoveryCode: p.recoveryCodes[1] });
  expect(done.status).toBe(200);
  const text = logged.join('\n');
  expect(text.length).toBeGreaterThan(0);
  for (const secret of [p.secret, ...p.recoveryCodes, first.body.data.challenge, PASSWORD, cookieOf(done).split('=')[1]!, p.cookie.split('=')[1]!]) {
    expect(text).not.toContain(secret);
  }
  expect(text).not.toMatch(/"code":"\d{6}"/);
});
