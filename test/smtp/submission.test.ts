import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import nodeTls from 'node:tls';
import { promisify } from 'node:util';
import { dkimVerify } from 'mailauth';
import nodemailer from 'nodemailer';
import pino from 'pino';
import MailComposer from 'nodemailer/lib/mail-composer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport';
import { ensureDomainKey } from '../../domains/rows';
import { Domain } from '../../db/models/Domain';
import { createLogger } from '../../logging/logger';
import { emailOfReplyRecipient, replyAddressFor } from '../../inbound/replyAddress';
import { withHeraldHeaders } from '../../mail/rawMessage';
import { emailsAccepted } from '../../metrics/registry';
import { createKey, revokeKey, setProjectDisabled } from '../../projects/service';
import { createSender, type Sender } from '../../sending/sender';
import { startSubmission, type Submission, type SubmissionOptions } from '../../smtp/submission';
import { smtpTls } from '../../smtp/tls';
import { dkimRecordName, dkimRecordValue } from '../../domains/records';
import { TEST_SECRET, testAppDeps } from '../support/app';
import { waitForEmails } from '../support/engine';
import { startEndToEnd, type EndToEnd } from '../support/endToEnd';

/**
 * SMTP submission end to end: nodemailer (and Python's smtplib) submit to Herald's listener over STARTTLS with a
 * project's secret key; the message goes through the send pipeline into the queue, and the embedded engine delivers it
 * to a real SMTP server, byte for byte as the client built it apart from Herald's headers, DKIM-signed.
 */

let e2e: EndToEnd;
let listener: Submission;
let tls: { key: Buffer; cert: Buffer };
let tlsDir: string;
const started: Submission[] = [];
const log = createLogger('silent');

async function listen(overrides: Partial<SubmissionOptions> = {}): Promise<Submission> {
  const deps = testAppDeps(e2e.t.db.knex);
  const s = await startSubmission({
    knex: e2e.t.db.knex, sender: createSender(e2e.t.db.knex, deps), log, port: 0, host: '127.0.0.1', tls,
    insecureAuthOnLoopback: false, ratePerMinute: 100_000, ...overrides,
  });
  started.push(s);
  return s;
}

/** A nodemailer client as an app would configure it: STARTTLS required, the self-signed certificate accepted. */
function client(port: number, pass: string, extra: Record<string, unknown> = {}) {
  return nodemailer.createTransport({
    host: '127.0.0.1', port, secure: false, requireTLS: true, tls: { rejectUnauthorized: false },
    auth: { user: 'my-app', pass }, ...extra,
  } as SMTPTransport.Options);
}

beforeAll(async () => {
  e2e = await startEndToEnd();
  tlsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-smtp-tls-'));
  tls = await smtpTls({ port: 0, host: undefined, tlsCertFile: undefined, tlsKeyFile: undefined, insecureAuthOnLoopback: false }, tlsDir, log);
  listener = await listen();
});
afterAll(async () => {
  await Promise.all(started.map((s) => s.close()));
  await e2e.close();
  fs.rmSync(tlsDir, { recursive: true, force: true });
});

const headerBlockEnd = (raw: Buffer) => raw.indexOf('\r\n\r\n') + 4;

