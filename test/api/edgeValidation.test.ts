import { deflateSync, gzipSync } from 'node:zlib';
import request from 'supertest';
import { addDomain } from '../../projects/service';
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
