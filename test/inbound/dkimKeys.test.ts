import { generateKeyPairSync } from 'node:crypto';
import MailComposer from 'nodemailer/lib/mail-composer';
// inbound/auth.ts first, as the listener loads it: it installs the key cache before mailauth is loaded.
import { authenticator } from '../../inbound/auth';
import { keyCache } from '../../inbound/dkimKeys';
import { startDnsServer, type TestDnsServer } from '../support/dns';

/**
 * DKIM keys parsed once per key (inbound/dkimKeys.ts): the results are what mailauth gives without the cache, a
 * signature that does not verify still fails, a key changed in DNS is the one used, and a key mailauth refuses is
 * refused every time.
 */

const MTA = 'mx.herald.test';
const session = { ip: '127.0.0.1', helo: 'mail.sender.example', sender: 'bounces@sender.example' };
let dns: TestDnsServer;

beforeAll(async () => {
  dns = await startDnsServer();
  dns.set('sender.example', { TXT: ['v=spf1 ip4:127.0.0.1 -all'] });
  dns.set('_dmarc.sender.example', { TXT: ['v=DMARC1; p=reject'] });
});
afterAll(() => dns.close());

const keyPair = (bits = 2048) => {
  const k = generateKeyPairSync('rsa', { modulusLength: bits });
  return { privateKey: k.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, record: `v=DKIM1; k=rsa; p=${k.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}` };
};

async function signed(selector: string, privateKey: string, text: string): Promise<Buffer> {
  const built = await new MailComposer({ from: 'Grace <grace@sender.example>', to: 'support@in.example.com', subject: 'Hello', text }).compile().build();
  const { default: DKIM } = await import('nodemailer/lib/dkim') as unknown as { default: new (o: object) => { sign(input: Buffer): NodeJS.ReadableStream } };
  const chunks: Buffer[] = [];
  for await (const c of new DKIM({ domainName: 'sender.example', keySelector: selector, privateKey }).sign(built)) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

// Each test its own authenticator: its DNS cache (60 s) starts empty, so a record changed in DNS is asked anew.
const authenticate = () => authenticator({ servers: [dns.address], timeoutMs: 500, tries: 1, verifyBudgetMs: 500, domainCheckIntervalMinutes: 60 }, MTA);

test('the key of a selector is parsed once and reused; every message is still verified against it', async () => {
  expect(keyCache.installed).toBe(true);
  const key = keyPair();
  dns.set('one._domainkey.sender.example', { TXT: [key.record] });
  const auth = authenticate();
  const before = { ...keyCache };
  const results = [];
  for (const text of ['first', 'second', 'third']) results.push(await auth(await signed('one', key.privateKey, text), session));
  for (const r of results) expect(r).toMatchObject({ dkim: [{ result: 'pass', domain: 'sender.example', selector: 'one', aligned: true }], dmarc: { result: 'pass' } });
  expect(keyCache.parsed - before.parsed).toBe(1);
  expect(keyCache.reused - before.reused).toBe(2);

  // A message altered after signing fails against the reused key, as against a fresh one.
  const tampered = Buffer.from((await signed('one', key.privateKey, 'fourth')).toString('latin1').replace('Subject: Hello', 'Subject: Hellx'), 'latin1');
  expect((await auth(tampered, session)).dkim).toMatchObject([{ result: 'fail' }]);
  // Signed by another key than the selector's: fails.
  expect((await auth(await signed('one', keyPair().privateKey, 'fifth'), session)).dkim).toMatchObject([{ result: 'fail' }]);
});

test('a key replaced in DNS is the one messages are checked against', async () => {
  const old = keyPair();
  const next = keyPair();
  dns.set('rotated._domainkey.sender.example', { TXT: [old.record] });
  expect((await authenticate()(await signed('rotated', old.privateKey, 'before'), session)).dkim).toMatchObject([{ result: 'pass' }]);
  dns.set('rotated._domainkey.sender.example', { TXT: [next.record] });
  const auth = authenticate();
  expect((await auth(await signed('rotated', next.privateKey, 'after'), session)).dkim).toMatchObject([{ result: 'pass' }]);
  expect((await auth(await signed('rotated', old.privateKey, 'old key'), session)).dkim).toMatchObject([{ result: 'fail' }]);
});

test('a key mailauth refuses (shorter than 1024 bits) is refused every time, never kept', async () => {
  const weak = keyPair(512);
  dns.set('weak._domainkey.sender.example', { TXT: [weak.record] });
  const auth = authenticate();
  const before = keyCache.parsed;
  for (const text of ['one', 'two']) {
    expect((await auth(await signed('weak', weak.privateKey, text), session)).dkim).toMatchObject([{ result: 'policy' }]);
  }
  expect(keyCache.parsed - before).toBe(2);
});
