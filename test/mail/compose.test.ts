import nodemailer, { type SendMailOptions } from 'nodemailer';
import { composeMessage, signMessage } from '../../mail/compose';
import { buildMessage, buildRawMessage, type StoredAttachment } from '../../mail/message';
import type { DeliveryEmail } from '../../db/models/Email';

/**
 * mail/compose.ts writes a message in one pass where nodemailer streams it: the bytes must be nodemailer's own, for
 * every shape Herald builds (mail/message.ts) and for the edges of its encoders (line lengths, trailing whitespace,
 * dots, bare line ends, non-ASCII, the size where its encoders change to slices).
 */
const nodemailerStreams = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
const nodemailerBytes = async (m: SendMailOptions) => (await nodemailerStreams.sendMail(m)).message as Buffer;

const email = (over: Partial<DeliveryEmail> = {}): DeliveryEmail => ({
  id: '0190a1b2-c3d4-7e5f-8a9b-0123456789ab', projectId: 'p', contactId: null, campaignId: null, variant: null, isTest: false,
  fromEmail: 'news@example.com', fromName: 'Example News', replyTo: null, toEmail: 'grace@example.org', toName: null,
  subject: 'Hello', html: '<p>Hi</p>', headers: {}, attachmentIds: [], rawMessageId: null, attempts: 0, priority: 0,
  trackOpens: false, trackClicks: false, createdAt: new Date('2026-11-29T10:00:00Z'), partitionAt: new Date('2026-11-29T10:00:00Z'),
  ...over,
} as DeliveryEmail);

const attachment = (over: Partial<StoredAttachment> = {}): StoredAttachment => ({
  id: 'a1', filename: 'report.pdf', contentType: 'application/pdf', contentId: null, disposition: 'attachment',
  content: Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7) % 256)), ...over,
});

// A deterministic generator of awkward bodies: long words, spaces and tabs before line ends, dots at line starts,
// bare LF and CR, CRLF, non-ASCII (two-, three- and four-byte), `=` signs.
function awkward(seed: number, length: number): string {
  const pieces = ['word', ' ', '\t', '\n', '\r\n', '\r', '.', '..\n', '=', '=3D', 'é', '€', '😀', 'ß', 'a'.repeat(90), '<a href="https://example.com/x?a=1&b=2">link</a>', '  \n', ' \r\n'];
  let s = '';
  let x = seed;
  while (s.length < length) {
    x = (x * 1103515245 + 12345) % 2147483648;
    s += pieces[x % pieces.length];
  }
  return s;
}