test('a message from nodemailer is accepted with 250 once stored, and delivered as the client built it, with Herald\'s Message-ID and DKIM', async () => {
  const knex = e2e.t.db.knex;
  const domain = (await Domain.query(knex).findOne({ project_id: e2e.t.project.id, domain: 'example.com' }))!;
  const keyed = await ensureDomainKey(knex, TEST_SECRET, domain);
  const message = {
    from: 'Acme Billing <billing@example.com>',
    to: 'ada@example.org', cc: 'grace@example.net', bcc: 'audit@example.org',
    subject: 'Your receipt №42',
    text: 'Thanks for your order.',
    html: '<p>Thanks for your <b>order</b>.</p>',
    messageId: '<client-chosen@app.local>',
    headers: { 'X-App-Order': '42' },
    attachments: [{ filename: 'receipt.txt', content: 'line one\nline two\n' }],
  };
  const raw = await new MailComposer(message).compile().build();

  const info = await client(listener.port, e2e.t.project.secretKey).sendMail({
    envelope: { from: 'billing@example.com', to: ['ada@example.org', 'grace@example.net', 'audit@example.org'] }, raw,
  });
  expect(info.response).toMatch(/^250 2\.0\.0 Queued as /);
  expect(info.accepted).toEqual(['ada@example.org', 'grace@example.net', 'audit@example.org']);

  // Stored before the 250: one email per envelope recipient, sharing one stored message, with contacts and answers.
  const emails = await knex('emails').where({ project_id: e2e.t.project.id }).whereNotNull('raw_message_id').orderBy('to_email');
  expect(emails.map((x) => x.to_email)).toEqual(['ada@example.org', 'audit@example.org', 'grace@example.net']);
  expect(new Set(emails.map((x) => x.raw_message_id)).size).toBe(1);
  expect(emails[0]).toMatchObject({ from_email: 'billing@example.com', from_name: 'Acme Billing', subject: 'Your receipt №42' });
  expect(emails[0].html).toContain('<b>order</b>');
  expect(info.response).toContain(emails[0].id);
  const contacts = await knex('contacts').where({ project_id: e2e.t.project.id }).whereIn('email', ['ada@example.org', 'grace@example.net', 'audit@example.org']);
  expect(contacts).toHaveLength(3);

  const received = await e2e.smtp.waitFor(3);
  for (const email of emails) {
    const got = received.find((r) => r.envelopeTo.includes(email.to_email))!;
    expect(got.envelopeTo).toEqual([email.to_email]); // one delivery per recipient
    expect(got.envelopeFrom).toBe('billing@example.com');
    expect(got.parsed.messageId).toBe(`<${email.id}@example.com>`);
    expect(got.parsed.headers.has('bcc')).toBe(false);
    expect(got.parsed.headers.get('x-app-order')).toBe('42');
    expect(got.parsed.text?.trim()).toBe('Thanks for your order.');
    expect(got.parsed.attachments[0]!.content.toString()).toBe('line one\nline two\n');
    // The body (every MIME part, boundaries included) is the client's, byte for byte.
    expect(got.raw.subarray(headerBlockEnd(got.raw)).toString()).toBe(raw.subarray(headerBlockEnd(raw)).toString());
    const dkim = await dkimVerify(got.raw, {
      resolver: async (name: string, type: string) => {
        if (type === 'TXT' && name === dkimRecordName('example.com', keyed.dkimSelector!)) return [[dkimRecordValue(keyed.dkimPublicKey!)]];
        throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
      },
    });
    expect(dkim.results.map((r) => [r.signingDomain, r.status.result])).toContainEqual(['example.com', 'pass']);
  }
  // The sink has the mail once the delivery's DATA is answered; the row turns SENT (with its event) just after.
  const rows = await waitForEmails(e2e.t.db, emails.map((x) => x.id));
  expect(Object.values(rows).map((r) => r.status)).toEqual(['SENT', 'SENT', 'SENT']);
  const sent = await knex('events').where({ project_id: e2e.t.project.id, name: 'email.sent' }).whereIn('email_id', emails.map((x) => x.id));
  expect(sent).toHaveLength(3);
});

test('Python\'s smtplib, a second real client, submits with STARTTLS and AUTH LOGIN', async () => {
  const script = `
import smtplib, ssl, sys
from email.message import EmailMessage
m = EmailMessage()
m['From'] = 'alerts@example.com'
m['To'] = 'ops@example.org'
m['Subject'] = 'Disk almost full'
m.set_content('93% used on /var')
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
with smtplib.SMTP('127.0.0.1', int(sys.argv[1]), timeout=20) as s:
    s.starttls(context=ctx)
    s.ehlo()
    s.user, s.password = 'monitoring', sys.argv[2]
    s.auth('LOGIN', s.auth_login)
    print(s.send_message(m) == {})
`;
  const { stdout } = await promisify(execFile)('python3', ['-c', script, String(listener.port), e2e.t.project.secretKey]);
  expect(stdout.trim()).toBe('True');
  const row = await e2e.t.db.knex('emails').where({ project_id: e2e.t.project.id, to_email: 'ops@example.org' }).first();
  expect(row).toMatchObject({ from_email: 'alerts@example.com', subject: 'Disk almost full' });
  const got = (await e2e.smtp.waitFor(4)).find((r) => r.envelopeTo.includes('ops@example.org'))!;
  expect(got.parsed.text?.trim()).toBe('93% used on /var');
});

test('a bad key, a public key or a key of no project is refused with 535, and nothing is stored', async () => {
  const before = await e2e.t.db.knex('emails').count('* as n').first();
  for (const pass of ['sk_nope', e2e.t.project.publicKey, `sk_${'a'.repeat(40)}`]) {
    await expect(client(listener.port, pass).sendMail({ from: 'a@example.com', to: 'b@example.org', text: 'x' }))
      .rejects.toMatchObject({ code: 'EAUTH', responseCode: 535 });
  }
  expect(await e2e.t.db.knex('emails').count('* as n').first()).toEqual(before);
});

