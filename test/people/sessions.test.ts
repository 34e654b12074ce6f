import request from 'supertest';
import { createApp } from '../../api/app';
import { bearer, createTestContext, testAppDeps, type TestContext } from '../support/app';
import { answerChecker } from '../support/openapi';
import { endAllSessions } from '../../people/sessions';
import { asPerson, cookieOf, ORIGIN, PASSWORD, person, signIn } from './support';

/** People signing in (issue 27): login, logout, who is signed in, their sessions, expiries, and the session on project routes. */
let t: TestContext;
beforeAll(async () => { t = await createTestContext(); });
afterAll(() => t.close());

const http = () => request(t.server);

test('a login sets a fresh HttpOnly, SameSite=Lax cookie on / and answers the user and their projects', async () => {
  const p = await person(t.db.knex, { [t.project.id]: 'member' });
  const res = await http().post('/auth/login').send({ email: p.email.toUpperCase(), password: PASSWORD });
  expect(res.status).toBe(200);
  const line = ([] as string[]).concat(res.headers['set-cookie'] ?? []).find((c) => c.startsWith('herald_session='))!;
  expect(line).toMatch(/^herald_session=[A-Za-z0-9_-]{43}; Max-Age=\d+; Path=\/; HttpOnly; SameSite=Lax$/); // not Secure: PUBLIC_URL is http
  expect(res.body.data).toMatchObject({
    user: { id: p.id, email: p.email, operator: false },
    operator: false,
    projects: [{ projectId: t.project.id, projectName: t.project.name, role: 'member', projectDisabled: false, twoFactorRequired: false }],
    session: { id: expect.any(String) },
  });
  // A fresh id at every login.
  const again = await http().post('/auth/login').send({ email: p.email, password: PASSWORD });
  expect(cookieOf(again)).not.toBe(cookieOf(res));
});

test('GET /auth/session says who is signed in; logout ends the session on the server and clears the cookie', async () => {
  const p = await person(t.db.knex, { [t.project.id]: 'admin' }, { operator: true });
  const cookie = await signIn(t.server, p.email);
  const who = await http().get('/auth/session').set('Cookie', cookie);
  expect(who.status).toBe(200);
  expect(who.body.data).toMatchObject({ user: { email: p.email, operator: true }, operator: true, projects: [{ projectId: t.project.id, role: 'admin' }] });
  expect((await http().get('/contacts').set(asPerson(cookie, t.project.id))).status).toBe(200);

  const out = await http().post('/auth/logout').set({ Cookie: cookie, Origin: ORIGIN });
  expect(out.status).toBe(204);
  expect(([] as string[]).concat(out.headers['set-cookie'] ?? [])[0]).toMatch(/^herald_session=; Max-Age=0;/);
  // The same cookie, replayed, opens nothing.
  expect((await http().get('/auth/session').set('Cookie', cookie)).status).toBe(401);
  const after = await http().get('/contacts').set(asPerson(cookie, t.project.id));
  expect(after.status).toBe(401);
  expect(after.body.error.message).toMatch(/Session expired or ended/);
});

test('a login that brings the old cookie ends the old session', async () => {
  const p = await person(t.db.knex, { [t.project.id]: 'viewer' });
  const first = await signIn(t.server, p.email);
  const second = await http().post('/auth/login').set({ Cookie: first }).send({ email: p.email, password: PASSWORD });
  expect(second.status).toBe(200);
  expect((await http().get('/auth/session').set('Cookie', first)).status).toBe(401);
  expect((await http().get('/auth/session').set('Cookie', cookieOf(second))).status).toBe(200);
});

