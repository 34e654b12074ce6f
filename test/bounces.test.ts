import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import nodemailer from 'nodemailer';
import request from 'supertest';
import { createApp } from '../api/app';
import type { DnsConfig } from '../config';
import { parseReport } from '../bounces/reports';
import { bounceAddress, emailOfBounceAddress } from '../bounces/token';
import { createLogger } from '../logging/logger';
import { startInbound } from '../smtp/inbound';
import { smtpTls } from '../smtp/tls';
import { TEST_SECRET, testAppDeps } from './support/app';
import { startDnsServer } from './support/dns';
import { startEndToEnd, type EndToEnd } from './support/endToEnd';
import { dsn, variants } from './support/bounceMail';
import { waitFor } from './support/processes';

/**
 * Mail that comes back, end to end: Herald sends with a VERP return path to a real SMTP server; DSNs and ARF reports
 * are delivered by nodemailer (as a remote MTA would) to the inbound listener, which maps them back to the email.
 */
const BOUNCE_DOMAIN = 'bounces.herald.test';
let e2e: EndToEnd;
let knex: Knex;
let inbound: { port: number; close(): Promise<void> };
let tlsDir: string;

beforeAll(async () => {
  e2e = await startEndToEnd({ bounces: { domain: BOUNCE_DOMAIN, settings: { softBounceLimit: 2, softBounceWindowDays: 7 } } });
  knex = e2e.t.db.knex;
  tlsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-inbound-tls-'));
  const tls = await smtpTls({ port: 0, host: undefined, tlsCertFile: undefined, tlsKeyFile: undefined, insecureAuthOnLoopback: false }, tlsDir, createLogger('silent'));
  inbound = await startInbound({ knex, secret: TEST_SECRET, log: createLogger('silent'), settings: { softBounceLimit: 2, softBounceWindowDays: 7 }, bounceDomain: BOUNCE_DOMAIN, port: 0, host: '127.0.0.1', tls, maxBytes: 16 * 1024 * 1024 });
});
afterAll(async () => {
  await inbound.close();
  await e2e.close();
  fs.rmSync(tlsDir, { recursive: true, force: true });
});

/** A remote MTA delivering to the inbound listener: no AUTH, STARTTLS when offered (with any certificate). */
const mta = (extra: { ignoreTLS?: boolean } = {}) => nodemailer.createTransport({ host: '127.0.0.1', port: inbound.port, secure: false, tls: { rejectUnauthorized: false }, ...extra });

function arf(recipient: string): Buffer {
  return Buffer.from([
    'From: fbl@mailbox.example', 'Subject: Complaint', 'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=feedback-report; boundary="F"', '',
    '--F', 'Content-Type: text/plain', '', 'This is an email abuse report.', '',
    '--F', 'Content-Type: message/feedback-report', '',
    'Feedback-Type: abuse', 'User-Agent: ExampleFBL/1.0', 'Version: 1', `Original-Rcpt-To: ${recipient}`, '',
    '--F', 'Content-Type: text/rfc822-headers', '', 'From: app@example.com', `To: ${recipient}`, 'Subject: Hi', '',
    '--F--', '',
  ].join('\r\n'));
}

/** Sends one email through /v1/send and waits until the SMTP server has it; answers its id and its return path. */
async function sendOne(to: string): Promise<{ id: string; returnPath: string }> {
  const before = e2e.smtp.received.length;
  const res = await e2e.t.http().post('/v1/send').set(e2e.key).send({ from: 'app@example.com', to, subject: 'Hi', body: '<p>Hi</p>' }).expect(200);
  const id = res.body.data.emails[0].email as string;
  const got = (await e2e.smtp.waitFor(before + 1)).slice(before).find((m) => m.envelopeTo.includes(to))!;
  await waitFor('email SENT', async () => (await knex('emails').where({ id }).first()).status === 'SENT' || undefined, 20_000, 50);
  return { id, returnPath: got.envelopeFrom };
}

const events = (emailId: string) => knex('events').where({ email_id: emailId }).orderBy('id').select('name', 'data');

