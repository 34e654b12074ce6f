import { generateKeyPairSync } from 'node:crypto';
import MailComposer from 'nodemailer/lib/mail-composer';
import { analysisThreads, bySize, inProcess, type Analyser } from '../../inbound/analysis';
import { authenticator } from '../../inbound/auth';
import { startDnsServer, type TestDnsServer } from '../support/dns';

/**
 * INBOUND_ANALYSIS_THREADS (inbound/analysis.ts): a message parsed and authenticated in a worker thread gives what the
 * listener's own thread gives, attachments' bytes included; messages go to the threads by size only.
 */

const MTA = 'mx.herald.test';
let dns: TestDnsServer;
let privateKey: string;

beforeAll(async () => {
  dns = await startDnsServer();
  const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  privateKey = keys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  dns.set('sender.example', { TXT: ['v=spf1 ip4:127.0.0.1 -all'] });
  dns.set('mail._domainkey.sender.example', { TXT: [`v=DKIM1; k=rsa; p=${keys.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`] });
  dns.set('_dmarc.sender.example', { TXT: ['v=DMARC1; p=reject'] });
});
afterAll(() => dns.close());

const dnsConfig = () => ({ servers: [dns.address], timeoutMs: 500, tries: 1, verifyBudgetMs: 500, domainCheckIntervalMinutes: 60 });

async function signedMessage(): Promise<Buffer> {
  const built = await new MailComposer({
    from: 'Grace <grace@sender.example>', to: 'support@in.example.com', subject: 'Scan attached', text: 'See the scan.', date: new Date('2026-11-20T10:00:00Z'),
    attachments: [{ filename: 'scan.pdf', contentType: 'application/pdf', content: Buffer.from(Array.from({ length: 200_000 }, (_, i) => i % 251)) }],
  }).compile().build();
  const { default: DKIM } = await import('nodemailer/lib/dkim') as unknown as { default: new (o: object) => { sign(input: Buffer): NodeJS.ReadableStream } };
  const chunks: Buffer[] = [];
  for await (const c of new DKIM({ domainName: 'sender.example', keySelector: 'mail', privateKey }).sign(built)) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

test('a worker thread parses and authenticates a message as the listener\'s thread does; several at once', async () => {
  const raw = await signedMessage();
  const session = { ip: '127.0.0.1', helo: 'mail.sender.example', sender: 'bounces@sender.example' };
  const here = await inProcess(authenticator(dnsConfig(), MTA))(raw, session);
  const threads = analysisThreads(2, dnsConfig(), MTA);
  try {
    const there = await Promise.all([1, 2, 3].map(() => threads(raw, session)));
    expect(here.auth).toMatchObject({ spf: { result: 'pass' }, dkim: [{ result: 'pass', domain: 'sender.example' }], dmarc: { result: 'pass' } });
    for (const t of there) {
      expect(t).toEqual(here);
      // Buffers again (the listener stores them as bytea), with the attachment's exact bytes.
      expect(Buffer.isBuffer(t.parsed.attachments[0]!.content)).toBe(true);
      expect(t.parsed.attachments[0]!.content.equals(here.parsed.attachments[0]!.content)).toBe(true);
      expect(t.parsed.date).toEqual(new Date('2026-11-20T10:00:00Z'));
    }
  } finally {
    await threads.close();
  }
  // Closed (the process stopping): a message is refused at once, not left waiting (the listener answers 451).
  await expect(threads(raw, session)).rejects.toThrow(/closed/);
});

test('bySize: messages from the threshold on go to the threads, smaller ones stay in the listener\'s thread', async () => {
  const seen: string[] = [];
  const named = (name: string): Analyser => async (raw) => {
    seen.push(`${name} ${raw.length}`);
    return { parsed: {} as never, auth: {} as never };
  };
  const analyse = bySize(named('here'), named('threads'), 100);
  const session = { ip: '127.0.0.1', helo: 'h', sender: '' };
  for (const n of [99, 100, 5000]) await analyse(Buffer.alloc(n, 'a'), session);
  expect(seen).toEqual(['here 99', 'threads 100', 'threads 5000']);
});
