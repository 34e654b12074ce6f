import { Resolver } from 'node:dns/promises';
import { dkimVerify } from 'mailauth';
import { createDeliverer } from '../../sending/delivery';
import type { Email } from '../../db/models/Email';
import { startDeliveryQueue } from '../../worker/deliveryQueue';
import { createLogger } from '../../logging/logger';
import { createDomain } from '../../domains/rows';
import { decryptPrivateKey, dkimFor, DkimKeyError, encryptPrivateKey, generateDkimKey, loadSigningKeys, type DkimKeyPair } from '../../domains/dkim';
import { buildMessage } from '../../mail/message';
import { createMailer, type Mailer } from '../../mail/transport';
import { createProject } from '../../projects/service';
import { addDomain } from '../../domains/rows';
import { dkimRecordName, dkimRecordValue } from '../../domains/records';
import { TEST_SECRET } from '../support/app';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startDnsServer, type TestDnsServer } from '../support/dns';
import { startSmtpServer, type TestSmtpServer } from '../support/smtp';

/**
 * DKIM signing end to end: a domain's key (stored encrypted), loaded in one query, put on a message built by
 * buildMessage, sent through nodemailer to a real SMTP server, and the received message verified by mailauth against
 * the public key that the loopback DNS server publishes.
 */

let db: TestDatabase;
let dns: TestDnsServer;
let smtp: TestSmtpServer;
let mailer: Mailer;
let projectId: string;
let resolver: Resolver;

beforeAll(async () => {
  db = await createTestDatabase();
  [dns, smtp] = await Promise.all([startDnsServer(), startSmtpServer()]);
  mailer = createMailer({ smtpUrl: smtp.url, dataDir: '/nonexistent' });
  projectId = (await createProject('Signing')).id;
  resolver = new Resolver({ timeout: 1000, tries: 1 });
  resolver.setServers([dns.address]);
});
afterAll(async () => {
  mailer.close();
  await Promise.all([smtp.close(), dns.close()]);
  await db.close();
});

/** mailauth asks DNS through this: the loopback server. */
const viaTestDns = (name: string, rrtype: string) => resolver.resolve(name, rrtype) as Promise<string[][] | string[]>;

function email(from: string, id = '0190b4d2-0000-7000-8000-000000000001'): Email {
  return {
    id, fromEmail: from, fromName: 'Acme', toEmail: 'ada@example.org', toName: 'Ada', replyTo: null, headers: {},
  } as unknown as Email;
}

async function sendAndVerify(message: Parameters<Mailer['send']>[0]) {
  const before = smtp.received.length;
  await mailer.send(message);
  const [received] = (await smtp.waitFor(before + 1)).slice(before);
  return { raw: received!.raw, result: await dkimVerify(received!.raw, { resolver: viaTestDns }) };
}

describe('keys', () => {
  let key: DkimKeyPair;
  beforeAll(async () => { key = await generateDkimKey(new Date('2026-11-22T00:00:00Z')); });

  test('RSA-2048, a selector named for the month, PEM private key', () => {
    expect(key.selector).toBe('herald202611');
    expect(key.privateKey).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(Buffer.from(key.publicKey, 'base64').length).toBeGreaterThan(290); // 2048-bit SPKI DER is 294 bytes
  });

  test('encryption round trip; another secret, project or domain cannot decrypt, and the error shows no key', () => {
    const blob = encryptPrivateKey(TEST_SECRET, projectId, 'x.example', key.privateKey);
    expect(blob.toString('latin1')).not.toContain('PRIVATE KEY');
    expect(decryptPrivateKey(TEST_SECRET, projectId, 'x.example', blob)).toBe(key.privateKey);
    for (const [secret, p, d] of [[Buffer.from('another-secret-another-secret-12'), projectId, 'x.example'], [TEST_SECRET, 'other', 'x.example'], [TEST_SECRET, projectId, 'y.example']] as const) {
      let err: unknown;
      try { decryptPrivateKey(secret, p, d, blob); } catch (e) { err = e; }
      expect(err).toBeInstanceOf(DkimKeyError);
      expect((err as Error).message).toMatch(/DKIM key of .* cannot be decrypted/);
      expect((err as Error).message).not.toMatch(/PRIVATE|MII/);
    }
  });

  test('a key stored by the earlier code of its own (before core/sealed.ts sealed it) still opens', () => {
    // Sealed by mail/dkim.ts's own AES-GCM code, as rows in existing databases were: the format must not change.
    const stored = Buffer.from('AVRv5aYyRLaXzFQ6A/3SKIjBNzoxEY0j3qjj7C7L3c6OciqP5suTXKBMR6ZTCnFQzDlB8NIWpzcKH1jn69cPVLGiPngZ5UMD61K+YTkCvW5nEsFfxcC/8E8CtugYaWjk/dwZK95VoQoRTiPb28D9X7oLi8bR4caulSU=', 'base64');
    expect(decryptPrivateKey(Buffer.alloc(32, 7), '0190b7a2-7c1e-7000-8000-000000000001', 'stored.example', stored))
      .toBe('-----BEGIN PRIVATE KEY-----\nstored before seal and unseal were one\n-----END PRIVATE KEY-----\n');
  });
});