test('the domain records gain the bounce domain\'s MX and the return path\'s SPF, checked in DNS beside the domain\'s own', async () => {
  const dns = await startDnsServer();
  const db = e2e.t.db;
  const config: DnsConfig = { servers: [dns.address], timeoutMs: 500, tries: 1, verifyBudgetMs: 500, domainCheckIntervalMinutes: 60 };
  const returnPath = { domain: BOUNCE_DOMAIN, mxHost: 'mx.herald.test' };
  const server = createApp(testAppDeps(db.knex, { dns: config, returnPath, engine: e2e.eng.engine })).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  try {
    const created = await request(server).post('/domains').set(e2e.key).send({ domain: 'shop-widgets.com' }).expect(201);
    const rp = created.body.data.records.filter((r: { purpose: string }) => r.purpose.startsWith('RETURN_PATH'));
    expect(rp).toEqual([
      expect.objectContaining({ purpose: 'RETURN_PATH_MX', type: 'MX', name: BOUNCE_DOMAIN, value: '10 mx.herald.test', status: 'PENDING' }),
      expect.objectContaining({ purpose: 'RETURN_PATH_SPF', type: 'TXT', name: BOUNCE_DOMAIN, value: 'v=spf1 a mx ~all', status: 'PENDING' }),
    ]);
    dns.set(BOUNCE_DOMAIN, { MX: ['mx.herald.test'] });
    const checked = await request(server).post(`/domains/${created.body.data.id}/verify`).set(e2e.key).expect(200);
    const status = Object.fromEntries(checked.body.data.records.map((r: { purpose: string; status: string }) => [r.purpose, r.status]));
    expect(status).toMatchObject({ RETURN_PATH_MX: 'VERIFIED', RETURN_PATH_SPF: 'FAILED', DKIM: 'FAILED' });
    dns.set(BOUNCE_DOMAIN, { MX: ['mx.herald.test'], TXT: ['v=spf1 a mx ~all'] });
    const again = await request(server).post(`/domains/${created.body.data.id}/verify`).set(e2e.key).expect(200);
    expect(again.body.data.records.find((r: { purpose: string }) => r.purpose === 'RETURN_PATH_SPF').status).toBe('VERIFIED');
  } finally {
    await new Promise((r) => server.close(r));
    await dns.close();
  }
});

test('bounce addresses: signed, within 64 characters; a tampered or foreign one names nothing', () => {
  const address = bounceAddress(TEST_SECRET, '0190b4d2-0000-7000-8000-000000000001', BOUNCE_DOMAIN);
  expect(address.split('@')[0]!.length).toBeLessThanOrEqual(64);
  expect(emailOfBounceAddress(TEST_SECRET, address, BOUNCE_DOMAIN)).toBe('0190b4d2-0000-7000-8000-000000000001');
  const [local, domain] = address.split('@') as [string, string];
  // The domain is case-insensitive; the local part is not.
  expect(emailOfBounceAddress(TEST_SECRET, `${local}@${domain.toUpperCase()}`, BOUNCE_DOMAIN)).toBe('0190b4d2-0000-7000-8000-000000000001');
  const flipped = `${local.slice(0, -1)}${local.endsWith('a') ? 'b' : 'a'}@${domain}`;
  expect(emailOfBounceAddress(TEST_SECRET, flipped, BOUNCE_DOMAIN)).toBeUndefined();
  expect(emailOfBounceAddress(Buffer.from('another-installation-secret-0123456789'), address, BOUNCE_DOMAIN)).toBeUndefined();
  expect(emailOfBounceAddress(TEST_SECRET, 'postmaster@bounces.herald.test', BOUNCE_DOMAIN)).toBeUndefined();
  expect(emailOfBounceAddress(TEST_SECRET, address, undefined)).toBeUndefined(); // no BOUNCE_DOMAIN: no address is Herald's
});

/** Issue 26, point 2: the spellings of one signed token that used to name its email too. */

test('issue 26: only the canonical spelling of a token, at BOUNCE_DOMAIN, names its email; the others are refused at RCPT TO', async () => {
  const { id, returnPath } = await sendOne('canonical@example.org');
  expect(emailOfBounceAddress(TEST_SECRET, returnPath, BOUNCE_DOMAIN)).toBe(id);
  const byKind = variants(returnPath);
  const named = Object.fromEntries(Object.entries(byKind).map(([kind, list]) => [kind, list.filter((a) => emailOfBounceAddress(TEST_SECRET, a, BOUNCE_DOMAIN) !== undefined).length]));
  expect(named).toEqual({ 'one extra character': 0, 'last-character variants': 0, 'upper case': 0, 'another domain': 0 });
  // Through the listener, as a remote MTA: each spelling refused with 550 at RCPT TO, before any data; nothing recorded.
  const all = Object.values(byKind).flat();
  const answers: (string | number)[] = [];
  for (const to of all) {
    answers.push(await mta({ ignoreTLS: true }).sendMail({ envelope: { from: '', to: [to] }, raw: dsn('canonical@example.org', 'failed', '5.1.1') })
      .then(() => 250, (err: { responseCode?: number; command?: string }) => `${err.responseCode} ${err.command}`));
  }
  expect(new Set(answers)).toEqual(new Set(['550 RCPT TO']));
  expect((await events(id)).map((e) => e.name)).toEqual(['email.sent']);
  expect((await knex('emails').where({ id }).first()).status).toBe('SENT');
});

