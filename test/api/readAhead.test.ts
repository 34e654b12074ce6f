import { bearer, createTestContext, type TestContext } from '../support/app';
import { asPerson, person, signIn } from '../people/support';

/**
 * A read by a caller this process admitted lately runs beside its own admission (api/middleware/auth.ts readAhead).
 * What it may never do: answer anything its admission refuses. The changes below are written to the database directly,
 * as another API process (or the operator) would make them, so that this process still remembers the caller as it was.
 */
let t: TestContext;
beforeAll(async () => { t = await createTestContext({ apiRateLimitPerMinute: 5 }); });
afterAll(async () => { await t.close(); });

test('a key revoked elsewhere is refused at its next read, and nothing of the read is answered', async () => {
  const p = await t.newProject('revoked elsewhere');
  await t.http().post('/contacts').set(bearer(p.secretKey)).send({ email: 'ada@example.com' }).expect(201);
  const exported = await t.http().get('/contacts/export').set(bearer(p.secretKey));
  expect(exported.status).toBe(200);
  expect(exported.headers['content-disposition']).toMatch(/^attachment/);
  await t.db.knex.raw('UPDATE api_keys SET revoked_at = now() WHERE project_id = ?', [p.id]);

  const refused = await t.http().get('/contacts/export').set(bearer(p.secretKey));
  expect(refused.status).toBe(401);
  expect(refused.body.error.code).toBe('UNAUTHORIZED');
  expect(refused.body.error.message).toBe('Invalid API key');
  expect(refused.headers['content-disposition']).toBeUndefined();
  expect(refused.headers['content-type']).toMatch(/^application\/json/);
  expect(refused.headers['ratelimit-limit']).toBeUndefined();
  expect(refused.text).not.toContain('ada@example.com');
});

test('a project disabled elsewhere is refused at its next read', async () => {
  const p = await t.newProject('disabled elsewhere');
  await t.http().post('/contacts').set(bearer(p.secretKey)).send({ email: 'grace@example.com' }).expect(201);
  expect((await t.http().get('/contacts').set(bearer(p.secretKey))).body.data.items).toHaveLength(1);
  await t.db.knex.raw('UPDATE projects SET disabled = true WHERE id = ?', [p.id]);

  const refused = await t.http().get('/contacts').set(bearer(p.secretKey));
  expect(refused.status).toBe(403);
  expect(refused.body.error.code).toBe('PROJECT_DISABLED');
  expect(refused.body).not.toHaveProperty('data');
});

test('reads that run ahead past the rate limit are answered 429, with the rate headers and nothing else', async () => {
  const p = await t.newProject('ahead past the limit');
  await t.http().post('/contacts').set(bearer(p.secretKey)).send({ email: 'linus@example.com' }).expect(201); // 1 of 5: remembered
  const server = t.http();
  // Six reads at once, all run ahead of their admission (one count for all): positions 2 to 7 of a budget of 5.
  const answers = await Promise.all(Array.from({ length: 6 }, () => server.get('/contacts').set(bearer(p.secretKey))));
  expect(answers.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 429, 429]);
  for (const limited of answers.filter((r) => r.status === 429)) {
    expect(limited.body.error.code).toBe('RATE_LIMITED');
    expect(limited.body).not.toHaveProperty('data');
    expect(limited.headers['ratelimit-limit']).toBe('5');
    expect(limited.headers['ratelimit-remaining']).toBe('0');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  }
  expect(answers.filter((r) => r.status === 200).map((r) => r.headers['ratelimit-remaining']).sort()).toEqual(['0', '1', '2', '3']);
});

