import type { Server } from 'node:http';
import request from 'supertest';
import { createApp } from '../../api/app';
import type { DnsConfig } from '../../config';
import { createProject, type CreatedProject } from '../../projects/service';
import { parseAddress } from '../../verify/address';
import { bearer, testAppDeps } from '../support/app';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startDnsServer, type TestDnsServer } from '../support/dns';

/**
 * POST /v1/verify against a real DNS server on loopback: every flag true and false, the time budget when DNS does not
 * answer, and the cache (counted at the DNS server).
 */

let db: TestDatabase;
let dns: TestDnsServer;
let server: Server;
let project: CreatedProject;
let key: { Authorization: string };
// Generous for a loopback DNS server, whose answers take milliseconds: on a loaded 2-core machine (a CI run at load 6,
// the VM's steal near 10 %) a good domain's lookups took longer than the 400 ms this was, and the address came back
// invalid. Only the silent server's case waits it out.
const BUDGET_MS = 1500;

beforeAll(async () => {
  db = await createTestDatabase();
  dns = await startDnsServer();
  // Each query may wait longer than the whole budget: the budget is what bounds a call.
  const config: DnsConfig = { servers: [dns.address], timeoutMs: 2000, tries: 2, verifyBudgetMs: BUDGET_MS, domainCheckIntervalMinutes: 60 };
  server = createApp(testAppDeps(db.knex, { dns: config })).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  project = await createProject('Verify');
  key = bearer(project.secretKey);

  const mailDomain = { MX: ['mx1.mail.test-host.net'], A: ['192.0.2.10'], AAAA: ['2001:db8::10'] };
  for (const d of ['acme-widgets.com', 'gmail.com', 'mailinator.com', 'privaterelay.appleid.com', 'mozmail.com', 'duck.com',
    'simplelogin.com', 'addy.io', 'gmial.com']) dns.set(d, mailDomain);
  dns.set('sub.anonaddy.com', mailDomain);
  dns.set('mx-only.example.org', { MX: ['mx.elsewhere.example'] }); // mail, but no website
  dns.set('a-only.example.org', { A: ['192.0.2.20'] }); // no MX: the A record is the implicit MX
  dns.set('v6-only.example.org', { AAAA: ['2001:db8::20'] });
  dns.set('null-mx.example.org', { MX: [''], A: ['192.0.2.30'] }); // RFC 7505: accepts no mail
  dns.set('txt-only.example.org', { TXT: ['v=spf1 -all'] }); // exists, no address, no MX
  dns.set('cached.example.org', { MX: ['mx.cached.example.org'], A: ['192.0.2.40'] });
  dns.silence('slow.example.org');
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  await dns.close();
  await db.close();
});

const verify = async (email: unknown) => {
  const res = await request(server).post('/v1/verify').set(key).send({ email });
  expect(res.status).toBe(200);
  expect(res.body.success).toBe(true);
  return res.body.data as Record<string, unknown> & { reasons: string[] };
};

test('a good company address: valid, every warning flag false, no reasons', async () => {
  expect(await verify('ada@acme-widgets.com')).toEqual({
    email: 'ada@acme-widgets.com', valid: true, isDisposable: false, isAlias: false, isTypo: false, isPlusAddressed: false,
    isPersonalEmail: false, domainExists: true, hasWebsite: true, hasMxRecords: true, reasons: [], suggestion: null,
  });
});

test('isPersonalEmail: a free provider', async () => {
  const r = await verify('ada@gmail.com');
  expect(r).toMatchObject({ valid: true, isPersonalEmail: true, isDisposable: false, isTypo: false });
  expect(r.reasons).toEqual([expect.stringMatching(/gmail\.com is a personal \(free\) email provider/)]);
});

test('isDisposable: a throwaway provider', async () => {
  const r = await verify('x@mailinator.com');
  expect(r).toMatchObject({ valid: true, isDisposable: true, isAlias: false });
  expect(r.reasons.join(' ')).toMatch(/disposable/);
});

test.each([
  ['hidden@privaterelay.appleid.com', 'Apple Hide My Email'],
  ['abc@mozmail.com', 'Firefox Relay'],
  ['me@duck.com', 'DuckDuckGo Email Protection'],
  ['me@simplelogin.com', 'SimpleLogin'],
  ['me@addy.io', 'addy.io'],
  ['me@sub.anonaddy.com', 'addy.io'],
])('isAlias: %s (%s), and a relay is not counted as disposable', async (email, service) => {
  const r = await verify(email);
  expect(r).toMatchObject({ isAlias: true, isDisposable: false, valid: true });
  expect(r.reasons.join(' ')).toContain(service);
});

test('isPlusAddressed: a tag after +; a leading + is not a tag', async () => {
  const r = await verify('ada+newsletter@acme-widgets.com');
  expect(r).toMatchObject({ isPlusAddressed: true, valid: true });
  expect(r.reasons.join(' ')).toMatch(/plus addressing/);
  expect(await verify('ada.lovelace@acme-widgets.com')).toMatchObject({ isPlusAddressed: false });
});