test('issue 26: a replayed hard bounce records one email.bounced; forged delayed DSNs count one soft bounce per email', async () => {
  const { id, returnPath } = await sendOne('replayed@example.org');
  const answers: string[] = [];
  for (let i = 0; i < 11; i++) answers.push((await mta().sendMail({ envelope: { from: '', to: [returnPath] }, raw: dsn('replayed@example.org', 'failed', '5.1.1') })).response);
  expect(answers[0]).toMatch(/^250 2\.0\.0 Recorded/);
  expect(answers.slice(1).every((a) => /^250 2\.0\.0 Received/.test(a))).toBe(true); // accepted: the sender stops sending it
  expect((await events(id)).map((e) => [e.name, e.data.type ?? null])).toEqual([['email.sent', null], ['email.bounced', 'hard']]);
  expect(await knex('suppressions').where({ project_id: e2e.t.project.id, email: 'replayed@example.org' })).toHaveLength(1);

  // SOFT_BOUNCE_LIMIT is 2 here: five "delayed" reports for one email are one soft bounce, not a suppression.
  const soft = await sendOne('delayed-forged@example.org');
  await Promise.all(Array.from({ length: 5 }, () => mta().sendMail({ envelope: { from: '', to: [soft.returnPath] }, raw: dsn('delayed-forged@example.org', 'delayed', '4.2.2') })));
  expect((await events(soft.id)).map((e) => [e.name, e.data.type ?? null])).toEqual([['email.sent', null], ['email.bounced', 'soft']]);
  expect(await knex('suppressions').where({ project_id: e2e.t.project.id, email: 'delayed-forged@example.org' }).first()).toBeUndefined();
});

test('issue 26: a status that is no RFC 3463 code (9.9.9) is no hard bounce', async () => {
  for (const status of ['9.9.9', '6.1.1', '5.1', '5.1.1.1', 'x.1.1', '5.1234.1']) {
    expect(await parseReport(dsn('a@example.org', 'failed', status))).toMatchObject({ kind: 'bounce', failures: [{ type: 'soft', status: null }] });
  }
  expect(await parseReport(dsn('a@example.org', 'failed', '2.0.0'))).toMatchObject({ kind: 'bounce', failures: [{ type: 'soft', status: '2.0.0' }] });
  expect(await parseReport(dsn('a@example.org', 'failed', '5.7.26'))).toMatchObject({ kind: 'bounce', failures: [{ type: 'hard', status: '5.7.26' }] });
  const { id, returnPath } = await sendOne('odd-status@example.org');
  await mta().sendMail({ envelope: { from: '', to: [returnPath] }, raw: dsn('odd-status@example.org', 'failed', '9.9.9') });
  expect((await knex('emails').where({ id }).first()).status).toBe('SENT');
  expect(await knex('suppressions').where({ project_id: e2e.t.project.id, email: 'odd-status@example.org', reason: 'hard_bounce' }).first()).toBeUndefined();
});

test('issue 26: a message that can never be read (a NUL byte, a header over 2 MB, MIME nested over 256 levels) is refused for good, 554 5.6.0', async () => {
  const { id, returnPath } = await sendOne('unreadable@example.org');
  const withNul = Buffer.from(dsn('unreadable@example.org', 'failed', '5.1.1').toString().replace('mailbox', 'mail\0box'));
  const bigHeader = Buffer.concat([Buffer.from(`X-Filler: ${'a'.repeat(3 * 1024 * 1024)}\r\n`), dsn('unreadable@example.org', 'failed', '5.1.1')]);
  const depth = 300;
  const nested = Buffer.from([
    ...Array.from({ length: depth }, (_, i) => `Content-Type: multipart/mixed; boundary="b${i}"\r\n\r\n--b${i}\r\n`),
    'Content-Type: text/plain\r\n\r\nx\r\n',
    ...Array.from({ length: depth }, (_, i) => `--b${depth - 1 - i}--\r\n`),
  ].join(''));
  for (const [name, raw] of [['NUL', withNul], ['header over 2 MB', bigHeader], [`MIME nested ${depth} levels`, nested]] as const) {
    const err = await mta().sendMail({ envelope: { from: '', to: [returnPath] }, raw }).then(() => undefined, (e: { responseCode?: number; response?: string }) => e);
    expect([name, err?.responseCode, err?.response?.slice(0, 9)]).toEqual([name, 554, '554 5.6.0']);
  }
  expect((await events(id)).map((e) => e.name)).toEqual(['email.sent']);
});

