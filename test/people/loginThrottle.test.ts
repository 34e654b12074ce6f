import type { Server } from 'node:http';
import { Writable } from 'node:stream';
import pino from 'pino';
import request from 'supertest';
import { createApp } from '../../api/app';
import { pruneLoginFailures } from '../../people/throttle';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { testAppDeps } from '../support/app';
import { cookieOf, ORIGIN, PASSWORD, person } from './support';

/**
 * Failed logins slowed, then locked, per account and per client address, counted in PostgreSQL (issue 27): two API
 * processes (two apps on one database) share the counts. Nothing secret reaches the request log.
 */
let db: TestDatabase;
let servers: Server[];
const logged: string[] = [];

const sessions = { idleMinutes: 720, maxDays: 14, freeFailuresPerAccount: 3, freeFailuresPerAddress: 6 };

beforeAll(async () => {
  db = await createTestDatabase();
  const log = pino({ level: 'info' }, new Writable({ write(chunk, _enc, done) { logged.push(String(chunk)); done(); } }));
  servers = await Promise.all([0, 1].map(async () => {
    const s = createApp(testAppDeps(db.knex, { sessions, log, trustProxyHops: 1 })).listen(0, '127.0.0.1');
    await new Promise((r) => s.once('listening', r));
    return s;
  }));
});
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  await db.close();
});

// Each attempt from an address of its own unless said: the account's count alone decides.
const attempt = (i: number, email: string, password: string, address = `198.51.100.${i + 1}`) => request(servers[i % 2]!).post('/auth/login')
  .set('X-Forwarded-For', address).send({ email, password });
const unlock = (key: string) => db.knex.raw("UPDATE login_failures SET locked_until = now() - interval '1 second' WHERE key = ?", [key]);

test('an account: free failures, then growing waits (429 with Retry-After) that also hold a right password back; a success clears the count', async () => {
  const p = await person(db.knex, {});
  for (let i = 0; i < 3; i++) expect((await attempt(i, p.email, 'wrong password 1')).status).toBe(401);
  // The 4th failure is checked, and sets a wait of 1 s before the next.
  expect((await attempt(3, p.email, 'wrong password 1')).status).toBe(401);
  const locked = await attempt(4, p.email, PASSWORD);
  expect(locked.status).toBe(429);
  expect(locked.headers['retry-after']).toBe('1');
  expect(locked.body.error).toMatchObject({ code: 'LOGIN_THROTTLED', message: expect.stringMatching(/retry in 1 seconds/) });
  // The wait grows: 2 s after the next failure, 4 s after the one after.
  await unlock(`account:${p.email}`);
  expect((await attempt(5, p.email, 'wrong password 2')).status).toBe(401);
  expect((await attempt(6, p.email, PASSWORD)).headers['retry-after']).toBe('2');
  await unlock(`account:${p.email}`);
  expect((await attempt(7, p.email, 'wrong password 3')).status).toBe(401);
  expect((await attempt(8, p.email, PASSWORD)).headers['retry-after']).toBe('4');
  // Once the wait is over, the right password signs in and the account's count starts again.
  await unlock(`account:${p.email}`);
  expect((await attempt(9, p.email, PASSWORD)).status).toBe(200);
  expect(await db.knex('login_failures').where({ key: `account:${p.email}` }).first()).toBeUndefined();
});

test('an unknown address is throttled exactly as an account, so a lock tells nothing', async () => {
  for (let i = 0; i < 4; i++) expect((await attempt(i, 'nobody@example.org', 'x', '198.51.100.20')).status).toBe(401);
  expect((await attempt(4, 'nobody@example.org', 'x', '198.51.100.20')).status).toBe(429);
});

test('a client address guessing across accounts is locked after its own free failures, other addresses not', async () => {
  const address = '203.0.113.9';
  for (let i = 0; i < 7; i++) expect((await attempt(i, `victim${i}@example.org`, 'guess', address)).status).toBe(401);
  const p = await person(db.knex, {});
  const locked = await attempt(7, p.email, PASSWORD, address);
  expect(locked.status).toBe(429);
  expect(Number(locked.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  expect((await attempt(8, p.email, PASSWORD, '203.0.113.10')).status).toBe(200);
});

test('parallel guesses are serialised on the count: beyond the free ones, the lock stops them', async () => {
  const p = await person(db.knex, {});
  const parallel = (from: number, n: number) => Promise.all(Array.from({ length: n }, (_, i) => attempt(from + i, p.email, `parallel guess ${i}`, `192.0.2.${from + i + 1}`)));
  // 3 free, the 4th checked and setting the wait (1 s); at once, none of the others gets past that wait.
  const first = (await parallel(0, 12)).map((r) => r.status);
  // On a slow machine the twelve can take longer than that 1 s, and one more gets in when it is over (which sets 2 s).
  expect(first.filter((s) => s === 401).length).toBeGreaterThanOrEqual(4);
  expect(first.filter((s) => s === 401).length).toBeLessThanOrEqual(5);
  expect(first.filter((s) => s === 429).length).toBe(12 - first.filter((s) => s === 401).length);
  // With the count at 10 failures and no wait running, one guess gets in and sets a wait of 2^(11-3-1) = 128 s: of
  // twelve at once, exactly that one is checked however slowly they arrive; the others meet its wait.
  await db.knex('login_failures').where({ key: `account:${p.email}` }).update({ failures: 10, locked_until: null });
  const second = (await parallel(12, 12)).map((r) => r.status);
  expect(second.filter((s) => s === 401)).toHaveLength(1);
  expect(second.filter((s) => s === 429)).toHaveLength(11);
});

test('passwords, cookies and tokens never reach the request log', async () => {
  const p = await person(db.knex, {}, { email: 'logged-person@example.org' });
  const ok = await request(servers[0]!).post('/auth/login').set('X-Forwarded-For', '192.0.2.200').send({ email: p.email, password: PASSWORD });
  expect(ok.status).toBe(200);
  const cookie = cookieOf(ok);
  await request(servers[1]!).get('/auth/session').set('Cookie', cookie);
  await request(servers[1]!).post('/auth/logout').set({ Cookie: cookie, Origin: ORIGIN });
  const text = logged.join('');
  expect(text).toContain('/auth/login');
  expect(text).toContain('/auth/logout');
  expect(text).not.toContain(PASSWORD);
  expect(text).not.toContain(cookie.split('=')[1]);
  expect(text).not.toContain('herald_session');
});

test('the workers\' housekeeping deletes counts an hour old, and keeps live ones and locks', async () => {
  await db.knex.raw(`INSERT INTO login_failures (key, failures, last_failure_at, locked_until) VALUES
    ('address:old', 3, now() - interval '2 hours', NULL), ('address:recent', 3, now(), NULL),
    ('address:locked', 30, now() - interval '2 hours', now() + interval '5 minutes')`);
  expect(await pruneLoginFailures(db.knex)).toBeGreaterThanOrEqual(1);
  expect(await db.knex('login_failures').whereIn('key', ['address:old', 'address:recent', 'address:locked']).orderBy('key').pluck('key')).toEqual(['address:locked', 'address:recent']);
});
