import { createPublicKey, createSign, createVerify } from 'node:crypto';
import type { Server } from 'node:http';
import request from 'supertest';
import { createApp } from '../../api/app';
import type { DnsConfig } from '../../config';
import { getDomain, isVerifiedSender, markOperatorVerified } from '../../db/queries/domains';
import type { Engine, StartOptions } from '../../engine/types';
import { decryptPrivateKey } from '../../domains/dkim';
import { createProject, type CreatedProject } from '../../projects/service';
import { addDomain } from '../../domains/rows';
import { bearer, TEST_SECRET, testAppDeps } from '../support/app';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startDnsServer, type TestDnsServer } from '../support/dns';

/**
 * The domains API (issue 5) against a real PostgreSQL and a real DNS server on loopback: keys, records, statuses,
 * tenancy, and verification by DNS lookups.
 */

let db: TestDatabase;
let dns: TestDnsServer;
let server: Server;
let project: CreatedProject;
let key: { Authorization: string };
const starts: { workflow: string; input: unknown; opts: StartOptions }[] = [];

/** Records what the API starts (the scheduled re-check), starting nothing. */
const recordingEngine: Engine = {
  kind: 'embedded',
  waits: 'parked',
  start: async (workflow, input, opts) => { starts.push({ workflow, input, opts }); },
  cancel: async () => undefined,
  signal: async () => undefined,
  close: async () => undefined,
};

beforeAll(async () => {
  db = await createTestDatabase();
  dns = await startDnsServer();
  const config: DnsConfig = { servers: [dns.address], timeoutMs: 500, tries: 1, verifyBudgetMs: 500, domainCheckIntervalMinutes: 60 };
  server = createApp(testAppDeps(db.knex, { engine: recordingEngine, dns: config })).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  project = await createProject('Domains');
  key = bearer(project.secretKey);
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  await dns.close();
  await db.close();
});

const http = () => request(server);
const add = (domain: unknown, k = key) => http().post('/domains').set(k).send({ domain });

interface RecordJson { purpose: string; type: string; name: string; value: string; status: string; note?: string }
const record = (body: { data: { records: RecordJson[] } }, purpose: string) => body.data.records.find((r) => r.purpose === purpose)!;
const statuses = (body: { data: { records: RecordJson[] } }) => Object.fromEntries(body.data.records.map((r) => [r.purpose, r.status]));

/** Publishes the records a domain answered, as its owner would. */
function publish(d: { domain: string; records: RecordJson[] }, only: string[] = ['DKIM', 'SPF', 'DMARC']): void {
  for (const r of d.records) if (only.includes(r.purpose)) dns.add(r.name, { TXT: [r.value] });
}