describe('signing', () => {
  test('a message from a domain with a key carries a DKIM-Signature that verifies against the key in DNS', async () => {
    const d = (await createDomain(db.knex, TEST_SECRET, projectId, 'signed.example.net'))!;
    dns.set(dkimRecordName(d.domain, d.dkimSelector!), { TXT: [dkimRecordValue(d.dkimPublicKey!)] });

    // One query loads the keys of every From domain of a batch, subdomains matched to their parent's key.
    const statements: string[] = [];
    const onQuery = (q: { sql: string }) => statements.push(q.sql);
    db.knex.on('query', onQuery);
    const keys = await loadSigningKeys(db.knex, TEST_SECRET, projectId, ['signed.example.net', 'news.signed.example.net', 'unsigned.example.com']);
    db.knex.off('query', onQuery);
    expect(statements).toHaveLength(1);
    expect([...keys.keys()].sort()).toEqual(['news.signed.example.net', 'signed.example.net']);

    for (const from of ['hello@signed.example.net', 'hello@news.signed.example.net']) {
      const dkim = dkimFor(keys, from);
      expect(dkim).toMatchObject({ domainName: 'signed.example.net', keySelector: d.dkimSelector });
      const message = buildMessage(email(from), { subject: 'Signed', html: '<p>Hello</p>' }, [], { dkim });
      const { raw, result } = await sendAndVerify(message);
      expect(raw.toString()).toMatch(/^DKIM-Signature: /m);
      expect(result.results).toHaveLength(1);
      expect(result.results[0]).toMatchObject({ signingDomain: 'signed.example.net', selector: d.dkimSelector, status: { result: 'pass' } });
    }
  });

  test('a message altered in transit fails verification', async () => {
    const keys = await loadSigningKeys(db.knex, TEST_SECRET, projectId, ['signed.example.net']);
    const message = buildMessage(email('a@signed.example.net'), { subject: 'Intact', html: '<p>Original</p>' }, [], { dkim: dkimFor(keys, 'a@signed.example.net') });
    const { raw } = await sendAndVerify(message);
    const altered = Buffer.from(raw.toString().replace('Original', 'Altered!'));
    const result = await dkimVerify(altered, { resolver: viaTestDns });
    // mailauth reports a body-hash mismatch as "neutral" with the reason (RFC 6376 section 6.3: the signature does not verify).
    expect(result.results[0]!.status.result).not.toBe('pass');
    expect(JSON.stringify(result.results[0]!.status)).toMatch(/body hash did not verify/i);
  });

  test('a domain without a key, or no domain at all: no dkim option, and the message goes unsigned', async () => {
    await addDomain(projectId, 'keyless.example.com', true); // the operator tool's row: no key until first shown
    const keys = await loadSigningKeys(db.knex, TEST_SECRET, projectId, ['keyless.example.com', 'nowhere.example.com']);
    expect(keys.size).toBe(0);
    expect(dkimFor(keys, 'a@keyless.example.com')).toBeUndefined();
    const message = buildMessage(email('a@keyless.example.com'), { subject: 's', html: 'h' }, [], { dkim: dkimFor(keys, 'a@keyless.example.com') });
    expect(message).not.toHaveProperty('dkim');
    const { raw } = await sendAndVerify(message);
    expect(raw.toString()).not.toMatch(/^DKIM-Signature: /m);
  });

  test("another project's key is never used; a key that does not decrypt is reported and skipped", async () => {
    const other = (await createProject('Other')).id;
    expect((await loadSigningKeys(db.knex, TEST_SECRET, other, ['signed.example.net'])).size).toBe(0);
    const errors: Error[] = [];
    const keys = await loadSigningKeys(db.knex, Buffer.from('the-wrong-secret-the-wrong-secret'), projectId, ['signed.example.net'], (e) => errors.push(e));
    expect(keys.size).toBe(0);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(DkimKeyError);
  });
});

