import { createApp } from '../../api/app';
import { Model } from 'objection';
import { createProject, setProjectDisabled } from '../../projects/service';
import { createTestDatabase } from '../support/db';
import { bearer, createTestContext, testAppDeps, type TestContext } from '../support/app';
import request from 'supertest';

let t: TestContext;
beforeAll(async () => { t = await createTestContext(); });
afterAll(async () => { await t.close(); });

/**
 * Every error answer has the spec's envelope, and its requestId equals the X-Request-Id header; beside it, the second
 * shape's top-level code (the HTTP status), message (= error.message) and time (epoch ms, the instant of timestamp).
 */
function expectEnvelope(res: request.Response, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/application\/json/);
  expect(res.body).toMatchObject({ success: false, error: { code, statusCode: status, message: expect.any(String) } });
  expect(res.body.error.requestId).toBe(res.headers['x-request-id']);
  expect(new Date(res.body.timestamp).toISOString()).toBe(res.body.timestamp);
  expect(res.body.code).toBe(status);
  expect(res.body.message).toBe(res.body.error.message);
  expect(res.body.time).toBe(Date.parse(res.body.timestamp));
}

describe('both error shapes', () => {
  test('the envelope whole, and the second shape\'s code, message and time beside it', async () => {
    const res = await t.http().post('/v1/send').set(bearer(t.project.publicKey)).send({ to: 'a@example.org', subject: 's', body: 'b' });
    expect(Object.keys(res.body).sort()).toEqual(['code', 'error', 'message', 'success', 'time', 'timestamp']);
    expect(res.body).toEqual({
      success: false,
      error: { code: 'FORBIDDEN', message: expect.any(String), statusCode: 403, requestId: res.headers['x-request-id'], suggestion: expect.any(String) },
      timestamp: expect.any(String),
      code: 403,
      message: res.body.error.message,
      time: Date.parse(res.body.timestamp),
    });
    expect(Math.abs(res.body.time - Date.now())).toBeLessThan(60_000);
  });

  test('on /v1/verify and /v1/track too', async () => {
    expectEnvelope(await t.http().post('/v1/verify').set(bearer(t.project.secretKey)).send({}), 422, 'VALIDATION_ERROR');
    const track = await t.http().post('/v1/track').set(bearer(t.project.publicKey)).send({ event: 'signup' });
    expectEnvelope(track, 422, 'VALIDATION_ERROR');
  });
});

describe('request id', () => {
  test('every response carries X-Request-Id, successes too', async () => {
    const res = await t.http().get('/health');
    expect(res.headers['x-request-id']).toMatch(/^req_[0-9a-f]{32}$/);
  });

  test('a sane incoming X-Request-Id is reused', async () => {
    const res = await t.http().get('/contacts/nope').set(bearer(t.project.secretKey)).set('X-Request-Id', 'trace-123.abc');
    expect(res.headers['x-request-id']).toBe('trace-123.abc');
    expect(res.body.error.requestId).toBe('trace-123.abc');
  });

  test('an unsafe incoming X-Request-Id is replaced', async () => {
    const res = await t.http().get('/health').set('X-Request-Id', 'bad id with spaces');
    expect(res.headers['x-request-id']).toMatch(/^req_/);
  });
});