describe('POST /domains', () => {
  test('201: a PENDING domain with its DKIM, SPF and DMARC records, each PENDING', async () => {
    const res = await add(' Mail.Acme-Widgets.COM. ');
    expect(res.status).toBe(201);
    const d = res.body.data;
    expect(d).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/), domain: 'mail.acme-widgets.com', status: 'PENDING',
      records: expect.any(Array), createdAt: expect.any(String), verifiedAt: null, checkedAt: null,
    });
    const dkim = record(res.body, 'DKIM');
    expect(dkim).toEqual({ purpose: 'DKIM', type: 'TXT', name: expect.stringMatching(/^herald\d{6}\._domainkey\.mail\.acme-widgets\.com$/), value: expect.stringMatching(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/]+=*$/), status: 'PENDING' });
    expect(record(res.body, 'SPF')).toMatchObject({ type: 'TXT', name: 'mail.acme-widgets.com', value: 'v=spf1 a mx ~all', status: 'PENDING', note: expect.any(String) });
    expect(record(res.body, 'DMARC')).toMatchObject({ type: 'TXT', name: '_dmarc.mail.acme-widgets.com', value: expect.stringMatching(/^v=DMARC1; p=none;/), status: 'PENDING', note: expect.stringMatching(/p=none/) });

    // An RSA-2048 public key; its private half is stored encrypted and signs what the public half verifies.
    const publicKey = createPublicKey({ key: Buffer.from(dkim.value.split('p=')[1]!, 'base64'), format: 'der', type: 'spki' });
    expect(publicKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
    const row = await db.knex('domains').where({ id: d.id }).first();
    expect(row.project_id).toBe(project.id);
    expect(Buffer.isBuffer(row.dkim_private_key)).toBe(true);
    expect(row.dkim_private_key.toString('latin1')).not.toMatch(/PRIVATE KEY|MII/);
    const pem = decryptPrivateKey(TEST_SECRET, project.id, d.domain, row.dkim_private_key);
    const signature = createSign('sha256').update('hello').sign(pem);
    expect(createVerify('sha256').update('hello').verify(publicKey, signature)).toBe(true);
    // Nothing of the private key in the answer.
    expect(JSON.stringify(res.body)).not.toMatch(/PRIVATE|privateKey/i);
  });

  test('starts the scheduled re-check for the next slot of the schedule', async () => {
    starts.length = 0;
    expect((await add('schedule.acme-widgets.com')).status).toBe(201);
    expect(starts).toHaveLength(1);
    const [s] = starts;
    expect(s!.workflow).toBe('checkDomains');
    const slot = (s!.input as { slot: number }).slot;
    expect(slot % (60 * 60_000)).toBe(0);
    expect(slot).toBeGreaterThan(Date.now());
    expect(s!.opts).toEqual({ id: `domain-checks-${new Date(slot).toISOString()}`, startAt: new Date(slot) });
  });

  test('409 when the project already has the domain (any spelling); another project may add it', async () => {
    expect((await add('dup.acme-widgets.com')).status).toBe(201);
    const again = await add('DUP.acme-widgets.com');
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: 'CONFLICT', statusCode: 409 });
    const other = await createProject('Other');
    expect((await add('dup.acme-widgets.com', bearer(other.secretKey))).status).toBe(201);
  });

  test.each([
    ['localhost'], ['co.uk'], ['com'], ['192.0.2.1'], ['not a domain'], ['-bad-.example.com'], ['mail@example.com'],
    ['example.invalidtld'], [''], [42], ['a'.repeat(64) + '.com'],
  ])('422 naming `domain` for %j', async (bad) => {
    const res = await add(bad);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.errors.map((e: { field: string }) => e.field)).toEqual(['domain']);
  });

  test('422 for a missing domain or an unknown field; 400 for a body that is not an object', async () => {
    expect((await http().post('/domains').set(key).send({})).body.error.errors[0]).toMatchObject({ field: 'domain', code: 'required' });
    expect((await http().post('/domains').set(key).send({ domain: 'x.acme-widgets.com', extra: 1 })).status).toBe(422);
    expect((await http().post('/domains').set(key).set('Content-Type', 'application/json').send('[1]')).status).toBe(400);
  });

  test('an internationalised name is stored in its ASCII (IDNA) form', async () => {
    const res = await add('bücher.example.de');
    expect(res.status).toBe(201);
    expect(res.body.data.domain).toBe('xn--bcher-kva.example.de');
  });

  test('a public key cannot manage domains (403); no key is 401', async () => {
    expect((await add('pk.acme-widgets.com', bearer(project.publicKey))).status).toBe(403);
    expect((await http().get('/domains')).status).toBe(401);
  });
});