test('a person lists and ends their own sessions; another person\'s session id is not found', async () => {
  const p = await person(t.db.knex, { [t.project.id]: 'member' });
  const laptop = await signIn(t.server, p.email);
  const phone = await signIn(t.server, p.email);
  const list = await http().get('/auth/sessions').set('Cookie', laptop);
  expect(list.status).toBe(200);
  expect(list.body.data.items).toHaveLength(2);
  const current = list.body.data.items.find((s: { current: boolean }) => s.current);
  const other = list.body.data.items.find((s: { current: boolean }) => !s.current);
  expect(current).toMatchObject({ address: expect.any(String), lastSeenAt: expect.any(String), expiresAt: expect.any(String) });

  const stranger = await person(t.db.knex, {});
  const strangerCookie = await signIn(t.server, stranger.email);
  const foreign = await http().delete(`/auth/sessions/${other.id}`).set({ Cookie: strangerCookie, Origin: ORIGIN });
  expect(foreign.status).toBe(404);
  expect((await http().get('/auth/session').set('Cookie', phone)).status).toBe(200);

  expect((await http().delete(`/auth/sessions/${other.id}`).set({ Cookie: laptop, Origin: ORIGIN })).status).toBe(204);
  expect((await http().get('/auth/session').set('Cookie', phone)).status).toBe(401);
  expect((await http().get('/auth/session').set('Cookie', laptop)).status).toBe(200);
  expect((await http().delete(`/auth/sessions/${other.id}`).set({ Cookie: laptop, Origin: ORIGIN })).status).toBe(404);
  expect((await http().delete('/auth/sessions/not-a-uuid').set({ Cookie: laptop, Origin: ORIGIN })).status).toBe(404);
});

test('idle and absolute expiry end a session (timestamps set in the database)', async () => {
  const p = await person(t.db.knex, { [t.project.id]: 'member' });
  const idle = await signIn(t.server, p.email);
  const absolute = await signIn(t.server, p.email);
  const sessions = await t.db.knex('sessions').where({ user_id: p.id }).orderBy('id');
  await t.db.knex.raw("UPDATE sessions SET last_seen_at = now() - interval '12 hours 1 minute' WHERE id = ?", [sessions[0].id]);
  await t.db.knex.raw("UPDATE sessions SET expires_at = now() - interval '1 second' WHERE id = ?", [sessions[1].id]);
  for (const cookie of [idle, absolute]) {
    expect((await http().get('/auth/session').set('Cookie', cookie)).status).toBe(401);
    expect((await http().get('/contacts').set(asPerson(cookie, t.project.id))).status).toBe(401);
  }
});

test('use moves last_seen_at at most once a minute', async () => {
  const p = await person(t.db.knex, { [t.project.id]: 'member' });
  const cookie = await signIn(t.server, p.email);
  const seen = async () => (await t.db.knex('sessions').where({ user_id: p.id }).first('last_seen_at')).last_seen_at as Date;
  await t.db.knex.raw("UPDATE sessions SET last_seen_at = now() - interval '30 seconds' WHERE user_id = ?", [p.id]);
  const before = await seen();
  expect((await http().get('/contacts').set(asPerson(cookie, t.project.id))).status).toBe(200);
  expect((await http().get('/auth/session').set('Cookie', cookie)).status).toBe(200);
  expect(await seen()).toEqual(before);
  await t.db.knex.raw("UPDATE sessions SET last_seen_at = now() - interval '2 minutes' WHERE user_id = ?", [p.id]);
  const stale = await seen();
  expect((await http().get('/contacts').set(asPerson(cookie, t.project.id))).status).toBe(200);
  expect((await seen()).getTime()).toBeGreaterThan(stale.getTime() + 60_000);
});

test('a removed member stops at the next request; a disabled user too', async () => {
  const removed = await person(t.db.knex, { [t.project.id]: 'admin' });
  const disabled = await person(t.db.knex, { [t.project.id]: 'admin' });
  const c1 = await signIn(t.server, removed.email);
  const c2 = await signIn(t.server, disabled.email);
  expect((await http().get('/contacts').set(asPerson(c1, t.project.id))).status).toBe(200);
  expect((await http().get('/contacts').set(asPerson(c2, t.project.id))).status).toBe(200);
  await t.db.knex('memberships').where({ user_id: removed.id }).delete();
  await t.db.knex('users').where({ id: disabled.id }).update({ disabled: true });
  const r1 = await http().get('/contacts').set(asPerson(c1, t.project.id));
  expect(r1.status).toBe(404);
  expect(r1.body.error.errors[0].field).toBe('Herald-Project');
  expect((await http().get('/contacts').set(asPerson(c2, t.project.id))).status).toBe(401);
  expect((await http().get('/auth/session').set('Cookie', c2)).status).toBe(401);
});