test('DSNs and ARF reports are read; anything else is no report', async () => {
  expect(await parseReport(dsn('a@example.org', 'failed', '5.1.1'))).toMatchObject({ kind: 'bounce', failures: [{ type: 'hard', status: '5.1.1', recipient: 'a@example.org', diagnostic: '550 5.1.1 <a@example.org>: mailbox unavailable' }] });
  expect(await parseReport(dsn('a@example.org', 'delayed', '4.2.2'))).toMatchObject({ kind: 'bounce', failures: [{ type: 'soft', action: 'delayed' }] });
  expect(await parseReport(dsn('a@example.org', 'failed', '4.4.7'))).toMatchObject({ kind: 'bounce', failures: [{ type: 'soft', action: 'failed' }] });
  expect(await parseReport(arf('a@example.org'))).toEqual({ kind: 'complaint', feedbackType: 'abuse', userAgent: 'ExampleFBL/1.0', recipient: 'a@example.org' });
  expect(await parseReport(Buffer.from('From: a@b\r\nSubject: Out of office\r\n\r\nI am away.\r\n'))).toBeUndefined();
  expect(await parseReport(Buffer.from('Content-Type: multipart/report; boundary=x\r\n\r\n--x\r\nContent-Type: text/plain\r\n\r\nno status\r\n--x--\r\n'))).toBeUndefined();
});

test('every message carries its VERP return path; a hard-bounce DSN marks the email BOUNCED and suppresses the address', async () => {
  const { id, returnPath } = await sendOne('gone@example.org');
  expect(returnPath).toMatch(new RegExp(`^bounces\\+[a-z2-7]{42}@${BOUNCE_DOMAIN.replace(/\./g, '\\.')}$`));
  expect(emailOfBounceAddress(TEST_SECRET, returnPath, BOUNCE_DOMAIN)).toBe(id);

  const info = await mta().sendMail({ envelope: { from: '', to: [returnPath] }, raw: dsn('gone@example.org', 'failed', '5.1.1') });
  expect(info.response).toMatch(/^250 2\.0\.0 Recorded/);
  expect(await events(id)).toEqual([
    { name: 'email.sent', data: expect.any(Object) },
    { name: 'email.bounced', data: { type: 'hard', status: '5.1.1', diagnostic: '550 5.1.1 <gone@example.org>: mailbox unavailable', source: 'dsn' } },
  ]);
  expect((await knex('emails').where({ id }).first()).status).toBe('BOUNCED');
  expect(await knex('suppressions').where({ project_id: e2e.t.project.id, email: 'gone@example.org' }).first()).toMatchObject({ reason: 'hard_bounce', details: { emailId: id, status: '5.1.1' } });
  // From now on the address gets nothing.
  const again = await e2e.t.http().post('/v1/send').set(e2e.key).send({ from: 'app@example.com', to: 'gone@example.org', subject: 'Hi', body: '<p>Hi</p>' });
  expect(again.body.data.emails[0]).toMatchObject({ status: 'SUPPRESSED', reason: 'hard_bounce' });
});

test('soft bounces are recorded; the address is suppressed once it reaches the limit within the window', async () => {
  const first = await sendOne('full@example.org');
  await mta().sendMail({ envelope: { from: '', to: [first.returnPath] }, raw: dsn('full@example.org', 'delayed', '4.2.2') });
  expect((await events(first.id)).map((e) => [e.name, e.data.type])).toEqual([['email.sent', undefined], ['email.bounced', 'soft']]);
  expect(await knex('suppressions').where({ email: 'full@example.org' }).first()).toBeUndefined();
  expect((await knex('emails').where({ id: first.id }).first()).status).toBe('SENT');

  const second = await sendOne('full@example.org');
  await mta().sendMail({ envelope: { from: '', to: [second.returnPath] }, raw: dsn('full@example.org', 'failed', '4.2.2') });
  expect(await knex('suppressions').where({ project_id: e2e.t.project.id, email: 'full@example.org' }).first()).toMatchObject({ reason: 'soft_bounce', details: { softBounces: 2, windowDays: 7 } });
});