test('without STARTTLS AUTH is not offered, so nodemailer never sends the key, and its MAIL FROM is 530; a loopback client may when the operator allows it', async () => {
  const plain = { requireTLS: false, ignoreTLS: true };
  await expect(client(listener.port, e2e.t.project.secretKey, plain).sendMail({ from: 'a@example.com', to: 'b@example.org', text: 'x' }))
    .rejects.toMatchObject({ responseCode: 530, response: expect.stringContaining('STARTTLS, then AUTH') });
  const lax = await listen({ insecureAuthOnLoopback: true });
  const info = await client(lax.port, e2e.t.project.secretKey, plain).sendMail({ from: 'local@example.com', to: 'dev@example.org', subject: 'plain', text: 'x' });
  expect(info.response).toMatch(/^250 /);
});

test('an unverified From domain is a 550 with the reason; a message without From is a 550', async () => {
  await expect(client(listener.port, e2e.t.project.secretKey).sendMail({ from: 'me@unverified.example', to: 'b@example.org', subject: 's', text: 'x' }))
    .rejects.toMatchObject({ responseCode: 550, response: expect.stringContaining('me@unverified.example is not at a verified domain of this project') });
  const raw = Buffer.from('To: b@example.org\r\nSubject: no sender\r\n\r\nbody\r\n');
  await expect(client(listener.port, e2e.t.project.secretKey).sendMail({ envelope: { from: 'x@example.com', to: ['b@example.org'] }, raw }))
    .rejects.toMatchObject({ responseCode: 550, response: expect.stringContaining('no valid From') });
});

test('a message over the size limit is refused with 552', async () => {
  const small = await listen({ maxBytes: 64 * 1024 });
  await expect(client(small.port, e2e.t.project.secretKey).sendMail({ from: 'a@example.com', to: 'b@example.org', subject: 'big', text: 'x'.repeat(200 * 1024) }))
    .rejects.toMatchObject({ responseCode: 552 });
});

test('past the project\'s rate limit (shared with the HTTP API) a message is deferred with 451', async () => {
  const project = await e2e.t.newProject('Rate limited');
  const limited = await listen({ ratePerMinute: 1 });
  const transport = client(limited.port, project.secretKey);
  // The first message counts against the budget (and is refused for its unverified domain); the second is deferred.
  await expect(transport.sendMail({ from: 'a@nowhere.example', to: 'b@example.org', text: 'x' })).rejects.toMatchObject({ responseCode: 550 });
  await expect(transport.sendMail({ from: 'a@nowhere.example', to: 'b@example.org', text: 'x' })).rejects.toMatchObject({ responseCode: 451 });
});

test('1,000 connections that never send neither crash the listener nor keep a real client out; a listener too busy says 421', async () => {
  // All from one address here, so that address may hold them (the per-address cap: test/smtp/listeners.test.ts).
  const crowded = await listen({ limits: { maxConnectionsPerAddress: 2000 } });
  const idle = await Promise.all(Array.from({ length: 1000 }, () => new Promise<net.Socket>((resolve, reject) => {
    const socket = net.connect(crowded.port, '127.0.0.1');
    socket.once('data', () => resolve(socket)); // the greeting: the connection is the listener's now
    socket.once('error', reject);
  })));
  try {
    const info = await client(crowded.port, e2e.t.project.secretKey).sendMail({ from: 'busy@example.com', to: 'crowd@example.org', subject: 's', text: 'x' });
    expect(info.response).toMatch(/^250 /);
  } finally {
    for (const socket of idle) socket.destroy();
  }
  const full = await listen({ maxInFlight: 0 });
  await expect(client(full.port, e2e.t.project.secretKey).sendMail({ from: 'a@example.com', to: 'b@example.org', text: 'x' }))
    .rejects.toMatchObject({ responseCode: 421 });
});