describe('a person signed in', () => {
  // A project per test: each spends a few of its budget of 5 requests a minute.
  let projectId: string;
  beforeEach(async () => { projectId = (await t.newProject('people ahead')).id; });
  const setRole = (userId: string, role: string) => t.db.knex.raw('UPDATE memberships SET role = ? WHERE project_id = ? AND user_id = ?', [role, projectId, userId]);

  test('whose role no longer allows the page is refused as the route refuses it', async () => {
    const admin = await person(t.db.knex, { [projectId]: 'admin' });
    const cookie = await signIn(t.server, admin.email);
    expect((await t.http().get('/keys').set(asPerson(cookie, projectId))).status).toBe(200);
    await setRole(admin.id, 'viewer');

    const refused = await t.http().get('/keys').set(asPerson(cookie, projectId));
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toContain('Your role (viewer)');
    expect(refused.text).not.toContain('"items"');
    expect((await t.http().get('/contacts').set(asPerson(cookie, projectId))).status).toBe(200);
  });

  test('whose role now allows what it did not is asked to send again, and then answered', async () => {
    const viewer = await person(t.db.knex, { [projectId]: 'viewer' });
    const cookie = await signIn(t.server, viewer.email);
    expect((await t.http().get('/keys').set(asPerson(cookie, projectId))).status).toBe(403);
    await setRole(viewer.id, 'admin');

    const changed = await t.http().get('/keys').set(asPerson(cookie, projectId));
    expect(changed.status).toBe(409);
    expect(changed.body.error.code).toBe('ACCESS_CHANGED');
    expect((await t.http().get('/keys').set(asPerson(cookie, projectId))).status).toBe(200);
  });

  test('whose session ended elsewhere, or whose membership ended, is refused', async () => {
    const member = await person(t.db.knex, { [projectId]: 'member' });
    const cookie = await signIn(t.server, member.email);
    expect((await t.http().get('/contacts').set(asPerson(cookie, projectId))).status).toBe(200);
    await t.db.knex.raw('DELETE FROM memberships WHERE project_id = ? AND user_id = ?', [projectId, member.id]);
    expect((await t.http().get('/contacts').set(asPerson(cookie, projectId))).status).toBe(404);

    const other = await person(t.db.knex, { [projectId]: 'member' });
    const otherCookie = await signIn(t.server, other.email);
    expect((await t.http().get('/contacts').set(asPerson(otherCookie, projectId))).status).toBe(200);
    await t.db.knex.raw('UPDATE sessions SET ended_at = now() WHERE user_id = ?', [other.id]);
    const ended = await t.http().get('/contacts').set(asPerson(otherCookie, projectId));
    expect(ended.status).toBe(401);
    expect(ended.headers['set-cookie']?.[0]).toMatch(/^herald_session=;/);
  });
});

describe('a read whose path names another project\'s resource', () => {
  const workflow = { name: 'Welcome', enabled: false, trigger: { type: 'EVENT', event: 'signed-up' }, steps: [{ id: 'wait', type: 'DELAY', config: { amount: 1, unit: 'days' }, next: null }] };

  // The route looks what its path names up beside its own work (api/routing.ts jsonHandler): the lookup's 404 still wins.
  test('is a 404 whatever its query says, and the owner\'s read is answered', async () => {
    const owner = await t.newProject('owner of the workflow');
    const stranger = await t.newProject('stranger');
    const created = await t.http().post('/workflows').set(bearer(owner.secretKey)).send(workflow).expect(201);
    const segment = await t.http().post('/segments').set(bearer(owner.secretKey)).send({ name: 'Imported', type: 'STATIC' }).expect(201);
    const executions = `/workflows/${created.body.data.id}/executions`;

    for (const path of [`${executions}?limit=0`, `${executions}?limit=20`, `/segments/${segment.body.data.id}/contacts?limit=abc`]) {
      const res = await t.http().get(path).set(bearer(stranger.secretKey));
      expect(res.status).toBe(404);
      expect(res.body).not.toHaveProperty('data');
    }
    expect((await t.http().get(`${executions}?limit=0`).set(bearer(owner.secretKey))).status).toBe(400);
    const own = await t.http().get(`${executions}?limit=20`).set(bearer(owner.secretKey));
    expect(own.status).toBe(200);
    expect(own.body.data).toMatchObject({ items: [], total: 0, totalExact: true });
  });

  // Their services refuse another project's id themselves (handleLooksUp): the route's lookup runs only on a refusal.
  test('an executions or segment page answered looks its workflow or segment up once', async () => {
    const owner = await t.newProject('one lookup');
    const created = await t.http().post('/workflows').set(bearer(owner.secretKey)).send(workflow).expect(201);
    const segment = await t.http().post('/segments').set(bearer(owner.secretKey)).send({ name: 'Imported', type: 'STATIC' }).expect(201);
    const statements: string[] = [];
    const seen = (q: { sql: string }) => statements.push(q.sql);
    t.db.knex.on('query', seen);
    try {
      await t.http().get(`/workflows/${created.body.data.id}/executions?limit=20`).set(bearer(owner.secretKey)).expect(200);
      expect(statements.filter((sql) => /from "automations"/.test(sql))).toHaveLength(1);
      // A segment's page: the project's segments read once, then checked in the page's own statement (__check) once
      // this process knows them (audience/segments.ts knownSegments), never looked up by the route as well.
      const readsSegments = () => statements.filter((sql) => /from "?segments"?(\s|$)/i.test(sql));
      statements.length = 0;
      await t.http().get(`/segments/${segment.body.data.id}/contacts?limit=20`).set(bearer(owner.secretKey)).expect(200);
      expect(readsSegments()).toHaveLength(2);
      expect(readsSegments().filter((sql) => sql.includes('__check'))).toHaveLength(1);
      statements.length = 0;
      await t.http().get(`/segments/${segment.body.data.id}/contacts?limit=20`).set(bearer(owner.secretKey)).expect(200);
      expect(readsSegments()).toHaveLength(1);
      expect(readsSegments()[0]).toContain('__check');
    } finally {
      t.db.knex.off('query', seen);
    }
  });
});
