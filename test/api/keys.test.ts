import { addDomain } from '../../domains/rows';
import { ROUTES } from '../../api/routes/index';
import { bearer, createTestContext, type TestContext } from '../support/app';

/** API keys as a resource (issue 27, point 3): GET/POST/DELETE /keys, scopes, domain lists, lastUsedAt. */
let t: TestContext;
let admin: { Authorization: string };
beforeAll(async () => {
  t = await createTestContext();
  admin = bearer(t.project.secretKey);
  await addDomain(t.project.id, 'example.com', true);
  await addDomain(t.project.id, 'other.org', true);
});
afterAll(async () => { await t.close(); });

const makeKey = async (body: Record<string, unknown>) => {
  const res = await t.http().post('/keys').set(admin).send(body);
  expect(res.status).toBe(201);
  return res.body.data as { id: string; key: string; name: string; scope: string; domains: string[] | null; hint: string };
};
const mail = { to: 'reader@example.org', subject: 'Hi', body: '<p>Hi</p>' };

describe('keys CRUD', () => {
  test("a project's first keys are listed with their names; pk_ keys as type public", async () => {
    const res = await t.http().get('/keys').set(admin);
    expect(res.status).toBe(200);
    const items = res.body.data.items as { type: string; name: string; scope: string; domains: unknown }[];
    expect(items).toEqual(expect.arrayContaining([
      expect.objectContaining({ type: 'secret', name: 'Default secret key', scope: 'full', domains: null }),
      expect.objectContaining({ type: 'public', name: 'Default public key' }),
    ]));
  });

  test('POST /keys shows the key once (201); GET /keys never shows it again, only its hint', async () => {
    const made = await makeKey({ name: 'CI', scope: 'sending', domains: ['Example.com'] });
    expect(made.key).toMatch(/^sk_[A-Za-z0-9]{40}$/);
    expect(made).toMatchObject({ name: 'CI', scope: 'sending', domains: ['example.com'], hint: `…${made.key.slice(-4)}` });
    const list = await t.http().get('/keys').set(admin);
    expect(JSON.stringify(list.body)).not.toContain(made.key);
    expect(list.body.data.items.find((k: { id: string }) => k.id === made.id)).not.toHaveProperty('key');
  });

  test('keyset pages: every live key once, newest first', async () => {
    for (let i = 0; i < 4; i++) await makeKey({ name: `page ${i}`, scope: 'full' });
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const res = await t.http().get('/keys').query({ limit: 2, ...(cursor ? { cursor } : {}) }).set(admin);
      expect(res.status).toBe(200);
      seen.push(...res.body.data.items.map((k: { id: string }) => k.id));
      cursor = res.body.data.nextCursor ?? undefined;
    } while (cursor);
    const all = await t.db.knex('api_keys').where({ project_id: t.project.id }).whereNull('revoked_at').orderBy('id', 'desc').pluck('id');
    expect(seen).toEqual(all);
  });

  test('bad input names the field (422), never a 500', async () => {
    for (const [body, field] of [[{ scope: 'full' }, 'name'], [{ name: 'x', scope: 'root' }, 'scope'], [{ name: 'x', scope: 'full', domains: ['not a domain'] }, 'domains.0'], [{ name: 'x', scope: 'full', domains: [] }, 'domains']] as const) {
      const res = await t.http().post('/keys').set(admin).send(body);
      expect(res.status).toBe(422);
      expect(res.body.error.errors.map((e: { field: string }) => e.field)).toContain(field);
    }
  });

  test('DELETE /keys/:id revokes at once (the next request is 401); again, or a foreign id, is 404', async () => {
    const made = await makeKey({ name: 'short-lived', scope: 'full' });
    expect((await t.http().get('/contacts').set(bearer(made.key))).status).toBe(200);
    expect((await t.http().delete(`/keys/${made.id}`).set(admin)).status).toBe(204);
    expect((await t.http().get('/contacts').set(bearer(made.key))).status).toBe(401);
    expect((await t.http().delete(`/keys/${made.id}`).set(admin)).status).toBe(404);
    const other = await t.newProject('Keys B');
    const theirs = (await t.db.knex('api_keys').where({ project_id: other.id, type: 'secret' }).first('id')).id;
    expect((await t.http().delete(`/keys/${theirs}`).set(admin)).status).toBe(404);
    expect((await t.http().get('/contacts').set(bearer(other.secretKey))).status).toBe(200);
    expect((await t.http().get('/keys').set(bearer(other.secretKey))).body.data.items.map((k: { id: string }) => k.id)).not.toContain(made.id);
  });

  test('pk_ keys keep working on /v1/track and nowhere else', async () => {
    const pub = bearer(t.project.publicKey);
    expect((await t.http().post('/v1/track').set(pub).send({ event: 'opened-app', email: 'p@example.org' })).status).not.toBe(401);
    expect((await t.http().get('/keys').set(pub)).status).toBe(403);
  });
});