describe('GET, DELETE and tenancy', () => {
  let other: CreatedProject;
  const ids: string[] = [];
  beforeAll(async () => {
    other = await createProject('Pages');
    for (const n of ['a', 'b', 'c', 'd', 'e']) ids.push((await add(`${n}.pages.example.org`, bearer(other.secretKey))).body.data.id);
  });

  test('list: newest first, keyset pages with total, status filter', async () => {
    const k = bearer(other.secretKey);
    const first = await http().get('/domains?limit=2').set(k);
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({ total: 5, hasMore: true, nextCursor: expect.any(String) });
    expect(first.body.data.items.map((d: { id: string }) => d.id)).toEqual([ids[4], ids[3]]);
    expect(first.body.data.items[0].records).toHaveLength(3);
    const second = await http().get(`/domains?limit=2&cursor=${first.body.data.nextCursor}`).set(k);
    expect(second.body.data.items.map((d: { id: string }) => d.id)).toEqual([ids[2], ids[1]]);
    const last = await http().get(`/domains?limit=2&cursor=${second.body.data.nextCursor}`).set(k);
    expect(last.body.data).toMatchObject({ hasMore: false, nextCursor: null, items: [{ id: ids[0] }] });
    expect((await http().get('/domains?status=VERIFIED').set(k)).body.data).toMatchObject({ total: 0, items: [] });
    expect((await http().get('/domains?status=PENDING').set(k)).body.data.total).toBe(5);
    expect((await http().get('/domains?status=nope').set(k)).status).toBe(400);
    expect((await http().get('/domains?cursor=bogus').set(k)).status).toBe(400);
  });

  test("another project's domain is 404 on every route; so is a non-UUID id", async () => {
    const id = ids[0]!;
    expect((await http().get(`/domains/${id}`).set(key)).status).toBe(404);
    expect((await http().delete(`/domains/${id}`).set(key)).status).toBe(404);
    expect((await http().post(`/domains/${id}/verify`).set(key)).status).toBe(404);
    expect((await http().get('/domains/not-a-uuid').set(key)).status).toBe(404);
    expect((await http().get('/domains').set(key)).body.data.items.map((d: { id: string }) => d.id)).not.toContain(id);
    // Still there for its own project.
    expect((await http().get(`/domains/${id}`).set(bearer(other.secretKey))).body.data.id).toBe(id);
  });

  test('GET /domains/:id, then DELETE (204), then 404', async () => {
    const k = bearer(other.secretKey);
    const id = ids[1]!;
    const got = await http().get(`/domains/${id}`).set(k);
    expect(got.body.data).toMatchObject({ id, domain: 'b.pages.example.org', status: 'PENDING' });
    expect((await http().delete(`/domains/${id}`).set(k)).status).toBe(204);
    expect((await http().get(`/domains/${id}`).set(k)).status).toBe(404);
    expect((await http().delete(`/domains/${id}`).set(k)).status).toBe(404);
  });
});