test('the project header: missing or malformed is a 400 naming it; another project is a 404; a disabled one 403', async () => {
  const p = await person(t.db.knex, { [t.project.id]: 'owner' });
  const cookie = await signIn(t.server, p.email);
  const missing = await http().get('/contacts').set('Cookie', cookie);
  expect(missing.status).toBe(400);
  expect(missing.body).toMatchObject({ success: false, error: { code: 'BAD_REQUEST', errors: [{ field: 'Herald-Project', code: 'required' }] } });
  const malformed = await http().get('/contacts').set({ Cookie: cookie, 'Herald-Project': 'nope' });
  expect(malformed.status).toBe(400);
  expect(malformed.body.error.errors[0]).toMatchObject({ field: 'Herald-Project', code: 'invalid' });
  const other = await t.newProject('Not theirs');
  const foreign = await http().get('/contacts').set(asPerson(cookie, other.id));
  expect(foreign.status).toBe(404);
  const nowhere = await http().get('/contacts').set(asPerson(cookie, '0190a3f1-0000-7000-8000-000000000000'));
  expect(nowhere.body.error).toEqual(foreign.body.error && { ...foreign.body.error, requestId: nowhere.body.error.requestId });
  // Upper case is the same id.
  expect((await http().get('/contacts').set(asPerson(cookie, t.project.id.toUpperCase()))).status).toBe(200);

  const mine = await t.newProject('Disabled one');
  await t.db.knex.raw('INSERT INTO memberships (project_id, user_id, role) VALUES (?, ?, ?)', [mine.id, p.id, 'owner']);
  await t.db.knex('projects').where({ id: mine.id }).update({ disabled: true });
  const disabled = await http().get('/contacts').set(asPerson(cookie, mine.id));
  expect(disabled.status).toBe(403);
  expect(disabled.body.error.code).toBe('PROJECT_DISABLED');
});

test('a session counts against the project\'s rate window as a key does; a Bearer key wins over a cookie', async () => {
  const p = await person(t.db.knex, { [t.project.id]: 'member' });
  const cookie = await signIn(t.server, p.email);
  const a = await http().get('/contacts').set(asPerson(cookie, t.project.id));
  const b = await http().get('/contacts').set(bearer(t.project.secretKey));
  expect(Number(b.headers['ratelimit-remaining'])).toBe(Number(a.headers['ratelimit-remaining']) - 1);

  const other = await t.newProject('Key project');
  await request(t.server).post('/contacts').set(bearer(other.secretKey)).send({ email: 'keyed@example.org' });
  // Both: the key's project, not the session's.
  const both = await http().get('/contacts').set({ ...asPerson(cookie, t.project.id), ...bearer(other.secretKey) });
  expect(both.status).toBe(200);
  expect(both.body.data.items.map((c: { email: string }) => c.email)).toEqual(['keyed@example.org']);
});