test('a complaint (ARF) records email.complained, unsubscribes the contact and suppresses the address', async () => {
  await e2e.t.http().post('/contacts').set(e2e.key).send({ email: 'angry@example.org', subscribed: true }).expect(201);
  const { id, returnPath } = await sendOne('angry@example.org');
  await mta().sendMail({ envelope: { from: '', to: [returnPath] }, raw: arf('angry@example.org') });
  expect((await events(id)).map((e) => e.name)).toEqual(['email.sent', 'email.complained']);
  const contact = await knex('contacts').where({ project_id: e2e.t.project.id, email: 'angry@example.org' }).first();
  expect(contact.subscribed).toBe(false);
  expect(await knex('events').where({ contact_id: contact.id, name: 'contact.unsubscribed' }).first()).toMatchObject({ data: { source: 'complaint' } });
  expect(await knex('suppressions').where({ project_id: e2e.t.project.id, email: 'angry@example.org' }).first()).toMatchObject({ reason: 'complaint' });
});

test('a recipient refused at SMTP time (550 to RCPT TO) is a hard bounce at once', async () => {
  e2e.smtp.unknownUsers.add('nobody@example.org');
  const res = await e2e.t.http().post('/v1/send').set(e2e.key).send({ from: 'app@example.com', to: 'nobody@example.org', subject: 'Hi', body: '<p>Hi</p>' }).expect(200);
  const id = res.body.data.emails[0].email as string;
  await waitFor('email BOUNCED', async () => (await knex('emails').where({ id }).first()).status === 'BOUNCED' || undefined, 20_000, 50);
  expect((await events(id)).map((e) => [e.name, e.data.type ?? null, e.data.source ?? null])).toEqual([['email.failed', null, null], ['email.bounced', 'hard', 'smtp']]);
  expect(await knex('suppressions').where({ project_id: e2e.t.project.id, email: 'nobody@example.org' }).first()).toMatchObject({ reason: 'hard_bounce', details: { status: '5.1.1' } });
});

test('a slow client holds only its own connection: a report delivered beside it is recorded at once', async () => {
  const { id, returnPath } = await sendOne('beside-slow@example.org');
  const slow = net.connect(inbound.port, '127.0.0.1');
  await new Promise((r) => slow.once('data', r)); // the greeting
  slow.write('EHLO slow.example\r\nMAIL FROM:<>\r\n');
  const dribble = setInterval(() => slow.write('R'), 50); // a command that never ends, a byte at a time
  try {
    const info = await mta().sendMail({ envelope: { from: '', to: [returnPath] }, raw: dsn('beside-slow@example.org', 'failed', '5.1.1') });
    expect(info.response).toMatch(/^250 /);
    expect((await events(id)).map((e) => e.name)).toContain('email.bounced');
  } finally {
    clearInterval(dribble);
    slow.destroy();
  }
});

test('unsigned and foreign addresses are refused before any data; unknown emails, malformed reports and huge messages change nothing', async () => {
  const count = async () => Number((await knex('events').count('* as n').first())!.n);
  const before = await count();
  await expect(mta().sendMail({ envelope: { from: '', to: ['postmaster@bounces.herald.test'] }, raw: dsn('x@example.org', 'failed', '5.1.1') }))
    .rejects.toMatchObject({ responseCode: 550 });
  const foreign = bounceAddress(Buffer.from('another-installation-secret-0123456789'), '0190b4d2-0000-7000-8000-000000000001', BOUNCE_DOMAIN);
  await expect(mta().sendMail({ envelope: { from: '', to: [foreign] }, raw: dsn('x@example.org', 'failed', '5.1.1') })).rejects.toMatchObject({ responseCode: 550 });
  // Signed, but for an email that does not exist (deleted with its project, say): accepted and dropped.
  const unknown = bounceAddress(TEST_SECRET, '0190b4d2-0000-7000-8000-00000000ffff', BOUNCE_DOMAIN);
  expect((await mta().sendMail({ envelope: { from: '', to: [unknown] }, raw: dsn('x@example.org', 'failed', '5.1.1') })).response).toMatch(/^250 2\.0\.0 Received/);
  const { returnPath } = await sendOne('fine@example.org');
  const afterSend = await count();
  expect((await mta().sendMail({ envelope: { from: '', to: [returnPath] }, raw: Buffer.from('Content-Type: multipart/report; report-type=delivery-status; boundary=x\r\n\r\n--x\r\nContent-Type: message/delivery-status\r\n\r\ngarbage\r\n--x--\r\n') })).response).toMatch(/^250 /);
  await expect(mta().sendMail({ envelope: { from: '', to: [returnPath] }, raw: Buffer.concat([dsn('fine@example.org', 'failed', '5.1.1'), Buffer.alloc(30 * 1024 * 1024, 'a')]) }))
    .rejects.toMatchObject({ responseCode: 552 });
  expect(await count()).toBe(afterSend);
  expect(afterSend - before).toBe(1); // only the send's own email.sent
  expect(await knex('suppressions').where({ email: 'fine@example.org' }).first()).toBeUndefined();
});