describe('delivery signs with the domain key', () => {
  test('transactional and campaign mail delivered by the delivery queue carry a signature that verifies', async () => {
    const d = (await createDomain(db.knex, TEST_SECRET, projectId, 'queue-signed.example.net'))!;
    dns.set(dkimRecordName(d.domain, d.dkimSelector!), { TXT: [dkimRecordValue(d.dkimPublicKey!)] });
    const [contact] = await db.knex('contacts').insert({ project_id: projectId, email: 'reader@example.org', subscribed: true }).returning('id');
    const [campaign] = await db.knex('campaigns').insert({
      project_id: projectId, name: 'c', subject: 'News', body: '<p>News</p>', from_email: 'news@queue-signed.example.net', audience_type: 'ALL', status: 'SENDING',
    }).returning('id');
    const rows = await db.knex('emails').insert([
      { project_id: projectId, contact_id: contact.id, from_email: 'orders@queue-signed.example.net', to_email: 'reader@example.org', subject: 'Order', html: '<p>Shipped</p>', headers: JSON.stringify({ 'List-Id': 'Orders <orders.queue-signed.example.net>' }) },
      { project_id: projectId, contact_id: contact.id, campaign_id: campaign.id, priority: 1, from_email: 'news@queue-signed.example.net', to_email: 'reader@example.org', subject: null, html: null },
    ]).returning('id');
    const before = smtp.received.length;
    const log = createLogger('silent');
    const queue = startDeliveryQueue({
      knex: db.knex, log, ratePerSecond: 100, executorId: 'signing', pollMs: 20,
      deliverer: createDeliverer({ knex: db.knex, mailer, log, secret: TEST_SECRET, publicUrl: 'http://herald.test' }),
    });
    try {
      const received = (await smtp.waitFor(before + 2)).slice(before);
      const signedBy = new Map<string, string[]>();
      for (const m of received) {
        const result = await dkimVerify(m.raw, { resolver: viaTestDns });
        expect(result.results[0]).toMatchObject({ signingDomain: 'queue-signed.example.net', selector: d.dkimSelector, status: { result: 'pass' } });
        // The header fields the verified signature covers (its h=), as mailauth read them.
        signedBy.set(m.parsed.subject!, (result.results[0] as unknown as { signingHeaders: { keys: string } }).signingHeaders.keys.toLowerCase().split(': ').join(':').split(':'));
      }
      // A List-Id the sender set is covered too.
      expect(signedBy.get('Order')).toEqual(expect.arrayContaining(['from', 'subject', 'list-id']));
      expect(signedBy.get('News')).toEqual(expect.arrayContaining(['from', 'subject', 'list-unsubscribe', 'list-unsubscribe-post']));
      expect(received.map((m) => m.parsed.subject).sort()).toEqual(['News', 'Order']);
      // RFC 8058 §4: one-click unsubscribe needs both of its headers under the signature (Gmail and Yahoo check h=).
      const campaignMail = received.find((m) => m.parsed.subject === 'News')!.raw.toString();
      const head = campaignMail.slice(0, campaignMail.indexOf('\r\n\r\n')).replace(/\r\n[ \t]+/g, ' ');
      const signed = /^DKIM-Signature:.*?\bh=([^;]+)/im.exec(head)![1]!.replace(/\s+/g, '').toLowerCase().split(':');
      expect(signed).toEqual(expect.arrayContaining(['from', 'subject', 'list-unsubscribe', 'list-unsubscribe-post']));
    } finally {
      await queue.stop();
    }
    expect(await db.knex('emails').whereIn('id', rows.map((r) => r.id)).pluck('status')).toEqual(['SENT', 'SENT']);
  });
});