describe('cross-site requests with a session are refused and change nothing', () => {
  let cookie: string;
  beforeAll(async () => {
    const p = await person(t.db.knex, { [t.project.id]: 'owner' });
    cookie = await signIn(t.server, p.email);
  });
  const count = async () => Number((await t.db.knex('contacts').where({ project_id: t.project.id }).count({ n: '*' }))[0]!.n);

  test.each([
    ['no Origin, no Sec-Fetch-Site', {}],
    ['a foreign Origin', { Origin: 'https://evil.example' }],
    ['Origin null', { Origin: 'null' }],
    ['Sec-Fetch-Site: cross-site', { 'Sec-Fetch-Site': 'cross-site' }],
    ['Sec-Fetch-Site: same-site', { 'Sec-Fetch-Site': 'same-site' }],
    ['a foreign Origin with Sec-Fetch-Site: same-origin', { Origin: 'https://evil.example', 'Sec-Fetch-Site': 'same-origin' }],
  ])('%s: 403', async (_name, headers) => {
    const before = await count();
    const res = await http().post('/contacts').set({ Cookie: cookie, 'Herald-Project': t.project.id, ...headers }).send({ email: `csrf${Math.random()}@example.org` });
    expect(res.status).toBe(403);
    expect(res.body.error.message).toMatch(/Cross-site request refused/);
    expect(await count()).toBe(before);
    expect((await http().post('/auth/logout').set({ Cookie: cookie, ...headers })).status).toBe(403);
    expect((await http().get('/auth/session').set('Cookie', cookie)).status).toBe(200);
  });

  test.each([
    ['PUBLIC_URL\'s origin', () => ({ Origin: ORIGIN })],
    ['the listening address', () => ({ Origin: `http://127.0.0.1:${(t.server.address() as { port: number }).port}` })],
    ['Sec-Fetch-Site: same-origin', () => ({ 'Sec-Fetch-Site': 'same-origin' })],
  ])('%s: accepted', async (_name, headers) => {
    const res = await http().post('/contacts').set({ Cookie: cookie, 'Herald-Project': t.project.id, ...headers() }).send({ email: `fine${Math.random()}@example.org` });
    expect(res.status).toBe(201);
  });

  test('reads need no Origin, and a key is not affected', async () => {
    expect((await http().get('/contacts').set({ Cookie: cookie, 'Herald-Project': t.project.id })).status).toBe(200);
    const keyed = await http().post('/contacts').set({ ...bearer(t.project.secretKey), Origin: 'https://evil.example' }).send({ email: 'script@example.org' });
    expect(keyed.status).toBe(201);
  });

  test('a login from a foreign Origin is refused', async () => {
    const p = await person(t.db.knex, {});
    const res = await http().post('/auth/login').set('Origin', 'https://evil.example').send({ email: p.email, password: PASSWORD });
    expect(res.status).toBe(403);
    expect(res.headers['set-cookie']).toBeUndefined();
    expect((await http().post('/auth/login').set('Origin', ORIGIN).send({ email: p.email, password: PASSWORD })).status).toBe(200);
  });
});

test('wrong password, unknown email and disabled account answer the same 401', async () => {
  const p = await person(t.db.knex, { [t.project.id]: 'member' });
  const d = await person(t.db.knex, { [t.project.id]: 'member' });
  await t.db.knex('users').where({ id: d.id }).update({ disabled: true });
  const answers = await Promise.all([
    http().post('/auth/login').send({ email: p.email, password: 'wrong password here' }),
    http().post('/auth/login').send({ email: 'nobody-at-all@example.org', password: PASSWORD }),
    http().post('/auth/login').send({ email: d.email, password: PASSWORD }),
    http().post('/auth/login').send({ email: 'not an address', password: PASSWORD }),
  ]);
  const shapes = answers.map((r) => ({ status: r.status, code: r.body.error.code, message: r.body.error.message, suggestion: r.body.error.suggestion, cookie: r.headers['set-cookie'] }));
  expect(new Set(shapes.map((s) => JSON.stringify(s))).size).toBe(1);
  expect(shapes[0]).toMatchObject({ status: 401, code: 'INVALID_CREDENTIALS', cookie: undefined });
});

test('a malformed login body is a 422 naming the field', async () => {
  const res = await http().post('/auth/login').send({ email: 'a@example.org' });
  expect(res.status).toBe(422);
  expect(res.body.error.errors[0].field).toBe('password');
  expect((await http().post('/auth/login').send({ email: 'a@example.org', password: 'x'.repeat(257) })).status).toBe(422);
});

