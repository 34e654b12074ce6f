import request from 'supertest';
import { createApp } from '../../api/app';
import { bearer, createTestContext, testAppDeps, type TestContext } from '../support/app';

let t: TestContext;
beforeAll(async () => { t = await createTestContext({ apiRateLimitPerMinute: 5 }); });
afterAll(async () => { await t.close(); });

test('requests carry RateLimit headers; past the limit answers 429 with Retry-After', async () => {
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) {
    const res = await t.http().get('/contacts').set(bearer(t.project.secretKey));
    statuses.push(res.status);
    expect(res.headers['ratelimit-limit']).toBe('5');
    expect(res.headers['ratelimit-remaining']).toBe(String(4 - i));
    expect(Number(res.headers['ratelimit-reset'])).toBeGreaterThan(0);
    expect(Number(res.headers['ratelimit-reset'])).toBeLessThanOrEqual(60);
  }
  expect(statuses).toEqual([200, 200, 200, 200, 200]);
  const limited = await t.http().get('/contacts').set(bearer(t.project.secretKey));
  expect(limited.status).toBe(429);
  expect(limited.body.error.code).toBe('RATE_LIMITED');
  expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  expect(limited.headers['ratelimit-remaining']).toBe('0');
});

test('the budget is per project', async () => {
  const other = await t.newProject();
  expect((await t.http().get('/contacts').set(bearer(other.secretKey))).status).toBe(200);
});

test('the count lives in PostgreSQL, so a second API process shares it', async () => {
  const p = await t.newProject('shared');
  // A second app instance on the same database stands in for a second API process.
  const second = createApp(testAppDeps(t.db.knex, { apiRateLimitPerMinute: 5 }));
  for (let i = 0; i < 3; i++) expect((await t.http().get('/contacts').set(bearer(p.secretKey))).status).toBe(200);
  for (let i = 0; i < 2; i++) expect((await request(second.callback()).get('/contacts').set(bearer(p.secretKey))).status).toBe(200);
  expect((await request(second.callback()).get('/contacts').set(bearer(p.secretKey))).status).toBe(429);
  expect((await t.http().get('/contacts').set(bearer(p.secretKey))).status).toBe(429);
});

test('unauthenticated requests do not spend a project budget', async () => {
  const p = await t.newProject('unauth');
  for (let i = 0; i < 10; i++) expect((await t.http().get('/contacts')).status).toBe(401);
  expect((await t.http().get('/contacts').set(bearer(p.secretKey))).headers['ratelimit-remaining']).toBe('4');
});

test('a burst of one project in one round trip: each request gets its own place in the window, the rest 429', async () => {
  const p = await t.newProject('burst');
  const other = await t.newProject('burst-other');
  const server = t.http();
  // Eight requests at once (one key lookup and count for all), beside another project's and an unknown key's.
  const [answers, otherAnswer, bad] = await Promise.all([
    Promise.all(Array.from({ length: 8 }, () => server.get('/contacts').set(bearer(p.secretKey)))),
    server.get('/contacts').set(bearer(other.secretKey)),
    server.get('/contacts').set(bearer(`sk_${'Z'.repeat(40)}`)),
  ]);
  expect(answers.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
  const remaining = answers.filter((r) => r.status === 200).map((r) => Number(r.headers['ratelimit-remaining'])).sort();
  expect(remaining).toEqual([0, 1, 2, 3, 4]);
  expect(otherAnswer.status).toBe(200);
  expect(otherAnswer.headers['ratelimit-remaining']).toBe('4');
  expect(bad.status).toBe(401);
});