test('isTypo with a suggestion: gmial.com → gmail.com', async () => {
  const r = await verify('ada@gmial.com');
  expect(r).toMatchObject({ isTypo: true, suggestion: 'ada@gmail.com' });
  expect(r.reasons.join(' ')).toMatch(/did you mean ada@gmail\.com\?/);
  expect(await verify('ada@acme-widgets.com')).toMatchObject({ isTypo: false, suggestion: null });
});

test('domainExists false: NXDOMAIN → not valid', async () => {
  const r = await verify('ada@no-such-domain.example.org');
  expect(r).toMatchObject({ valid: false, domainExists: false, hasMxRecords: false, hasWebsite: false });
  expect(r.reasons).toContain('The domain no-such-domain.example.org does not exist (DNS answers NXDOMAIN).');
});

test('MX records but no A/AAAA: receives mail, has no website', async () => {
  const r = await verify('ada@mx-only.example.org');
  expect(r).toMatchObject({ valid: true, domainExists: true, hasMxRecords: true, hasWebsite: false });
  expect(r.reasons.join(' ')).toMatch(/no A or AAAA record/);
});

test('no MX but an A record: the implicit MX of RFC 5321 counts', async () => {
  const r = await verify('ada@a-only.example.org');
  expect(r).toMatchObject({ valid: true, hasMxRecords: true, hasWebsite: true });
  expect(r.reasons.join(' ')).toMatch(/implicit MX/);
  expect(await verify('ada@v6-only.example.org')).toMatchObject({ valid: true, hasMxRecords: true, hasWebsite: true });
});

test('a null MX (RFC 7505): no mail exchanger → not valid, though the domain has a website', async () => {
  const r = await verify('ada@null-mx.example.org');
  expect(r).toMatchObject({ valid: false, domainExists: true, hasMxRecords: false, hasWebsite: true });
  expect(r.reasons.join(' ')).toMatch(/null MX/);
});

test('a domain with neither MX nor an address: exists, cannot receive mail → not valid', async () => {
  const r = await verify('ada@txt-only.example.org');
  expect(r).toMatchObject({ valid: false, domainExists: true, hasMxRecords: false, hasWebsite: false });
  expect(r.reasons.join(' ')).toMatch(/cannot receive mail/);
});

test.each([
  ['plainaddress'], ['a@b'], ['a..b@acme-widgets.com'], ['Ada <ada@acme-widgets.com>'], ['ada@acme-widgets.com (comment)'],
  ['ada@[192.0.2.1]'], [`${'x'.repeat(65)}@acme-widgets.com`], ['ada@-bad.com'], ['ada@'], ['@acme-widgets.com'], ['   '],
])('bad syntax %j: not valid, every flag false, one reason, no DNS query', async (email) => {
  const before = dns.queries.length;
  const r = await verify(email);
  expect(r).toMatchObject({ valid: false, isDisposable: false, isAlias: false, isTypo: false, isPlusAddressed: false, isPersonalEmail: false, domainExists: false, hasWebsite: false, hasMxRecords: false, suggestion: null });
  expect(r.reasons).toHaveLength(1);
  expect(dns.queries.length).toBe(before);
});

test('RFC 5322 forms that are valid: quoted local parts, internationalised addresses', () => {
  expect(parseAddress('"john doe"@example.com')).toEqual({ ok: true, local: '"john doe"', domain: 'example.com' });
  expect(parseAddress('josé@exämple.com')).toEqual({ ok: true, local: 'josé', domain: 'xn--exmple-cua.com' });
  expect(parseAddress("o'brien+tag@example.co.uk")).toMatchObject({ ok: true });
});

test('a DNS server that does not answer: the call answers within its budget, with the domain flagged as unknown', async () => {
  const r = await verify('ada@slow.example.org');
  expect(r).toMatchObject({ valid: false, domainExists: false, hasMxRecords: false, hasWebsite: false });
  expect(r.reasons).toEqual([`DNS did not answer for slow.example.org within ${BUDGET_MS} ms: whether it exists is unknown.`]);
});

test('the cache answers the second call without a DNS query (positive and negative answers)', async () => {
  await verify('one@cached.example.org');
  await verify('one@never-registered.example.org');
  const asked = dns.count('cached.example.org');
  const askedNx = dns.count('never-registered.example.org');
  expect(asked).toBe(3); // MX, A, AAAA
  expect(askedNx).toBeGreaterThan(0);
  expect(await verify('two@cached.example.org')).toMatchObject({ valid: true, hasMxRecords: true });
  expect(await verify('two@never-registered.example.org')).toMatchObject({ valid: false, domainExists: false });
  expect(dns.count('cached.example.org')).toBe(asked);
  expect(dns.count('never-registered.example.org')).toBe(askedNx);
});

test('request errors: 422 without a non-empty string email; 403 for a public key; 401 without a key', async () => {
  for (const body of [{}, { email: 42 }, { email: '' }, { email: 'a@b.com', extra: true }]) {
    const res = await request(server).post('/v1/verify').set(key).send(body);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
  }
  expect((await request(server).post('/v1/verify').set(bearer(project.publicKey)).send({ email: 'a@b.com' })).status).toBe(403);
  expect((await request(server).post('/v1/verify').send({ email: 'a@b.com' })).status).toBe(401);
});