test('issue 31: a Reply-To written name+*@ a VERIFIED inbound domain goes out signed for the email (its name kept), as from /v1/send; at a domain not verified, as written', async () => {
  const knex = e2e.t.db.knex;
  const projectId = e2e.t.project.id;
  await knex('inbound_domains').insert([
    { project_id: projectId, domain: 'in.submission.test', status: 'VERIFIED', verified_at: new Date() },
    { project_id: projectId, domain: 'pending.submission.test', status: 'PENDING' },
  ]);
  const s = await listen();
  const send = async (replyTo: string, to: string) => {
    const message = Buffer.from(`From: Support <support@example.com>\r\nReply-To: ${replyTo}\r\nSubject: Your ticket\r\n\r\nReply to this email\r\n`);
    expect((await client(s.port, e2e.t.project.secretKey).sendMail({ envelope: { from: 'support@example.com', to: [to] }, raw: message })).response).toMatch(/^250 /);
    const email = await knex('emails').where({ project_id: projectId, to_email: to }).first('id');
    const raw = await e2e.t.http().get(`/emails/${email.id}/raw`).set('Authorization', `Bearer ${e2e.t.project.secretKey}`).buffer(true)
      .parse((res, cb) => { const c: Buffer[] = []; res.on('data', (x: Buffer) => c.push(x)); res.on('end', () => cb(null, Buffer.concat(c))); });
    return { emailId: email.id as string, replyTo: /^Reply-To: (.*)\r$/m.exec((raw.body as Buffer).toString())?.[1] };
  };
  const first = await send('Help desk <help+*@in.submission.test>', 'reply-one@example.org');
  expect(first.replyTo).toBe(`Help desk <${replyAddressFor(TEST_SECRET, first.emailId, 'help+*@in.submission.test')}>`);
  expect(first.replyTo).toMatch(/^Help desk <help\+[a-z2-7]{42}@in\.submission\.test>$/);
  // Each email its own token: a reply names the email it answers.
  const second = await send('help+*@in.submission.test', 'reply-two@example.org');
  expect(second.replyTo).toBe(replyAddressFor(TEST_SECRET, second.emailId, 'help+*@in.submission.test'));
  expect(second.replyTo).not.toContain(first.replyTo!.slice(first.replyTo!.indexOf('+'), first.replyTo!.indexOf('@')));
  expect(emailOfReplyRecipient(TEST_SECRET, second.replyTo!)).toBe(second.emailId);
  // Not an inbound domain of the project that is VERIFIED, or not the wildcard form: the header stays as the client wrote it.
  expect((await send('help+*@pending.submission.test', 'reply-three@example.org')).replyTo).toBe('help+*@pending.submission.test');
  expect((await send('help@in.submission.test', 'reply-four@example.org')).replyTo).toBe('help@in.submission.test');
});

describe('withHeraldHeaders', () => {
  test('replaces Message-ID and drops Bcc and Return-Path with their folded lines; keeps everything else in order', () => {
    const raw = Buffer.from('Return-Path: <x@y>\r\nFrom: a@example.com\r\nBcc: hidden@example.org,\r\n\tother@example.org\r\nMessage-ID: <old@x>\r\nSubject: hi\r\n there\r\n\r\nbody\r\n');
    expect(withHeraldHeaders(raw, { 'Message-ID': '<new@example.com>' }).toString())
      .toBe('Message-ID: <new@example.com>\r\nFrom: a@example.com\r\nSubject: hi\r\n there\r\n\r\nbody\r\n');
  });

  test('a message with bare LF line ends keeps them', () => {
    expect(withHeraldHeaders(Buffer.from('From: a@example.com\nSubject: s\n\nbody\n'), { 'Message-ID': '<n@e>' }).toString())
      .toBe('Message-ID: <n@e>\nFrom: a@example.com\nSubject: s\n\nbody\n');
  });
});

test('a submitted message counts in herald_emails_accepted_total{way="smtp"}, one per envelope recipient, once stored', async () => {
  const smtpWay = async () => (await emailsAccepted.get()).values.find((v) => v.labels.way === 'smtp')!.value;
  const httpWay = async () => (await emailsAccepted.get()).values.find((v) => v.labels.way === 'http')!.value;
  const [before, httpBefore] = [await smtpWay(), await httpWay()];
  const info = await client(listener.port, e2e.t.project.secretKey)
    .sendMail({ from: 'billing@example.com', to: ['counted-1@example.org', 'counted-2@example.org'], subject: 'Counted', text: 'Hi' });
  expect(info.response).toMatch(/^250 /);
  expect((await smtpWay()) - before).toBe(2);
  expect(await httpWay()).toBe(httpBefore);
});

/**
 * A raw SMTP client over node:net, upgraded with node:tls on STARTTLS: for what real clients hide (EHLO's list,
 * pipelining, the timing of answers, the connection closing).
 */