test('no cookie, or a cookie of nothing, on the people routes: 401', async () => {
  expect((await http().get('/auth/session')).status).toBe(401);
  const bogus = await http().get('/auth/session').set('Cookie', 'herald_session=abc');
  expect(bogus.status).toBe(401);
  expect(([] as string[]).concat(bogus.headers['set-cookie'] ?? [])[0]).toMatch(/^herald_session=; Max-Age=0/);
  expect((await http().get('/contacts').set({ Cookie: 'herald_session=abc', 'Herald-Project': t.project.id })).status).toBe(401);
});

test('the answers of the /auth routes, and their errors, match the OpenAPI document', async () => {
  const answers = answerChecker((await http().get('/openapi.json')).body);
  const p = await person(t.db.knex, { [t.project.id]: 'viewer' });
  const login = await http().post('/auth/login').send({ email: p.email, password: PASSWORD });
  answers.check('POST', '/auth/login', login);
  const cookie = cookieOf(login);
  answers.check('GET', '/auth/session', await http().get('/auth/session').set('Cookie', cookie));
  const list = await http().get('/auth/sessions').set('Cookie', cookie);
  answers.check('GET', '/auth/sessions', list);
  answers.check('POST', '/auth/login', await http().post('/auth/login').send({ email: p.email, password: 'wrong password here' }));
  answers.check('GET', '/contacts', await http().get('/contacts').set('Cookie', cookie));
  answers.check('POST', '/contacts', await http().post('/contacts').set(asPerson(cookie, t.project.id)).send({ email: 'viewer-may-not@example.org' }));
  answers.check('DELETE', '/auth/sessions/{id}', await http().delete(`/auth/sessions/${list.body.data.items[0].id}`).set({ Cookie: cookie, Origin: ORIGIN }));
  answers.check('POST', '/auth/logout', await http().post('/auth/logout').set({ Cookie: cookie, Origin: ORIGIN }));
});

test('endAllSessions ends every session of one user (a password changed, an account disabled), none of another', async () => {
  const p = await person(t.db.knex, { [t.project.id]: 'member' });
  const other = await person(t.db.knex, { [t.project.id]: 'member' });
  const cookies = [await signIn(t.server, p.email), await signIn(t.server, p.email)];
  const theirs = await signIn(t.server, other.email);
  expect(await endAllSessions(t.db.knex, p.id)).toBe(2);
  for (const c of cookies) expect((await http().get('/contacts').set(asPerson(c, t.project.id))).status).toBe(401);
  expect((await http().get('/contacts').set(asPerson(theirs, t.project.id))).status).toBe(200);
});

test('under an https PUBLIC_URL the cookie is Secure, and its origin is the one a session\'s writes must come from', async () => {
  const server = createApp(testAppDeps(t.db.knex, { publicUrl: 'https://mail.example.com' })).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  try {
    const p = await person(t.db.knex, { [t.project.id]: 'member' });
    const login = await request(server).post('/auth/login').set('Origin', 'https://mail.example.com').send({ email: p.email, password: PASSWORD });
    expect(login.status).toBe(200);
    expect(([] as string[]).concat(login.headers['set-cookie'] ?? [])[0]).toMatch(/; Path=\/; HttpOnly; SameSite=Lax; Secure$/);
    const cookie = cookieOf(login);
    const headers = { Cookie: cookie, 'Herald-Project': t.project.id };
    expect((await request(server).post('/contacts').set({ ...headers, Origin: 'https://mail.example.com' }).send({ email: 'secure@example.org' })).status).toBe(201);
    expect((await request(server).post('/contacts').set({ ...headers, Origin: 'http://mail.example.com' }).send({ email: 'plain@example.org' })).status).toBe(403);
    const out = await request(server).post('/auth/logout').set({ Cookie: cookie, Origin: 'https://mail.example.com' });
    expect(([] as string[]).concat(out.headers['set-cookie'] ?? [])[0]).toMatch(/^herald_session=; Max-Age=0;.*; Secure$/);
  } finally {
    await new Promise((r) => server.close(r));
  }
});