describe('401 UNAUTHORIZED', () => {
  test('missing key', async () => {
    const res = await t.http().get('/contacts');
    expectEnvelope(res, 401, 'UNAUTHORIZED');
    expect(res.body.error.message).toMatch(/missing/i);
    expect(res.body.error.suggestion).toMatch(/Authorization: Bearer/);
  });

  test('not a Bearer header', async () => {
    expectEnvelope(await t.http().get('/contacts').set('Authorization', `Basic ${t.project.secretKey}`), 401, 'UNAUTHORIZED');
  });

  test('malformed key', async () => {
    const res = await t.http().get('/contacts').set(bearer('sk_short'));
    expectEnvelope(res, 401, 'UNAUTHORIZED');
    expect(res.body.error.message).toMatch(/malformed/i);
  });

  test('well-formed but unknown key', async () => {
    const res = await t.http().get('/contacts').set(bearer(`sk_${'A'.repeat(40)}`));
    expectEnvelope(res, 401, 'UNAUTHORIZED');
    expect(res.body.error.message).toBe('Invalid API key');
  });

  test('right lookup part, wrong secret part', async () => {
    const forged = t.project.secretKey.slice(0, -4) + (t.project.secretKey.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    expectEnvelope(await t.http().get('/contacts').set(bearer(forged)), 401, 'UNAUTHORIZED');
  });

  test('a secret key presented with the public prefix', async () => {
    const swapped = `pk_${t.project.secretKey.slice(3)}`;
    expectEnvelope(await t.http().get('/contacts').set(bearer(swapped)), 401, 'UNAUTHORIZED');
  });

  test('revoked key', async () => {
    const p = await t.newProject('revoked');
    await t.db.knex('api_keys').where({ project_id: p.id, type: 'secret' }).update({ revoked_at: new Date() });
    expectEnvelope(await t.http().get('/contacts').set(bearer(p.secretKey)), 401, 'UNAUTHORIZED');
  });
});

describe('403', () => {
  test('public key on a management route is FORBIDDEN', async () => {
    const res = await t.http().get('/contacts').set(bearer(t.project.publicKey));
    expectEnvelope(res, 403, 'FORBIDDEN');
    expect(res.body.error.message).toMatch(/\/v1\/track/);
  });

  test('disabled project is PROJECT_DISABLED, and enabling restores access', async () => {
    const p = await t.newProject('to disable');
    await setProjectDisabled(p.id, true);
    expectEnvelope(await t.http().get('/contacts').set(bearer(p.secretKey)), 403, 'PROJECT_DISABLED');
    await setProjectDisabled(p.id, false);
    expect((await t.http().get('/contacts').set(bearer(p.secretKey))).status).toBe(200);
  });
});

describe('400 BAD_REQUEST', () => {
  test('malformed JSON', async () => {
    const res = await t.http().post('/contacts').set(bearer(t.project.secretKey)).set('Content-Type', 'application/json').send('{"email": "a@b.c",');
    expectEnvelope(res, 400, 'BAD_REQUEST');
    expect(res.body.error.message).toMatch(/malformed json/i);
  });

  test('a body that is JSON but not an object', async () => {
    const res = await t.http().post('/contacts').set(bearer(t.project.secretKey)).set('Content-Type', 'application/json').send('[1,2]');
    expectEnvelope(res, 400, 'BAD_REQUEST');
  });

  test('wrong content type', async () => {
    const res = await t.http().post('/contacts').set(bearer(t.project.secretKey)).set('Content-Type', 'text/plain').send('email=a@b.c');
    expectEnvelope(res, 400, 'BAD_REQUEST');
    expect(res.body.error.suggestion).toMatch(/application\/json/);
  });

  test('query parameters of the wrong type or unknown name name the parameter', async () => {
    const bad = await t.http().get('/contacts?limit=abc').set(bearer(t.project.secretKey));
    expectEnvelope(bad, 400, 'BAD_REQUEST');
    expect(bad.body.error.errors).toEqual([expect.objectContaining({ field: 'limit', code: 'invalid_type' })]);
    const unknown = await t.http().get('/contacts?colour=red').set(bearer(t.project.secretKey));
    expectEnvelope(unknown, 400, 'BAD_REQUEST');
    expect(unknown.body.error.errors[0]).toMatchObject({ field: 'colour', code: 'unrecognized_key' });
  });

  test('a cursor the API did not issue', async () => {
    const res = await t.http().get('/contacts?cursor=bm9wZQ').set(bearer(t.project.secretKey));
    expectEnvelope(res, 400, 'BAD_REQUEST');
    expect(res.body.error.errors[0].field).toBe('cursor');
  });
});

describe('404, 405, 413', () => {
  test('unknown route, with or without a key', async () => {
    expectEnvelope(await t.http().get('/nope'), 404, 'NOT_FOUND');
    expectEnvelope(await t.http().post('/v2/whatever').set(bearer(t.project.secretKey)), 404, 'NOT_FOUND');
  });

  test('wrong method answers 405 with Allow', async () => {
    const res = await t.http().put('/contacts').set(bearer(t.project.secretKey));
    expectEnvelope(res, 405, 'METHOD_NOT_ALLOWED');
    expect(res.headers.allow).toContain('GET');
    expect(res.headers.allow).toContain('POST');
    expectEnvelope(await t.http().post('/health'), 405, 'METHOD_NOT_ALLOWED');
  });

  test('body over the limit answers 413', async () => {
    const res = await t.http().post('/contacts').set(bearer(t.project.secretKey)).set('Content-Type', 'application/json')
      .send(JSON.stringify({ email: 'big@example.com', data: { blob: 'x'.repeat(2 * 1024 * 1024) } }));
    expectEnvelope(res, 413, 'PAYLOAD_TOO_LARGE');
  });
});

describe('422 VALIDATION_ERROR', () => {
  test('lists every offending field with its path and a stable code', async () => {
    const res = await t.http().post('/contacts').set(bearer(t.project.secretKey))
      .send({ email: 'not-an-email', subscribed: 'maybe', data: { nested: 1 }, extra: true });
    expectEnvelope(res, 422, 'VALIDATION_ERROR');
    const byField = Object.fromEntries(res.body.error.errors.map((e: { field: string; code: string }) => [e.field, e.code]));
    expect(byField).toEqual({ email: 'invalid_string', subscribed: 'invalid_type', extra: 'unrecognized_key' });
    for (const e of res.body.error.errors) expect(e.message).toEqual(expect.any(String));
  });

  test('missing required field', async () => {
    const res = await t.http().post('/contacts').set(bearer(t.project.secretKey)).send({});
    expectEnvelope(res, 422, 'VALIDATION_ERROR');
    expect(res.body.error.errors).toEqual([expect.objectContaining({ field: 'email', code: 'required' })]);
  });

  test('nested paths are dotted', async () => {
    const res = await t.http().post('/contacts').set(bearer(t.project.secretKey)).send({ email: 'a@example.com', data: { ['k'.repeat(101)]: 1 } });
    expectEnvelope(res, 422, 'VALIDATION_ERROR');
    expect(res.body.error.errors[0].field).toMatch(/^data/);
  });
});

describe('500', () => {
  test('an unexpected failure leaks nothing internal', async () => {
    // A database of its own whose contacts table is gone (renamed away): the query fails inside the handler.
    const broken = await createTestDatabase();
    try {
      const p = await createProject('broken');
      await broken.knex.raw('ALTER TABLE contacts RENAME TO contacts_gone');
      const app = createApp(testAppDeps(broken.knex, { apiRateLimitPerMinute: 1000 }));
      const res = await request(app.callback()).get('/contacts').set(bearer(p.secretKey));
      expectEnvelope(res, 500, 'INTERNAL_ERROR');
      expect(res.body.error.message).toBe('An unexpected error occurred');
      expect(JSON.stringify(res.body)).not.toMatch(/contacts|relation|select|stack|at /i);
    } finally {
      await broken.close();
      // Give the models back to this file's database.
      Model.knex(t.db.knex);
    }
  });
});