class RawSmtp {
  private buffer = '';
  private waiting?: () => void;
  closed: Promise<void>;
  private constructor(private socket: net.Socket | nodeTls.TLSSocket) {
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    this.listen(socket);
  }

  private listen(socket: net.Socket | nodeTls.TLSSocket) {
    socket.on('data', (d: Buffer) => { this.buffer += d.toString('latin1'); this.waiting?.(); });
    socket.on('close', () => this.waiting?.());
    socket.on('error', () => undefined);
  }

  static async connect(port: number): Promise<RawSmtp> {
    const c = new RawSmtp(net.connect(port, '127.0.0.1'));
    await c.reply(); // the greeting
    return c;
  }

  /** The next complete reply (every line of a multi-line one); '' once the connection is closed without one. */
  async reply(): Promise<string> {
    for (;;) {
      const m = /^(?:\d{3}-[^\n]*\n)*\d{3}(?: [^\n]*)?\n/.exec(this.buffer);
      if (m) {
        this.buffer = this.buffer.slice(m[0].length);
        return m[0].trimEnd();
      }
      if (this.socket.destroyed) return '';
      await new Promise<void>((resolve) => { this.waiting = resolve; });
    }
  }

  write(data: string | Buffer) { this.socket.write(data); }

  async cmd(line: string): Promise<string> {
    this.write(`${line}\r\n`);
    return this.reply();
  }

  async starttls(): Promise<void> {
    expect(await this.cmd('STARTTLS')).toMatch(/^220 /);
    const secure = nodeTls.connect({ socket: this.socket as net.Socket, rejectUnauthorized: false });
    await new Promise<void>((resolve, reject) => { secure.once('secureConnect', () => resolve()); secure.once('error', reject); });
    this.socket = secure;
    this.listen(secure);
  }

  /** EHLO, STARTTLS, EHLO and AUTH PLAIN with the key: the answer of the AUTH. */
  async login(key: string): Promise<string> {
    await this.cmd('EHLO raw.test');
    await this.starttls();
    await this.cmd('EHLO raw.test');
    return this.cmd(`AUTH PLAIN ${Buffer.from(`\0raw\0${key}`).toString('base64')}`);
  }

  /** One message in the usual steps: the answers of MAIL, RCPT and the end of DATA. */
  async send(from: string, to: string, message: string): Promise<string[]> {
    const mail = await this.cmd(`MAIL FROM:<${from}>`);
    if (!mail.startsWith('250')) return [mail];
    const rcpt = await this.cmd(`RCPT TO:<${to}>`);
    const data = await this.cmd('DATA');
    if (!data.startsWith('354')) return [mail, rcpt, data];
    return [mail, rcpt, await this.cmd(`${message.replace(/\r?\n/g, '\r\n')}\r\n.`)];
  }

  destroy() { this.socket.destroy(); }
}

const sockets: RawSmtp[] = [];
afterEach(() => { for (const s of sockets.splice(0)) s.destroy(); });
async function raw(port: number): Promise<RawSmtp> {
  const c = await RawSmtp.connect(port);
  sockets.push(c);
  return c;
}

/** A logger that keeps what it writes, to read the log lines back. */
function capturingLog() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({ write(chunk: Buffer, _enc, done) { lines.push(JSON.parse(chunk.toString())); done(); } });
  return { log: pino({ level: 'info' }, stream), lines };
}

