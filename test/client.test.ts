import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createHeraldClient, type HeraldClient } from '../client';
import { addDomain } from '../domains/rows';
import { createTestContext, type TestContext } from './support/app';

/** The typed client (client/): generated from the document, and used against a running Herald over real HTTP. */
let t: TestContext;
let herald: HeraldClient;

beforeAll(async () => {
  t = await createTestContext();
  await addDomain(t.project.id, 'example.com', true);
  const baseUrl = `http://127.0.0.1:${(t.server.address() as AddressInfo).port}/`;
  herald = createHeraldClient({ baseUrl, apiKey: t.project.secretKey });
});
afterAll(() => t.close());

test('the committed types are those the document generates now (run `npm run client:generate` after changing the API)', async () => {
  // The generator runs as the npm script does (openapi-typescript needs ES modules that Jest's registry cannot load).
  const root = join(__dirname, '..');
  const { stdout } = await promisify(execFile)(join(root, 'node_modules', '.bin', 'tsx'), [join(root, 'bin', 'generate-client.ts'), '--stdout'], { cwd: root, maxBuffer: 16 * 1024 * 1024 });
  expect(stdout.length).toBeGreaterThan(10_000);
  expect(readFileSync(join(root, 'client', 'schema.d.ts'), 'utf8')).toBe(stdout);
}, 60_000);

test('sends an email, tracks an event with the public key, and lists contacts through the typed client', async () => {
  const sent = await herald.POST('/v1/send', {
    body: { to: { email: 'ada@example.org', name: 'Ada' }, from: 'hello@example.com', subject: 'Hi {{ name }}', body: '<p>Hello</p>', data: { name: 'Ada' } },
    params: { header: { 'Idempotency-Key': 'client-test-1' } },
  });
  expect(sent.error).toBeUndefined();
  expect(sent.response.status).toBe(200);
  const [entry] = sent.data!.data.emails;
  expect(entry).toMatchObject({ status: 'QUEUED', contact: { email: 'ada@example.org' } });

  const email = await herald.GET('/emails/{id}', { params: { path: { id: entry!.email! } } });
  expect(email.data?.data).toMatchObject({ id: entry!.email, to: 'ada@example.org', subject: 'Hi Ada', status: 'QUEUED' });

  const publicClient = createHeraldClient({ baseUrl: `http://127.0.0.1:${(t.server.address() as AddressInfo).port}`, apiKey: t.project.publicKey });
  const tracked = await publicClient.POST('/v1/track', { body: { email: 'grace@example.org', event: 'signed-up', data: { plan: 'pro' } } });
  expect(tracked.error).toBeUndefined();
  expect(tracked.data!.data).toMatchObject({ contact: expect.any(String), event: expect.any(String) });

  const page = await herald.GET('/contacts', { params: { query: { limit: 10, search: 'example.org' } } });
  expect(page.error).toBeUndefined();
  expect(page.data!.data.items.map((c) => c.email).sort()).toEqual(['ada@example.org', 'grace@example.org']);
  expect(page.data!.data.items.find((c) => c.email === 'grace@example.org')?.data).toEqual({ plan: 'pro' });
  expect(page.data!.data.total).toBe(2);
});

test('errors come back typed as the error envelope', async () => {
  const missing = await herald.GET('/contacts/{id}', { params: { path: { id: '0190a3f1-0000-7000-8000-000000000000' } } });
  expect(missing.data).toBeUndefined();
  expect(missing.response.status).toBe(404);
  expect(missing.error?.error.code).toBe('NOT_FOUND');
  const invalid = await herald.POST('/contacts', { body: { email: 'not an address' } });
  expect(invalid.response.status).toBe(422);
  expect(invalid.error?.error.errors?.map((e) => e.field)).toEqual(['email']);
  const refused = await createHeraldClient({ baseUrl: `http://127.0.0.1:${(t.server.address() as AddressInfo).port}`, apiKey: t.project.publicKey }).GET('/contacts');
  expect(refused.response.status).toBe(403);
});