const cases: [string, () => SendMailOptions][] = [
  ['a plain HTML email', () => buildMessage(email(), { subject: 'Hello', html: '<p>Hi there</p>' }, [])],
  ['names, Reply-To and headers with non-ASCII', () => buildMessage(email({ fromName: 'Zoë « Ünïcödé » Müller', toName: 'Grâce Hopper', replyTo: 'help@example.com', headers: { 'X-Entity-Ref': 'ref-1', 'X-Note': 'café ☕' } }), { subject: 'Ünïcödé subject with a very long tail that needs folding across more than one line of the header block 😀', html: '<p>Ça va?</p>', extraHeaders: { 'List-Unsubscribe': '<https://example.com/u/abc>', 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' } }, [])],
  ['an empty body', () => buildMessage(email(), { subject: 'Empty', html: '' }, [])],
  ['a body with no line end', () => buildMessage(email(), { subject: 's', html: 'x' }, [])],
  ['a body ending in spaces', () => buildMessage(email(), { subject: 's', html: 'ends with spaces   ' }, [])],
  ['a body ending in CR', () => buildMessage(email(), { subject: 's', html: 'ends with CR\r' }, [])],
  ['an attachment', () => buildMessage(email(), { subject: 'With a file', html: '<p>See attached</p>' }, [attachment()])],
  ['an inline image and an attachment', () => buildMessage(email(), { subject: 'Inline', html: '<img src="cid:logo@x">' }, [attachment({ id: 'i', filename: 'logo.png', contentType: 'image/png', contentId: 'logo@x', disposition: 'inline', content: Buffer.from('PNGDATA'.repeat(300)) }), attachment()])],
  ['a text attachment with bare line ends', () => buildMessage(email(), { subject: 't', html: '<p>t</p>' }, [attachment({ filename: 'notes.txt', contentType: 'text/plain', content: Buffer.from('line one\nline two\rline three\r\n  \n') })])],
  ['a DKIM and Return-Path email (the key is not part of the bytes)', () => buildMessage(email(), { subject: 'Signed', html: '<p>s</p>' }, [], { returnPath: 'b+abc@bounces.example.com', dkim: { domainName: 'example.com', keySelector: 's1', privateKey: 'unused' } })],
  ['a submitted raw message', () => buildRawMessage(email({ replyTo: 'x+*@example.com' }), Buffer.from('From: a@example.com\r\nTo: b@example.org\r\nSubject: Raw\r\nReply-To: x+*@example.com\r\n\r\nAs submitted.\r\n'), { replyTo: 'x+signed@example.com' })],
  ['a raw message with bare LF and no last line end', () => buildRawMessage(email(), Buffer.from('From: a@example.com\nSubject: LF\n\nbody\nmore'))],
  ...Array.from({ length: 40 }, (_, i): [string, () => SendMailOptions] => [`an awkward body #${i} (${(i % 8) * 1500 + 10} characters)`, () => buildMessage(email(), { subject: awkward(i + 1000, 30 + i), html: awkward(i, (i % 8) * 1500 + 10) }, [])]),
  ['a body at the encoder\'s slice (64 KB of ASCII)', () => buildMessage(email(), { subject: 'big', html: awkward(7, 64 * 1024).replace(/[^\x20-\x7e\n]/g, 'x').slice(0, 64 * 1024) }, [])],
  ['a body past one slice (streamed by nodemailer)', () => buildMessage(email(), { subject: 'bigger', html: awkward(8, 200_000) }, [])],
];

test.each(cases)('%s: the same bytes as nodemailer\'s streams, with its envelope and Message-ID', async (_name, make) => {
  const message = make();
  const { dkim: _key, ...unsigned } = message;
  const composed = await composeMessage(message);
  expect(composed.bytes.toString('latin1')).toBe((await nodemailerBytes(unsigned)).toString('latin1'));
  const info = await nodemailerStreams.sendMail(unsigned);
  expect(composed.envelope).toEqual({ from: info.envelope.from || '', to: info.envelope.to });
  // Without a Message-ID of its own, a raw message's is made up at random (on both sides: it is not in its bytes).
  if (message.raw && !message.messageId) expect(composed.messageId).toMatch(/^<[^<>\s]+@[^<>\s]+>$/);
  else expect(composed.messageId).toBe(info.messageId);
});

test('a submitted raw message answers with the Message-ID its bytes carry', async () => {
  const message = buildRawMessage(email(), Buffer.from('From: a@example.com\r\nMessage-ID: <client@example.com>\r\n\r\nx\r\n'));
  const composed = await composeMessage(message);
  expect(composed.messageId).toBe('<0190a1b2-c3d4-7e5f-8a9b-0123456789ab@example.com>');
  expect(composed.bytes.toString()).toContain('Message-ID: <0190a1b2-c3d4-7e5f-8a9b-0123456789ab@example.com>\r\n');
  expect(composed.bytes.toString()).not.toContain('client@example.com');
});

test('a DKIM signature over the composed bytes is nodemailer\'s over its stream', async () => {
  const { privateKey } = await import('node:crypto').then((c) => c.generateKeyPairSync('rsa', { modulusLength: 1024, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } }));
  const dkim = { domainName: 'example.com', keySelector: 's1', privateKey };
  const message = buildMessage(email(), { subject: 'Signed ü', html: awkward(3, 3000) }, [attachment()], { dkim });
  const signed = await signMessage((await composeMessage(message)).bytes, dkim);
  expect(signed.toString('latin1')).toBe((await nodemailerBytes(message)).toString('latin1'));
});
