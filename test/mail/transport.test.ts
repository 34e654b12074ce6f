import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { enhancedStatus, failureReason, isPermanentFailure, isRecipientRejection, createMailer, type Mailer } from '../../mail/transport';
import { startSmtpServer, type TestSmtpServer } from '../support/smtp';

/**
 * The pooled SMTP transport on its thread (mail/transport.ts threadedSmtp, mail/smtpThread.ts), against a real SMTP
 * server: what crosses to the thread arrives whole (Buffers included), what the server refuses comes back with the
 * fields Herald judges it by, and sends out when the thread stops fail as transient, the next send starting another.
 */
let smtp: TestSmtpServer;
let mailer: Mailer;

beforeAll(async () => {
  smtp = await startSmtpServer();
  mailer = createMailer({ smtpUrl: smtp.url, dataDir: '/nonexistent' });
});
afterAll(async () => {
  mailer.close();
  await smtp.close();
});

const message = (i: number) => ({
  from: 'sender@example.com', to: `r${i}@example.org`, subject: `Message ${i}`, html: `<p>Body ${i}</p>`, messageId: `<m${i}@example.com>`,
});

test('a turn\'s sends cross to the thread together and each arrives, its own answer back to its own caller', async () => {
  const before = smtp.received.length;
  const infos = await Promise.all(Array.from({ length: 60 }, (_, i) => mailer.send(message(i))));
  expect(infos.map((x) => x.messageId)).toEqual(Array.from({ length: 60 }, (_, i) => `<m${i}@example.com>`));
  expect(infos.every((x) => /^250/.test(x.response))).toBe(true);
  const got = (await smtp.waitFor(before + 60)).slice(before);
  expect(new Set(got.map((r) => r.parsed.subject))).toEqual(new Set(Array.from({ length: 60 }, (_, i) => `Message ${i}`)));
});

test('Buffers cross whole: an attachment\'s bytes and a submitted raw message', async () => {
  const before = smtp.received.length;
  const bytes = Buffer.from(Array.from({ length: 4096 }, (_, i) => i % 256));
  await mailer.send({ ...message(100), attachments: [{ filename: 'data.bin', content: bytes, contentType: 'application/octet-stream' }] });
  const raw = Buffer.from('From: a@example.com\r\nTo: b@example.org\r\nSubject: Raw one\r\nMessage-ID: <raw@example.com>\r\n\r\nAs submitted.\r\n');
  await mailer.send({ envelope: { from: 'a@example.com', to: ['b@example.org'] }, raw });
  const [withFile, submitted] = (await smtp.waitFor(before + 2)).slice(before);
  expect(withFile!.parsed.attachments[0]!.content.equals(bytes)).toBe(true);
  expect(submitted!.parsed.subject).toBe('Raw one');
  expect(submitted!.raw.toString()).toContain('As submitted.');
});

test('a message only nodemailer\'s streams can write goes out through them; their error comes back as the send\'s', async () => {
  // Herald's messages are strings and Buffers (written in one pass: mail/compose.ts); a part read from a file is not.
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'herald-transport-'));
  const file = path.join(dir, 'body.html');
  await fs.writeFile(file, '<p>Read from a file</p>');
  const before = smtp.received.length;
  await mailer.send({ ...message(150), html: { path: file } });
  expect((await smtp.waitFor(before + 1)).at(-1)!.parsed.html).toContain('Read from a file');
  const failed = await mailer.send({ ...message(151), html: { path: path.join(dir, 'missing.html') } }).catch((err: unknown) => err);
  expect(failed).toBeInstanceOf(Error);
  expect((failed as Error).message).toMatch(/ENOENT|no such file/);
  // The thread goes on.
  await mailer.send(message(152));
  expect((await smtp.waitFor(before + 2)).at(-1)!.parsed.subject).toBe('Message 152');
  await fs.rm(dir, { recursive: true, force: true });
});

test('a refusal comes back with what Herald judges it by: a recipient refused, a message deferred', async () => {
  smtp.unknownUsers.add('gone@example.org');
  const refused = await mailer.send({ ...message(200), to: 'gone@example.org' }).catch((err: unknown) => err);
  expect(refused).toBeInstanceOf(Error);
  expect(isPermanentFailure(refused)).toBe(true);
  expect(isRecipientRejection(refused)).toBe(true);
  expect(enhancedStatus(refused)).toBe('5.1.1');
  smtp.script([{ code: 451, message: '4.3.0 Try again later' }]);
  const deferred = await mailer.send(message(201)).catch((err: unknown) => err);
  expect(isPermanentFailure(deferred)).toBe(false);
  expect(failureReason(deferred)).toMatch(/451/);
});

test('sends out when the thread stops fail as transient; the next send starts another thread and arrives', async () => {
  // Closed in the send's own turn: the send crosses first, then the close, before any SMTP answer can come back.
  const out = mailer.send(message(300)).catch((err: unknown) => err);
  mailer.close();
  const err = await out;
  expect(err).toBeInstanceOf(Error);
  expect((err as Error & { code?: string }).code).toBe('ETHREAD');
  expect(isPermanentFailure(err)).toBe(false);
  const before = smtp.received.length;
  await mailer.send(message(301));
  expect((await smtp.waitFor(before + 1)).at(-1)!.parsed.subject).toBe('Message 301');
});