describe('verification by DNS (POST /domains/:id/verify)', () => {
  test('every record published → VERIFIED, each record VERIFIED; sends from it and its subdomains are allowed', async () => {
    const d = (await add('verified.example.net')).body.data;
    publish(d);
    const res = await http().post(`/domains/${d.id}/verify`).set(key);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'VERIFIED', verifiedAt: expect.any(String), checkedAt: expect.any(String) });
    expect(statuses(res.body)).toEqual({ DKIM: 'VERIFIED', SPF: 'VERIFIED', DMARC: 'VERIFIED' });
    expect(await isVerifiedSender(db.knex, project.id, 'hello@verified.example.net')).toBe(true);
    expect(await isVerifiedSender(db.knex, project.id, 'hello@news.verified.example.net')).toBe(true);
    // GET shows the stored outcome.
    expect(statuses((await http().get(`/domains/${d.id}`).set(key)).body)).toEqual({ DKIM: 'VERIFIED', SPF: 'VERIFIED', DMARC: 'VERIFIED' });
    // The check is audited with the stored outcome (issue 27), in its transaction; the DNS lookups ran before it.
    expect(await db.knex('audit_log').where({ project_id: project.id, operation: 'verifyDomain', resource_id: d.id }).select('actor_kind', 'details'))
      .toEqual([{ actor_kind: 'key', details: { status: 'VERIFIED' } }]);
  });

  test('nothing published → FAILED, each record FAILED; sends refused', async () => {
    const d = (await add('missing.example.net')).body.data;
    const res = await http().post(`/domains/${d.id}/verify`).set(key);
    expect(res.body.data).toMatchObject({ status: 'FAILED', verifiedAt: null });
    expect(statuses(res.body)).toEqual({ DKIM: 'FAILED', SPF: 'FAILED', DMARC: 'FAILED' });
    expect(await isVerifiedSender(db.knex, project.id, 'hello@missing.example.net')).toBe(false);
  });

  test('a DKIM record with another key → FAILED with DKIM FAILED, while SPF and DMARC are VERIFIED', async () => {
    const d = (await add('wrongkey.example.net')).body.data;
    const otherKey = record((await add('donor.example.net')).body, 'DKIM').value;
    publish(d, ['SPF', 'DMARC']);
    dns.add(record({ data: d }, 'DKIM').name, { TXT: [otherKey] });
    const res = await http().post(`/domains/${d.id}/verify`).set(key);
    expect(res.body.data.status).toBe('FAILED');
    expect(statuses(res.body)).toEqual({ DKIM: 'FAILED', SPF: 'VERIFIED', DMARC: 'VERIFIED' });
  });

  test('DKIM alone verifies the domain; a missing SPF or DMARC shows on its own record', async () => {
    const d = (await add('dkimonly.example.net')).body.data;
    publish(d, ['DKIM']);
    dns.add(d.domain, { TXT: ['google-site-verification=abc'] }); // other TXT records at the name are not SPF
    const res = await http().post(`/domains/${d.id}/verify`).set(key);
    expect(res.body.data.status).toBe('VERIFIED');
    expect(statuses(res.body)).toEqual({ DKIM: 'VERIFIED', SPF: 'FAILED', DMARC: 'FAILED' });
  });

  test('two SPF records are a failure of the SPF record (RFC 7208 permerror)', async () => {
    const d = (await add('twospf.example.net')).body.data;
    publish(d);
    dns.add(d.domain, { TXT: ['v=spf1 -all'] });
    expect(statuses((await http().post(`/domains/${d.id}/verify`).set(key)).body)).toMatchObject({ DKIM: 'VERIFIED', SPF: 'FAILED' });
  });

  test('losing the DKIM record turns a VERIFIED domain FAILED, and sends from it are refused', async () => {
    const d = (await add('lost.example.net')).body.data;
    publish(d);
    expect((await http().post(`/domains/${d.id}/verify`).set(key)).body.data.status).toBe('VERIFIED');
    expect(await isVerifiedSender(db.knex, project.id, 'a@lost.example.net')).toBe(true);
    dns.remove(record({ data: d }, 'DKIM').name);
    const res = await http().post(`/domains/${d.id}/verify`).set(key);
    expect(res.body.data).toMatchObject({ status: 'FAILED', verifiedAt: null });
    expect(statuses(res.body)).toEqual({ DKIM: 'FAILED', SPF: 'VERIFIED', DMARC: 'VERIFIED' });
    expect(await isVerifiedSender(db.knex, project.id, 'a@lost.example.net')).toBe(false);
  });

  test('a DNS server that does not answer changes nothing: the domain and its records keep their statuses', async () => {
    const d = (await add('silent.example.net')).body.data;
    publish(d);
    expect((await http().post(`/domains/${d.id}/verify`).set(key)).body.data.status).toBe('VERIFIED');
    for (const r of d.records as RecordJson[]) dns.silence(r.name);
    const res = await http().post(`/domains/${d.id}/verify`).set(key);
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBe('VERIFIED');
    expect(statuses(res.body)).toEqual({ DKIM: 'VERIFIED', SPF: 'VERIFIED', DMARC: 'VERIFIED' });
  });

  test('an operator-verified domain (CLI --verified) stays VERIFIED without DNS records, until DNS has verified it once', async () => {
    const added = (await addDomain(project.id, 'operator.example.net', true))!;
    await markOperatorVerified(db.knex, added);
    // Its key is made when it is first shown.
    const shown = (await http().get(`/domains/${added.id}`).set(key)).body;
    expect(record(shown, 'DKIM').value).toMatch(/^v=DKIM1; k=rsa; p=/);
    let res = await http().post(`/domains/${added.id}/verify`).set(key);
    expect(res.body.data.status).toBe('VERIFIED');
    expect(statuses(res.body).DKIM).toBe('FAILED');
    expect((await getDomain(db.knex, project.id, added.id))!.verifiedBy).toBe('OPERATOR');
    publish(shown.data);
    res = await http().post(`/domains/${added.id}/verify`).set(key);
    expect(statuses(res.body).DKIM).toBe('VERIFIED');
    expect((await getDomain(db.knex, project.id, added.id))!.verifiedBy).toBe('DNS');
    dns.remove(record(shown, 'DKIM').name);
    res = await http().post(`/domains/${added.id}/verify`).set(key);
    expect(res.body.data.status).toBe('FAILED');
  });
});