describe('issue 26', () => {
  test('a revoked key stops the session\'s next message (530 at its recipient or its end of DATA), as HTTP refuses it; nothing more is stored', async () => {
    const key = (await createKey(e2e.t.project.id, 'secret'))!;
    const c = await raw(listener.port);
    expect(await c.login(key.key)).toMatch(/^235 /);
    const [, , first] = await c.send('billing@example.com', 'revoked-1@example.org', 'From: billing@example.com\nSubject: one\n\nfirst');
    expect(first).toMatch(/^250 /);
    expect(await revokeKey(key.id)).toBe(true);
    expect(await c.cmd('NOOP')).toMatch(/^250 /);
    // The key's fresh look (started at MAIL FROM) runs beside the dialogue: the message is refused at its recipient once
    // the answer is known, else at the end of its DATA, before anything is stored.
    const answers = await c.send('billing@example.com', 'revoked-2@example.org', 'From: billing@example.com\nSubject: two\n\nsecond');
    expect(answers[0]).toMatch(/^250 /);
    expect(answers.filter((a) => /^530 .*revoked or its project disabled/.test(a))).toHaveLength(1);
    expect(answers.at(-1)).toMatch(/^530 /);
    // And the next MAIL FROM too: the session is no longer authenticated.
    expect(await c.cmd('MAIL FROM:<billing@example.com>')).toMatch(/^530 /);
    expect(await e2e.t.db.knex('emails').where({ to_email: 'revoked-2@example.org' })).toHaveLength(0);
  });

  test('issue 27: a sending key submits; a key limited to other domains gets 550 naming the From, and nothing is stored', async () => {
    const sending = (await createKey(e2e.t.project.id, 'secret', { name: 'smtp sending', scope: 'sending' }))!;
    await client(listener.port, sending.key).sendMail({ from: 'billing@example.com', to: 'scoped-1@example.org', subject: 's', text: 'x' });
    const limited = (await createKey(e2e.t.project.id, 'secret', { name: 'smtp limited', scope: 'sending', domains: ['other.example'] }))!;
    await expect(client(listener.port, limited.key).sendMail({ from: 'billing@example.com', to: 'scoped-2@example.org', subject: 's', text: 'x' }))
      .rejects.toMatchObject({ responseCode: 550, response: expect.stringMatching(/From billing@example\.com is not at a domain this API key may send from \(other\.example\)/) });
    expect(await e2e.t.db.knex('emails').where({ to_email: 'scoped-2@example.org' })).toHaveLength(0);
    const parent = (await createKey(e2e.t.project.id, 'secret', { name: 'smtp parent', scope: 'full', domains: ['example.com'] }))!;
    await client(listener.port, parent.key).sendMail({ from: 'billing@example.com', to: 'scoped-3@example.org', subject: 's', text: 'x' });
  });

  test('a disabled project stops the session\'s next message (530 to its recipients once known, then at MAIL FROM)', async () => {
    const project = await e2e.t.newProject('Disabled mid-session');
    const c = await raw(listener.port);
    expect(await c.login(project.secretKey)).toMatch(/^235 /);
    expect(await c.cmd('MAIL FROM:<a@nowhere.example>')).toMatch(/^250 /);
    expect(await c.cmd('RSET')).toMatch(/^250 /);
    // That first message's check runs beside the dialogue: let it answer (admitted) before the project is disabled, or
    // it would itself see the project disabled and end the session's authentication before the next MAIL FROM.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await setProjectDisabled(project.id, true);
    expect(await c.cmd('MAIL FROM:<a@nowhere.example>')).toMatch(/^250 /);
    await new Promise((resolve) => setTimeout(resolve, 300)); // the check has answered: the recipient has its refusal
    expect(await c.cmd('RCPT TO:<b@example.org>')).toMatch(/^530 .*revoked or its project disabled/);
    expect(await c.cmd('RCPT TO:<c@example.org>')).toMatch(/^530 /);
    expect(await c.cmd('RSET')).toMatch(/^250 /);
    expect(await c.cmd('MAIL FROM:<a@nowhere.example>')).toMatch(/^530 /);
  });

  test('a session past its message cap or its lifetime gets 421 and is closed, even one kept alive with NOOP', async () => {
    const capped = await listen({ maxSessionMessages: 2 });
    const c = await raw(capped.port);
    expect(await c.login(e2e.t.project.secretKey)).toMatch(/^235 /);
    for (let i = 0; i < 2; i++) {
      expect(await c.cmd('MAIL FROM:<billing@example.com>')).toMatch(/^250 /);
      expect(await c.cmd('RSET')).toMatch(/^250 /);
    }
    expect(await c.cmd('MAIL FROM:<billing@example.com>')).toMatch(/^421 .*At most 2 messages per connection/);
    await c.closed;

    const short = await listen({ maxSessionMs: 600 });
    const d = await raw(short.port);
    expect(await d.login(e2e.t.project.secretKey)).toMatch(/^235 /);
    const started = Date.now();
    let answer = '';
    while (Date.now() - started < 5000) {
      answer = await d.cmd('NOOP');
      if (!answer.startsWith('250')) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(answer).toMatch(/^421 .*lifetime/);
    await d.closed;
    expect(Date.now() - started).toBeLessThan(3000);
  });

  test.each([
    ['two From fields', 'From: billing@example.com\nFrom: ceo@other.test\nSubject: s\n\nx', /2 From fields; exactly one is allowed/],
    ['a From of two mailboxes', 'From: billing@example.com, ceo@other.test\nSubject: s\n\nx', /From field names 2 addresses/],
    ['a From group', 'From: Team: billing@example.com, ceo@other.test;\nSubject: s\n\nx', /From field is a group/],
    ['a Sender at a foreign domain', 'From: billing@example.com\nSender: ceo@other.test\nSubject: s\n\nx', /Sender ceo@other\.test is not at a verified domain/],
    ['two Sender fields', 'From: billing@example.com\nSender: billing@example.com\nSender: ceo@other.test\nSubject: s\n\nx', /2 Sender fields/],
  ])('%s is refused with 550 5.7.1 saying why, and nothing is stored', async (_name, message, why) => {
    const to = `from-check-${Math.random().toString(36).slice(2)}@example.org`;
    const rawMessage = Buffer.from(message.replace(/\n/g, '\r\n'));
    await expect(client(listener.port, e2e.t.project.secretKey).sendMail({ envelope: { from: 'billing@example.com', to: [to] }, raw: rawMessage }))
      .rejects.toMatchObject({ responseCode: 550, response: expect.stringMatching(why) });
    expect(await e2e.t.db.knex('emails').where({ to_email: to })).toHaveLength(0);
  });

  test('one From mailbox (an encoded name with a comma too) with a Sender at a verified domain is accepted', async () => {
    const rawMessage = Buffer.from('From: Billing <billing@example.com>\r\nSender: robot@example.com\r\nSubject: s\r\n\r\nx\r\n');
    const info = await client(listener.port, e2e.t.project.secretKey).sendMail({ envelope: { from: 'billing@example.com', to: ['sender-ok@example.org'] }, raw: rawMessage });
    expect(info.response).toMatch(/^250 /);
    // A comma inside an encoded display name is one mailbox still.
    const encoded = Buffer.from('From: =?utf-8?Q?Doe=2C_J=C3=B6hn?= <billing@example.com>\r\nSubject: s\r\n\r\nx\r\n');
    const second = await client(listener.port, e2e.t.project.secretKey).sendMail({ envelope: { from: 'billing@example.com', to: ['encoded-name@example.org'] }, raw: encoded });
    expect(second.response).toMatch(/^250 /);
    expect(await e2e.t.db.knex('emails').where({ to_email: 'encoded-name@example.org' }).first()).toMatchObject({ from_name: 'Doe, Jöhn' });
  });

  test('failed logins are logged without the key, answered later each time, and the connection is closed (421) past the limit', async () => {
    const { log: captured, lines } = capturingLog();
    const guarded = await listen({ log: captured, authFailureDelayMs: 100, maxAuthFailures: 3 });
    const c = await raw(guarded.port);
    await c.cmd('EHLO raw.test');
    await c.starttls();
    await c.cmd('EHLO raw.test');
    const wrong = `sk_${'b'.repeat(40)}`;
    const answers: [string, number][] = [];
    for (let i = 0; i < 3; i++) {
      const t = Date.now();
      answers.push([await c.cmd(`AUTH PLAIN ${Buffer.from(`\0app\0${wrong}`).toString('base64')}`), Date.now() - t]);
    }
    expect(answers.map(([a]) => a.slice(0, 3))).toEqual(['535', '535', '421']);
    // 100 ms, 200 ms, 400 ms: growing.
    expect(answers[0]![1]).toBeGreaterThanOrEqual(90);
    expect(answers[1]![1]).toBeGreaterThanOrEqual(190);
    expect(answers[2]![1]).toBeGreaterThanOrEqual(390);
    await c.closed;
    const failed = lines.filter((l) => l.msg === 'SMTP AUTH failed');
    expect(failed).toHaveLength(3);
    expect(failed[2]).toMatchObject({ remoteAddress: '127.0.0.1', user: 'app', reason: 'invalid', failures: 3 });
    expect(JSON.stringify(lines)).not.toContain(wrong);
  });

  test('past the failed logins of a remote address in the window, its AUTHs get 421, even on a new connection with a good key', async () => {
    const guarded = await listen({ authFailureDelayMs: 1, maxAuthFailures: 10, maxAuthFailuresPerAddress: 2 });
    const c = await raw(guarded.port);
    expect(await c.login('sk_wrong')).toMatch(/^535 /);
    expect(await c.cmd(`AUTH PLAIN ${Buffer.from('\0raw\0sk_wrong').toString('base64')}`)).toMatch(/^421 /);
    await c.closed;
    const d = await raw(guarded.port);
    expect(await d.login(e2e.t.project.secretKey)).toMatch(/^421 .*Too many failed logins from 127\.0\.0\.1/);
  });

  test('AUTH is offered only after STARTTLS; MAIL FROM before it is 530; loopback may have it in clear when allowed', async () => {
    const c = await raw(listener.port);
    const before = await c.cmd('EHLO raw.test');
    expect(before).toContain('STARTTLS');
    expect(before).not.toMatch(/AUTH/);
    expect(await c.cmd('MAIL FROM:<billing@example.com>')).toMatch(/^530 /);
    // Sent anyway, AUTH is told to come after STARTTLS (RFC 4954's 538), not taken for an unknown command (500).
    expect(await c.cmd(`AUTH PLAIN ${Buffer.from(`\0raw\0${e2e.t.project.secretKey}`).toString('base64')}`)).toMatch(/^538 5\.7\.11 /);
    await c.starttls();
    expect(await c.cmd('EHLO raw.test')).toMatch(/250[- ]AUTH PLAIN LOGIN/);

    const lax = await listen({ insecureAuthOnLoopback: true });
    const d = await raw(lax.port);
    expect(await d.cmd('EHLO raw.test')).toMatch(/250[- ]AUTH PLAIN LOGIN/);
    expect(await d.cmd(`AUTH PLAIN ${Buffer.from(`\0raw\0${e2e.t.project.secretKey}`).toString('base64')}`)).toMatch(/^235 /);
  });

  test('message content sent before the 354 is refused and the connection closed at once', async () => {
    const c = await raw(listener.port);
    expect(await c.login(e2e.t.project.secretKey)).toMatch(/^235 /);
    const started = Date.now();
    c.write('MAIL FROM:<billing@example.com>\r\nRCPT TO:<early@example.org>\r\nDATA\r\nFrom: billing@example.com\r\nSubject: early\r\n\r\nbody\r\n.\r\n');
    // smtp-server has sent its 354 by the time the early content is seen; the refusal follows it.
    const replies = [await c.reply(), await c.reply(), await c.reply(), await c.reply()];
    expect(replies.slice(0, 3).map((r) => r.slice(0, 3))).toEqual(['250', '250', '354']);
    expect(replies[3]).toMatch(/^503 .*before the 354/);
    await c.closed;
    expect(Date.now() - started).toBeLessThan(5000);
    expect(await e2e.t.db.knex('emails').where({ to_email: 'early@example.org' })).toHaveLength(0);
  });

  test('a database that refuses a value is 554 too; a database away stays 451 (the client retries)', async () => {
    const failing = (code: string) => ({ send: async () => { throw Object.assign(new Error(`pg says ${code}`), { code }); } }) as unknown as Sender;
    const refusing = await listen({ sender: failing('22021') }); // invalid byte sequence: the same every time
    await expect(client(refusing.port, e2e.t.project.secretKey).sendMail({ from: 'billing@example.com', to: 'db@example.org', subject: 's', text: 'x' }))
      .rejects.toMatchObject({ responseCode: 554, response: expect.stringContaining('SQLSTATE 22021') });
    const away = await listen({ sender: failing('57P01') }); // admin shutdown: it passes
    await expect(client(away.port, e2e.t.project.secretKey).sendMail({ from: 'billing@example.com', to: 'db@example.org', subject: 's', text: 'x' }))
      .rejects.toMatchObject({ responseCode: 451 });
  });

  const nested = (depth: number) => {
    let body = 'Content-Type: text/plain\r\n\r\ninnermost\r\n';
    for (let i = depth - 1; i >= 0; i--) body = `Content-Type: multipart/mixed; boundary="b${i}"\r\n\r\n--b${i}\r\n${body}--b${i}--\r\n`;
    return `From: billing@example.com\r\nSubject: deep\r\nMIME-Version: 1.0\r\n${body}`;
  };
  test.each([
    ['a NUL byte', 'From: billing@example.com\r\nSubject: nul\r\n\r\nbefore\0after\r\n', /NUL byte/],
    ['headers over 2 MB', `From: billing@example.com\r\nSubject: big\r\nX-Big: ${Array.from({ length: 2200 }, () => 'a'.repeat(990)).join('\r\n ')}\r\n\r\nbody\r\n`, /header size/],
    ['MIME nested over 256 levels', nested(300), /nesting depth/],
  ])('%s is a permanent fault: 554 5.6.0, not 451', async (_name, message, why) => {
    await expect(client(listener.port, e2e.t.project.secretKey).sendMail({ envelope: { from: 'billing@example.com', to: ['faulty@example.org'] }, raw: Buffer.from(message) }))
      .rejects.toMatchObject({ responseCode: 554, response: expect.stringMatching(why) });
  });
});