describe('scope sending', () => {
  const fill = (path: string) => path.replace(/:email/g, 'a@example.org').replace(/:[A-Za-z]+/g, '00000000-0000-7000-8000-000000000000');

  test('walks every operation of the route table: 403 for every permission but send, never 403 for send', async () => {
    const sending = bearer((await makeKey({ name: 'sender', scope: 'sending' })).key);
    const full = bearer((await makeKey({ name: 'full', scope: 'full' })).key);
    let walked = 0;
    for (const r of ROUTES) {
      if (r.serve || r.access === 'open' || r.people) continue; // project operations (people's own routes have no project)
      const path = fill(r.path);
      const call = (key: { Authorization: string }) => t.http()[r.method as 'get'](path).set(key).send(r.method === 'get' ? undefined : {});
      const res = await call(sending);
      if (r.permission === 'send') expect([r.operationId, res.status]).not.toEqual([r.operationId, 403]);
      else {
        expect([r.operationId, res.status]).toEqual([r.operationId, 403]);
        expect(res.body.error.message).toMatch(/scope sending/);
      }
      if (r.permission !== 'owner') expect([r.operationId, (await call(full)).status]).not.toEqual([r.operationId, 403]);
      walked++;
    }
    expect(walked).toBeGreaterThan(40);
  });

  test('a sending key sends', async () => {
    const sending = bearer((await makeKey({ name: 'sender 2', scope: 'sending' })).key);
    expect((await t.http().post('/v1/send').set(sending).send({ ...mail, from: 'hi@example.com' })).status).toBe(200);
  });
});

describe('domains', () => {
  test('a key limited to example.com sends From it and its subdomains; another domain is a 422 naming from', async () => {
    const key = bearer((await makeKey({ name: 'example only', scope: 'sending', domains: ['example.com'] })).key);
    expect((await t.http().post('/v1/send').set(key).send({ ...mail, from: 'hi@example.com' })).status).toBe(200);
    await addDomain(t.project.id, 'mail.example.com', true);
    expect((await t.http().post('/v1/send').set(key).send({ ...mail, from: 'hi@mail.example.com' })).status).toBe(200);
    const refused = await t.http().post('/v1/send').set(key).send({ ...mail, from: 'hi@other.org' });
    expect(refused.status).toBe(422);
    expect(refused.body.error.errors[0]).toMatchObject({ field: 'from', code: 'domain_not_allowed' });
    expect(refused.body.error.errors[0].message).toMatch(/From hi@other\.org .*example\.com/);
    // Not a suffix match on the name: notexample.com is no subdomain of example.com.
    await addDomain(t.project.id, 'notexample.com', true);
    expect((await t.http().post('/v1/send').set(key).send({ ...mail, from: 'hi@notexample.com' })).status).toBe(422);
    // A key without a list sends From any verified domain.
    expect((await t.http().post('/v1/send').set(admin).send({ ...mail, from: 'hi@other.org' })).status).toBe(200);
  });

  test("a template's sender is held to the key's domains too", async () => {
    const tpl = await t.http().post('/templates').set(admin).send({ name: 'other', subject: 'Hi', body: 'x', from: 'news@other.org' });
    const key = bearer((await makeKey({ name: 'example only 2', scope: 'full', domains: ['example.com'] })).key);
    const res = await t.http().post('/v1/send').set(key).send({ to: 'r@example.org', template: tpl.body.data.id });
    expect(res.status).toBe(422);
    expect(res.body.error.errors[0]).toMatchObject({ field: 'from', code: 'domain_not_allowed' });
  });
});

describe('lastUsedAt', () => {
  test('moves when a key is used, but not at every request (at most once a minute)', async () => {
    const made = await makeKey({ name: 'used', scope: 'full' });
    const lastUsed = async () => (await t.db.knex('api_keys').where({ id: made.id }).first('last_used_at')).last_used_at as Date | null;
    expect(await lastUsed()).toBeNull();
    await t.http().get('/contacts').set(bearer(made.key));
    const first = await lastUsed();
    expect(first).toBeInstanceOf(Date);
    for (let i = 0; i < 3; i++) await t.http().get('/contacts').set(bearer(made.key));
    expect(await lastUsed()).toEqual(first);
    // Over a minute old: the next request moves it.
    await t.db.knex('api_keys').where({ id: made.id }).update({ last_used_at: t.db.knex.raw("now() - interval '2 minutes'") });
    const aged = await lastUsed();
    await t.http().get('/contacts').set(bearer(made.key));
    expect((await lastUsed())!.getTime()).toBeGreaterThan(aged!.getTime());
    const listed = (await t.http().get('/keys').set(admin)).body.data.items.find((k: { id: string }) => k.id === made.id);
    expect(listed.lastUsedAt).toBe((await lastUsed())!.toISOString());
  });
});

describe('errors a newcomer meets first', () => {
  test('Invalid and Malformed API key carry a suggestion saying where keys come from', async () => {
    const invalid = await t.http().get('/contacts').set(bearer(`sk_${'a'.repeat(40)}`));
    expect(invalid.status).toBe(401);
    expect(invalid.body.error.message).toBe('Invalid API key');
    expect(invalid.body.error.suggestion).toMatch(/project create.*POST \/keys/);
    const malformed = await t.http().get('/contacts').set(bearer('sk_short'));
    expect(malformed.status).toBe(401);
    expect(malformed.body.error.suggestion).toMatch(/first start/);
  });

  test('POST /send, /track and /verify answer 404 naming the /v1 path, in the envelope', async () => {
    for (const p of ['send', 'track', 'verify']) {
      const res = await t.http().post(`/${p}`).set(admin).send({});
      expect(res.status).toBe(404);
      expect(res.body.success).toBe(false);
      expect(res.body.error.message).toContain(`POST /v1/${p}`);
    }
    expect((await t.http().post('/send').send({})).body.error.message).toContain('/v1/send');
  });
});
