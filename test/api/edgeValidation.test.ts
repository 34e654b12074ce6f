import { Writable } from 'node:stream';
import { deflateSync, gzipSync } from 'node:zlib';
import Koa from 'koa';
import pino from 'pino';
import request from 'supertest';
import { errorHandler } from '../../api/middleware/errorHandler';
import { requestId } from '../../api/middleware/requestId';
import { addDomain } from '../../domains/rows';
import { bearer, createTestContext, type TestContext } from '../support/app';

/**
 * Issue 13: values that used to reach PostgreSQL (or overflow the stack on the way) and come back as 500s. Each
 * cause is refused at the edge with a 4xx in the envelope naming the field, and nothing of the request is stored.
 */
let t: TestContext;
let key: { Authorization: string };
beforeAll(async () => {
  t = await createTestContext();
  key = bearer(t.project.secretKey);
  await addDomain(t.project.id, 'example.com', true);
});
afterAll(async () => { await t.close(); });

interface FieldError { field: string; message: string; code: string }

/** The envelope of an error answer; answers its `errors[]` (empty when there are none). */
function expectError(res: request.Response, status: number, code: string): FieldError[] {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`);
  expect(res.body).toMatchObject({ success: false, error: { code, statusCode: status, message: expect.any(String), requestId: res.headers['x-request-id'] } });
  return (res.body.error.errors ?? []) as FieldError[];
}

const fieldsOf = (errors: FieldError[]) => errors.map((e) => [e.field, e.code]);
const contactCount = async () => (await t.http().get('/contacts?limit=1').set(key)).body.data.total as number;
/** Sends the bytes as they are (superagent would serialise a Buffer as JSON). */
const postJson = (path: string, text: string | Buffer) =>
  t.http().post(path).set(key).set('Content-Type', 'application/json').serialize((b: unknown) => b as string).send(text);

describe('Content-Encoding', () => {
  const body = JSON.stringify({ email: 'enc@example.com', data: { a: 1 } });

  test('gzip (or deflate, br) named, but the body is plain: 400 BAD_REQUEST, nothing stored', async () => {
    for (const encoding of ['gzip', 'deflate', 'br']) {
      const res = await postJson('/contacts', body).set('Content-Encoding', encoding);
      expectError(res, 400, 'BAD_REQUEST');
      expect(res.body.error.message).toContain(encoding);
    }
    expect((await t.http().get('/contacts?search=enc@').set(key)).body.data.total).toBe(0);
  });

  test('an unsupported or stacked encoding: 415 UNSUPPORTED_MEDIA_TYPE', async () => {
    for (const encoding of ['compress', 'zstd', 'x-whatever', 'gzip, br']) {
      const res = await postJson('/contacts', body).set('Content-Encoding', encoding);
      expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
      expect(res.body.error.message).toMatch(/Content-Encoding/);
    }
  });

  test('a body really encoded is read (coding names are case-insensitive); decoded, it is held to the size limit', async () => {
    expect((await postJson('/contacts', gzipSync(body)).set('Content-Encoding', 'GZip')).status).toBe(201);
    expect((await postJson('/contacts', deflateSync(JSON.stringify({ email: 'enc2@example.com' }))).set('Content-Encoding', 'deflate')).status).toBe(201);
    // 2 MB of zeros compress to a few KB: the 1 MB limit applies to what they decode to.
    const bomb = gzipSync(JSON.stringify({ email: 'bomb@example.com', data: { x: '0'.repeat(2 * 1024 * 1024) } }));
    expect(bomb.length).toBeLessThan(10_000);
    expectError(await postJson('/contacts', bomb).set('Content-Encoding', 'gzip'), 413, 'PAYLOAD_TOO_LARGE');
  });
});

describe('U+0000', () => {
  test('in a data value, a data key, a plain field: 422 naming each, nothing stored', async () => {
    const before = await contactCount();
    let res = await t.http().post('/contacts').set(key).send({ email: 'nul@example.com', data: { note: 'a\u0000b', ok: 'fine' } });
    expect(fieldsOf(expectError(res, 422, 'VALIDATION_ERROR'))).toEqual([['data.note', 'invalid_string']]);
    expect(res.body.error.message).toMatch(/U\+0000/);

    res = await t.http().post('/contacts').set(key).send({ email: 'nul@example.com', data: { nested: { ['k\u0000']: 1 } } });
    expect(fieldsOf(expectError(res, 422, 'VALIDATION_ERROR'))).toEqual([['data.nested.k\uFFFD', 'invalid_string']]);

    res = await t.http().post('/templates').set(key).send({ name: 'n\u0000', subject: 's', body: 'b' });
    expect(fieldsOf(expectError(res, 422, 'VALIDATION_ERROR'))).toEqual([['name', 'invalid_string']]);

    res = await t.http().post('/v1/track').set(key).send({ email: 'nul@example.com', event: 'signup', data: { list: ['x', 'y\u0000'] } });
    expect(fieldsOf(expectError(res, 422, 'VALIDATION_ERROR'))).toEqual([['data.list.1', 'invalid_string']]);
    expect(await contactCount()).toBe(before);
  });

  test('in a query parameter: 400 naming it', async () => {
    const res = await t.http().get('/contacts?search=a%00b').set(key);
    expect(fieldsOf(expectError(res, 400, 'BAD_REQUEST'))).toEqual([['search', 'invalid_string']]);
  });
});

describe('lone surrogates', () => {
  test('in data values and keys: 422 naming each; a surrogate pair is fine', async () => {
    const before = await contactCount();
    // JSON.stringify writes a lone surrogate as the escape \ud800, which the server's JSON.parse turns back into one.
    const res = await t.http().post('/v1/track').set(key)
      .send({ email: 'sur@example.com', event: 'signup', data: { a: { b: 'x\ud800' }, ['\udfffkey']: 1, emoji: '😀' } });
    expect(fieldsOf(expectError(res, 422, 'VALIDATION_ERROR'))).toEqual([['data.a.b', 'invalid_string'], ['data.\uFFFDkey', 'invalid_string']]);
    expect(res.body.error.errors[0].message).toMatch(/unpaired surrogate/);
    expect(await contactCount()).toBe(before);
    expect((await t.http().post('/contacts').set(key).send({ email: 'sur@example.com', data: { emoji: '😀 \ud83d\ude00' } })).status).toBe(201);
  });

  test('in /v1/send data: 422', async () => {
    const res = await t.http().post('/v1/send').set(key).send({ to: 'x@example.com', subject: 's', body: 'b', data: { ['\ud800']: 'v' } });
    expect(fieldsOf(expectError(res, 422, 'VALIDATION_ERROR'))).toEqual([['data.\uFFFD', 'invalid_string']]);
  });
});

describe('UUIDs: the canonical form only', () => {
  const id = '0190f3a4-7b7c-7d2e-8f00-0123456789ab';
  const others = [`{${id}}`, `[${id}]`, `(${id})`, id.replace(/-/g, ''), id.replace(/-/g, ':'), ` ${id}`];

  test('Joi\'s other GUID spellings in a query or a body: 400 / 422 naming the field', async () => {
    for (const form of others) {
      expect(fieldsOf(expectError(await t.http().get(`/events?contactId=${encodeURIComponent(form)}`).set(key), 400, 'BAD_REQUEST')))
        .toEqual([['contactId', 'invalid_string']]);
      const send = await t.http().post('/v1/send').set(key).send({ to: 'x@example.com', template: form });
      expect(fieldsOf(expectError(send, 422, 'VALIDATION_ERROR'))).toEqual([['template', 'invalid_string']]);
      const campaign = await t.http().post('/campaigns').set(key)
        .send({ name: 'c', subject: 's', body: 'b', from: 'news@example.com', audienceType: 'SEGMENT', segmentId: form });
      expect(fieldsOf(expectError(campaign, 422, 'VALIDATION_ERROR'))).toEqual([['segmentId', 'invalid_string']]);
    }
  });

  test('upper case is the same id, in a query, a body and a path; other spellings in a path are 404', async () => {
    const contact = (await t.http().post('/contacts').set(key).send({ email: 'uuid@example.com' })).body.data;
    const upper = contact.id.toUpperCase();
    expect((await t.http().get(`/events?contactId=${upper}`).set(key)).status).toBe(200);
    const got = await t.http().get(`/contacts/${upper}`).set(key);
    expect(got.status).toBe(200);
    expect(got.body.data.id).toBe(contact.id);
    for (const form of [`{${contact.id}}`, contact.id.replace(/-/g, ''), contact.id.replace(/-/g, ':')]) {
      expectError(await t.http().get(`/contacts/${encodeURIComponent(form)}`).set(key), 404, 'NOT_FOUND');
      expectError(await t.http().get(`/segments/${encodeURIComponent(form)}`).set(key), 404, 'NOT_FOUND');
    }
    const segment = (await t.http().post('/segments').set(key).send({ name: 'S', type: 'STATIC' })).body.data;
    const campaign = await t.http().post('/campaigns').set(key)
      .send({ name: 'c', subject: 's', body: 'b', from: 'news@example.com', audienceType: 'SEGMENT', segmentId: segment.id.toUpperCase() });
    expect(campaign.status).toBe(201);
    expect(campaign.body.data.segmentId).toBe(segment.id);
  });
});

describe('nesting depth and size', () => {
  const deepObject = (n: number) => `{"email":"deep@example.com","data":${'{"a":'.repeat(n)}1${'}'.repeat(n)}}`;
  const deepArray = (n: number) => `{"email":"deep@example.com","data":{"a":${'['.repeat(n)}${']'.repeat(n)}}}`;

  test('5,000 and 100,000 levels: 422 naming the path where the limit is passed, nothing stored', async () => {
    const before = await contactCount();
    for (const text of [deepObject(5_000), deepObject(100_000), deepArray(100_000)]) {
      const errors = expectError(await postJson('/contacts', text), 422, 'VALIDATION_ERROR');
      expect(errors).toHaveLength(1);
      expect(errors[0]!.code).toBe('too_big');
      expect(errors[0]!.field).toMatch(/^data\.a(\.(a|0))+$/);
      expect(errors[0]!.field.split('.')).toHaveLength(32); // the 33rd level is the one refused
    }
    expect(await contactCount()).toBe(before);
  });

  test('1,000,000 levels on /v1/send (15 MB limit), and unterminated deep JSON: 4xx, never a stack overflow', async () => {
    const n = 1_000_000;
    const send = `{"to":"x@example.com","subject":"s","body":"b","data":{"a":${'['.repeat(n)}${']'.repeat(n)}}}`;
    expectError(await postJson('/v1/send', send), 422, 'VALIDATION_ERROR');
    expectError(await postJson('/contacts', `{"email":"deep@example.com","data":${'['.repeat(200_000)}`), 400, 'BAD_REQUEST');
  });

  test('data: 16 levels and 64 KB at most', async () => {
    const nest = (levels: number): unknown => (levels === 1 ? { v: 1 } : { a: nest(levels - 1) });
    expect((await t.http().post('/contacts').set(key).send({ email: 'd16@example.com', data: nest(16) })).status).toBe(201);
    let res = await t.http().post('/contacts').set(key).send({ email: 'd17@example.com', data: nest(17) });
    expect(fieldsOf(expectError(res, 422, 'VALIDATION_ERROR'))).toEqual([['data', 'too_big']]);
    res = await t.http().post('/contacts').set(key).send({ email: 'big@example.com', data: { blob: 'x'.repeat(64 * 1024) } });
    expect(fieldsOf(expectError(res, 422, 'VALIDATION_ERROR'))).toEqual([['data', 'too_big']]);
    expect((await t.http().get('/contacts?search=big@').set(key)).body.data.total).toBe(0);
  });

  test('any other part of a body: 32 levels at most (an audience filter value here)', async () => {
    let value: unknown = 1;
    for (let i = 0; i < 40; i++) value = [value];
    const res = await t.http().post('/segments/preview').set(key)
      .send({ condition: { groups: [{ filters: [{ field: 'data.x', operator: 'equals', value }] }] } });
    const errors = expectError(res, 422, 'VALIDATION_ERROR');
    expect(errors).toEqual([expect.objectContaining({ code: 'too_big', field: expect.stringMatching(/^condition\.groups\.0\.filters\.0\.value(\.0)+$/) })]);
  });
});

describe('dates within PostgreSQL\'s range (years 0001 to 9999)', () => {
  const filter = (field: string, value: unknown) => ({ logic: 'AND', groups: [{ filters: [{ field, operator: 'greaterThan', value }] }] });

  test('a segment condition on updatedAt with year 0000 (or another unreadable date): 422 at the value, nothing stored', async () => {
    for (const value of ['0000-01-01T00:00:00Z', '-004714-01-01T00:00:00Z', '+010000-01-01T00:00:00Z', '10000-01-01', '2024-02-30T00:00:00Z', '2024-01-01T00:00:00Z (UTC)', '0001-01-01T00:00:00+01:00']) {
      const res = await t.http().post('/segments').set(key).send({ name: 'old', type: 'DYNAMIC', condition: filter('updatedAt', value) });
      expect(fieldsOf(expectError(res, 422, 'VALIDATION_ERROR'))).toEqual([['condition.groups.0.filters.0.value', 'invalid_type']]);
      const data = await t.http().post('/segments/preview').set(key).send({ condition: filter('data.since', value) });
      expect(fieldsOf(expectError(data, 422, 'VALIDATION_ERROR'))).toEqual([['condition.groups.0.filters.0.value', 'invalid_type']]);
    }
    const list = await t.http().get('/segments').set(key);
    expect(list.status).toBe(200);
    expect(list.body.data.items.filter((s: { name: string }) => s.name === 'old')).toEqual([]);
  });

  test('every accepted form is one PostgreSQL reads too', async () => {
    for (const value of ['0001-01-01T00:00:00Z', '9999-12-31T23:59:59.999Z', '2024-01-01', '2024-01-01T10:00Z', '2024-01-01 10:00:00+01:00', '2024-01-01T10:00:00.123456789+0530', '2024-02-29t00:00:00z']) {
      const res = await t.http().post('/segments/preview').set(key).send({ condition: filter('createdAt', value) });
      expect([value, res.status]).toEqual([value, 200]);
    }
  });

  test('GET /events since/until outside the range: 400 naming the parameter', async () => {
    for (const [query, field] of [['since=-004714-01-01T00:00:00Z', 'since'], ['since=0000-01-01', 'since'], ['until=%2B275760-09-13T00:00:00Z', 'until'], ['until=2024-13-01', 'until']]) {
      const res = await t.http().get(`/events?${query}`).set(key);
      expect(fieldsOf(expectError(res, 400, 'BAD_REQUEST'))).toEqual([[field, 'invalid_string']]);
    }
    expect((await t.http().get('/events?since=0001-01-01T00:00:00Z&until=9999-12-31T23:59:59Z').set(key)).status).toBe(200);
  });

  test('a campaign scheduled beyond 9999: 422 at scheduledAt, the campaign stays a DRAFT', async () => {
    const campaign = (await t.http().post('/campaigns').set(key).send({ name: 'far', subject: 's', body: 'b', from: 'news@example.com', audienceType: 'ALL' })).body.data;
    const res = await t.http().post(`/campaigns/${campaign.id}/send`).set(key).send({ scheduledAt: '+010000-01-01T00:00:00Z' });
    expect(fieldsOf(expectError(res, 422, 'VALIDATION_ERROR'))).toEqual([['scheduledAt', 'invalid_string']]);
    expect((await t.http().get(`/campaigns/${campaign.id}`).set(key)).body.data.status).toBe('DRAFT');
  });
});

describe('a data exception that still reaches PostgreSQL', () => {
  /** The error middleware alone, in front of a handler running one SQL statement; its log lines are kept. */
  function appRunning(sql: string) {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({ write(chunk: Buffer, _enc, done) { lines.push(JSON.parse(chunk.toString())); done(); } });
    const app = new Koa();
    app.silent = true;
    app.use(requestId());
    app.use(errorHandler(pino({ level: 'info' }, sink)));
    app.use(async (ctx) => { ctx.body = (await t.db.knex.raw(sql)).rows; });
    return { app, lines };
  }

  test('SQLSTATE class 22 and 54001: 422 VALIDATION_ERROR, no SQL or value shown, logged at warn', async () => {
    const cases: [string, string][] = [
      ["SELECT 'not-a-uuid-secret'::uuid", '22P02'],
      ["SELECT '0000-01-01'::timestamptz AS secret", '22008'],
      ["SELECT '\"\\u0000 secret\"'::jsonb", '22P05'],
      ["SELECT 1e400::float8 AS secret", '22003'],
      [`SELECT '${'['.repeat(100_000)}'::jsonb AS secret`, '54001'],
    ];
    for (const [sql, sqlState] of cases) {
      const { app, lines } = appRunning(sql);
      const res = await request(app.callback()).get('/');
      expectError(res, 422, 'VALIDATION_ERROR');
      expect(JSON.stringify(res.body)).not.toMatch(/secret|select|uuid|jsonb|timestamptz|syntax/i);
      const warned = lines.find((l) => l.level === 40);
      expect(warned).toMatchObject({ sqlState });
      expect(JSON.stringify(warned)).not.toMatch(/secret/);
      expect(lines.some((l) => l.level === 50)).toBe(false);
    }
  });

  test('other database errors stay 500s', async () => {
    const { app, lines } = appRunning('SELECT * FROM no_such_table');
    expectError(await request(app.callback()).get('/'), 500, 'INTERNAL_ERROR');
    expect(lines.some((l) => l.level === 50)).toBe(true);
  });
});
