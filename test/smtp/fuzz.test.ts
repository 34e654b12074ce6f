import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import type { Knex } from 'knex';
import nodemailer from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport';
import { bounceAddress } from '../../bounces/token';
import { addDomain } from '../../domains/rows';
import { createLogger } from '../../logging/logger';
import { createKey, createProject, revokeKey, type CreatedProject } from '../../projects/service';
import { createSender } from '../../sending/sender';
import { startInbound } from '../../smtp/inbound';
import type { Listening } from '../../smtp/listener';
import { startSubmission } from '../../smtp/submission';
import { smtpTls } from '../../smtp/tls';
import { TEST_SECRET, testAppDeps } from '../support/app';
import { dsn, variants } from '../support/bounceMail';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { SmtpClient } from '../support/smtpClient';

/**
 * Issue 26's last point: a seeded fuzz of the two SMTP listeners an attacker reaches, in the approach of
 * test/inbound/fuzz.test.ts (a generator of sessions, a model that predicts every reply, a check of what was stored).
 *
 * Submission (SMTP_PORT): sessions over raw sockets (STARTTLS as offered, AUTH PLAIN or LOGIN with the project's key)
 * and through nodemailer, mixing valid messages with the issue's attacks: two From fields, a From of two mailboxes, a
 * group, a foreign From domain, a Sender at an unverified domain, no From (550); a NUL byte, a header over 2 MB, MIME
 * nested past 256 levels (554 5.6.0); over the size cap (552); bare LF line ends and a bare CR in a header (stored);
 * the body sent before the 354 (503, closed); pipelined transactions; wrong passwords (535, the third 421 and closed);
 * AUTH before STARTTLS (538); MAIL before AUTH (530); a key revoked mid-session (that message refused 530, then every
 * MAIL FROM); the per-connection message cap (421). Afterwards every message answered 250 is stored exactly once
 * (one email per recipient, all on one stored raw message) and no refused one at all.
 *
 * Bounce listener (SMTP_INBOUND_PORT): DSNs to VERP addresses of emails the submission stored: canonical tokens (the
 * first report of each kind per email is recorded, a replay adds nothing), respelt tokens (an extra character, upper
 * case, another domain: 550 at RCPT), unknown status codes (soft), messages that are no report (250, nothing), and
 * unreadable ones (554 5.6.0, never 451). Afterwards each email's status, events and suppression match the model.
 *
 *   SMTP_FUZZ_SEED=<n>   seed (default below; FUZZ_SEED too)   SMTP_FUZZ_RUNS=<n>   submission sessions (default 150; half as many to the bounce listener)
 */

const SEED = Number(process.env.SMTP_FUZZ_SEED ?? process.env.FUZZ_SEED ?? 20261126);
const RUNS = Number(process.env.SMTP_FUZZ_RUNS ?? 150);
const BOUNCE_RUNS = Math.max(20, Math.round(RUNS / 2));
const BOUNCE_DOMAIN = 'bounces.fuzz.test';
/** Small enough to send past it cheaply, large enough for a header block over the parser's 2 MB. */
const MAX_BYTES = 3 * 1024 * 1024;
/** SMTP_SESSION_MAX_MESSAGES, small: sessions of up to 6 messages cross it. */
const CAP = 4;
const MAX_AUTH_FAILURES = 3;

let db: TestDatabase;
let knex: Knex;
let project: CreatedProject;
let submission: Listening;
let inbound: Listening;
let tlsDir: string;
/** A listener's promise nobody waits on, or a throw nobody catches: a failure of the run whatever the replies were. */
const escaped: unknown[] = [];
const onEscape = (err: unknown) => { escaped.push(err); };

beforeAll(async () => {
  process.on('unhandledRejection', onEscape);
  process.on('uncaughtException', onEscape);
  db = await createTestDatabase();
  knex = db.knex;
  project = await createProject('SMTP fuzz');
  await addDomain(project.id, 'example.com', true);
  tlsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-smtp-fuzz-'));
  const log = createLogger(process.env.SMTP_FUZZ_LOG ?? 'silent');
  const tls = await smtpTls({ port: 0, host: undefined, tlsCertFile: undefined, tlsKeyFile: undefined, insecureAuthOnLoopback: false }, tlsDir, log);
  const limits = { maxConnectionsPerAddress: 100 };
  submission = await startSubmission({
    knex, sender: createSender(knex, testAppDeps(knex)), log, port: 0, host: '127.0.0.1', tls, insecureAuthOnLoopback: false, ratePerMinute: 1_000_000,
    maxBytes: MAX_BYTES, maxSessionMessages: CAP, maxAuthFailures: MAX_AUTH_FAILURES, maxAuthFailuresPerAddress: 1_000_000, authFailureDelayMs: 1, limits,
  });
  inbound = await startInbound({ knex, secret: TEST_SECRET, log, settings: { softBounceLimit: 3, softBounceWindowDays: 7 }, bounceDomain: BOUNCE_DOMAIN, port: 0, host: '127.0.0.1',
    tls, maxBytes: 8 * 1024 * 1024, senderRatePerMinute: 1_000_000, limits });
});
afterAll(async () => {
  process.off('unhandledRejection', onEscape);
  process.off('uncaughtException', onEscape);
  await submission?.close();
  await inbound?.close();
  await db?.close();
  if (tlsDir) fs.rmSync(tlsDir, { recursive: true, force: true });
});

const code = (r: string | undefined) => (r === undefined ? 'closed' : r.slice(0, 3));

/** A reply that must have `want` (a code, or a code class like '5xx'); the transcript and the seed when not. */
async function expectReply(c: SmtpClient, want: string, what: string): Promise<string | undefined> {
  const r = await c.reply();
  const got = code(r);
  const ok = want.endsWith('xx') ? got[0] === want[0] : got === want;
  if (!ok) throw new Error(`${what}: expected ${want}, got ${r ?? 'the connection closed'} (SMTP_FUZZ_SEED=${SEED})\ntranscript:\n${c.transcript.join('\n')}`);
  return r;
}

// ---------------------------------------------------------------- submitted messages

type Kind = 'valid' | 'bareLf' | 'bareCr' | 'senderOk' | 'twoFrom' | 'fromTwo' | 'group' | 'foreign' | 'senderForeign' | 'noFrom' | 'nul' | 'hugeHeader' | 'deepMime' | 'oversize';

/** The model: the final reply of DATA for a message of that kind (with its enhanced code where Herald specifies one). */
function finalFor(kind: Kind): { code: string; text?: RegExp } {
  switch (kind) {
    case 'valid': case 'bareLf': case 'bareCr': case 'senderOk': return { code: '250', text: /^250 2\.0\.0 Queued as / };
    case 'twoFrom': return { code: '550', text: /5\.7\.1 The message has 2 From fields/ };
    case 'fromTwo': return { code: '550', text: /5\.7\.1 The From field names 2 addresses/ };
    case 'group': return { code: '550', text: /5\.7\.1 The From field is a group/ };
    case 'foreign': return { code: '550', text: /not at a verified domain/ };
    case 'senderForeign': return { code: '550', text: /5\.7\.1 Sender ceo@other\.test is not at a verified domain/ };
    case 'noFrom': return { code: '550', text: /no valid From/ };
    case 'nul': return { code: '554', text: /^554 5\.6\.0 .*NUL byte/ };
    case 'hugeHeader': return { code: '554', text: /^554 5\.6\.0 .*header size/ };
    case 'deepMime': return { code: '554', text: /^554 5\.6\.0 .*nesting depth/ };
    case 'oversize': return { code: '552', text: /^552 5\.3\.4/ };
  }
}

function nested(depth: number): string {
  let body = 'Content-Type: text/plain\r\n\r\ninnermost\r\n';
  for (let i = depth - 1; i >= 0; i--) body = `Content-Type: multipart/mixed; boundary="b${i}"\r\n\r\n--b${i}\r\n${body}--b${i}--\r\n`;
  return `MIME-Version: 1.0\r\n${body}`;
}

/** A message of that kind, its mark in the Subject and the Message-ID (to find what was stored of it). */
function message(kind: Kind, mark: string, to: string[], noise: string): string {
  const rest = `To: ${to.join(', ')}\r\nSubject: ${kind} ${mark}\r\nMessage-ID: <${mark}@fuzz.example>\r\n`;
  const from = 'From: Billing <billing@example.com>\r\n';
  const text = `\r\n${noise}\r\n`;
  switch (kind) {
    case 'valid': return `${from}${rest}${text}`;
    case 'bareLf': return `${from}${rest}${text}`.replace(/\r\n/g, '\n');
    case 'bareCr': return `${from}${rest.replace('\r\nMessage-ID', '\rBcc: injected@example.org\r\nMessage-ID')}${text}`;
    case 'senderOk': return `${from}Sender: robot@example.com\r\n${rest}${text}`;
    case 'twoFrom': return `${from}From: ceo@other.test\r\n${rest}${text}`;
    case 'fromTwo': return `From: billing@example.com, ceo@other.test\r\n${rest}${text}`;
    case 'group': return `From: Team: billing@example.com, ceo@other.test;\r\n${rest}${text}`;
    case 'foreign': return `From: me@unverified.example\r\n${rest}${text}`;
    case 'senderForeign': return `${from}Sender: ceo@other.test\r\n${rest}${text}`;
    case 'noFrom': return `${rest}${text}`;
    case 'nul': return `${from}${rest}\r\nbefore\0after ${noise}\r\n`;
    case 'hugeHeader': return `${from}${rest}X-Big: ${Array.from({ length: 2200 }, () => 'a'.repeat(990)).join('\r\n ')}\r\n${text}`;
    case 'deepMime': return `${from}${rest}${nested(300)}`;
    case 'oversize': return `${from}${rest}\r\n${`${'x'.repeat(998)}\r\n`.repeat(Math.ceil(MAX_BYTES / 1000) + 10)}`;
  }
}

/** On the wire: dot-stuffed, CRLF before the terminator. */
function wire(text: string): string {
  let body = text.replace(/(^|\r\n|\n)\./g, '$1..');
  if (!body.endsWith('\r\n')) body += '\r\n';
  return `${body}.\r\n`;
}

/** Every message sent: whether the model says it was stored, and for how many recipients. */
const sent: { mark: string; kind: Kind; rcpts: number; stored: boolean; reply: string | undefined }[] = [];
let marks = 0;
const newMark = () => `smtpfz${++marks}x`;
const recipientsFor = (mark: string, n: number) => Array.from({ length: n }, (_, i) => `r${i}-${mark}@example.org`);

// ---------------------------------------------------------------- submission sessions

type Prelude =
  | { t: 'tls'; login: 'PLAIN' | 'LOGIN' }
  | { t: 'authBeforeTls' }
  | { t: 'mailBeforeAuth' }
  | { t: 'wrong'; n: number; spelling: number };
type Unit =
  | { t: 'message'; kind: Kind; rcpts: number; pipelined: boolean; noise: string }
  | { t: 'earlyBody' }
  | { t: 'revoke' }
  | { t: 'rset' }
  | { t: 'noop' };
interface Session { prelude: Prelude; revocable: boolean; units: Unit[] }

const kindArb = fc.oneof(
  { weight: 16, arbitrary: fc.constantFrom<Kind>('valid', 'bareLf', 'senderOk') },
  { weight: 16, arbitrary: fc.constantFrom<Kind>('bareCr', 'twoFrom', 'fromTwo', 'group', 'foreign', 'senderForeign', 'noFrom', 'nul', 'deepMime') },
  // Megabytes each: a few of them per run are enough.
  { weight: 1, arbitrary: fc.constantFrom<Kind>('hugeHeader', 'oversize') },
);
const noiseArb = fc.string({ maxLength: 40, unit: fc.constantFrom(...'abcdefXYZ .:;<>=?@\t'.split('')) });
const unitArb: fc.Arbitrary<Unit> = fc.oneof(
  { weight: 10, arbitrary: fc.record({ kind: kindArb, rcpts: fc.integer({ min: 1, max: 3 }), pipelined: fc.boolean(), noise: noiseArb }).map((m) => ({ t: 'message' as const, ...m })) },
  { weight: 1, arbitrary: fc.constant({ t: 'earlyBody' as const }) },
  { weight: 2, arbitrary: fc.constant({ t: 'revoke' as const }) },
  { weight: 1, arbitrary: fc.constant({ t: 'rset' as const }) },
  { weight: 1, arbitrary: fc.constant({ t: 'noop' as const }) },
);
const preludeArb: fc.Arbitrary<Prelude> = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom<'PLAIN' | 'LOGIN'>('PLAIN', 'PLAIN', 'LOGIN').map((login) => ({ t: 'tls' as const, login })) },
  { weight: 1, arbitrary: fc.constant({ t: 'authBeforeTls' as const }) },
  { weight: 1, arbitrary: fc.constant({ t: 'mailBeforeAuth' as const }) },
  { weight: 2, arbitrary: fc.record({ n: fc.integer({ min: 1, max: MAX_AUTH_FAILURES + 1 }), spelling: fc.nat(5) }).map((w) => ({ t: 'wrong' as const, ...w })) },
);
const sessionArb: fc.Arbitrary<Session> = fc.record({ prelude: preludeArb, revocable: fc.integer({ min: 0, max: 2 }).map((n) => n === 0), units: fc.array(unitArb, { minLength: 1, maxLength: 6 }) });

/** Not the session's key: the respellings an attacker tries. */
function wrongKey(key: string, spelling: number): string {
  return [`sk_${'a'.repeat(40)}`, project.publicKey, key.toUpperCase(), `${key}x`, key.slice(0, -1), ` ${key}`][spelling % 6]!;
}

interface SubModel { authed: boolean; messages: number; open: boolean; key: { id: string; key: string } | undefined; revoked: boolean; done: boolean }

const plain = (key: string) => `AUTH PLAIN ${Buffer.from(`\0fuzz\0${key}`).toString('base64')}`;

async function login(c: SmtpClient, key: string, how: 'PLAIN' | 'LOGIN'): Promise<void> {
  if (how === 'PLAIN') {
    c.write(`${plain(key)}\r\n`);
  } else {
    c.write('AUTH LOGIN\r\n');
    await expectReply(c, '334', 'AUTH LOGIN');
    c.write(`${Buffer.from('fuzz').toString('base64')}\r\n`);
    await expectReply(c, '334', 'AUTH LOGIN user');
    c.write(`${Buffer.from(key).toString('base64')}\r\n`);
  }
  await expectReply(c, '235', `AUTH ${how}`);
}

/** A submission session over STARTTLS, logged in with the project's key. */
async function authenticated(): Promise<SmtpClient> {
  const c = await SmtpClient.open(submission.port);
  await expectReply(c, '220', 'greeting');
  c.write('EHLO fuzz.example\r\n');
  await expectReply(c, '250', 'EHLO');
  await starttls(c);
  await login(c, project.secretKey, 'PLAIN');
  return c;
}

async function starttls(c: SmtpClient): Promise<void> {
  c.write('STARTTLS\r\n');
  await expectReply(c, '220', 'STARTTLS');
  await c.upgrade();
  c.write('EHLO fuzz.example\r\n');
  await expectReply(c, '250', 'EHLO after STARTTLS');
}

/** MAIL FROM's answer by the model: 421 past the cap (and the connection closes), 530 without AUTH. */
function mailCode(m: SubModel): string {
  if (!m.authed) return '530';
  if (m.messages >= CAP) {
    m.open = false;
    return '421';
  }
  m.messages++;
  return '250';
}

async function runMessage(c: SmtpClient, m: SubModel, u: Extract<Unit, { t: 'message' }>): Promise<void> {
  const mark = newMark();
  const to = recipientsFor(mark, u.rcpts);
  const mail = mailCode(m);
  const lines = ['MAIL FROM:<billing@example.com>', ...to.map((a) => `RCPT TO:<${a}>`), 'DATA'];
  if (u.pipelined && mail !== '530') {
    // RFC 2920: the whole envelope and DATA in one write, the body after the 354.
    c.write(lines.map((l) => `${l}\r\n`).join(''));
    await expectReply(c, mail, 'pipelined MAIL FROM');
    if (mail !== '250') return;
    for (const a of to) await expectReply(c, '250', `pipelined RCPT ${a}`);
    await expectReply(c, '354', 'pipelined DATA');
  } else {
    c.write(`${lines[0]}\r\n`);
    await expectReply(c, mail, 'MAIL FROM');
    if (mail !== '250') return;
    for (const a of to) {
      c.write(`RCPT TO:<${a}>\r\n`);
      await expectReply(c, '250', `RCPT ${a}`);
    }
    c.write('DATA\r\n');
    await expectReply(c, '354', 'DATA');
  }
  c.write(wire(message(u.kind, mark, to, u.noise)));
  const want = finalFor(u.kind);
  const r = await expectReply(c, want.code, `end of DATA of a ${u.kind} message`);
  if (want.text) expect(r).toMatch(want.text);
  sent.push({ mark, kind: u.kind, rcpts: u.rcpts, stored: want.code === '250', reply: r });
}

async function runUnit(c: SmtpClient, m: SubModel, u: Unit): Promise<void> {
  switch (u.t) {
    case 'message': await runMessage(c, m, u); return;
    case 'earlyBody': {
      const mark = newMark();
      const mail = mailCode(m);
      c.write(`MAIL FROM:<billing@example.com>\r\nRCPT TO:<early-${mark}@example.org>\r\nDATA\r\n${wire(message('valid', mark, [`early-${mark}@example.org`], 'early'))}`);
      await expectReply(c, mail, 'MAIL FROM before an early body');
      if (mail === '530') {
        // Not authenticated: every command is refused, the body's lines too (as unknown commands or 530s); the
        // session is ended here (smtp-server closes it after too many).
        sent.push({ mark, kind: 'valid', rcpts: 1, stored: false, reply: undefined });
        m.open = false;
        c.destroy();
        return;
      }
      if (mail !== '250') return;
      await expectReply(c, '250', 'RCPT before an early body');
      await expectReply(c, '354', 'DATA before an early body');
      const r = await expectReply(c, '503', 'content sent before the 354');
      expect(r).toMatch(/before the 354/);
      expect(await c.reply(5000)).toBeUndefined(); // closed
      sent.push({ mark, kind: 'valid', rcpts: 1, stored: false, reply: r });
      m.open = false;
      return;
    }
    case 'revoke': {
      if (!m.key || m.revoked || !m.authed) return;
      count('revoke: a key revoked mid-session');
      expect(await revokeKey(m.key.id)).toBe(true);
      m.revoked = true;
      // The next message: MAIL FROM is taken (the key's fresh look runs beside the dialogue), then refused 530 at
      // its recipient once the look has answered, else at the end of its DATA; nothing is stored.
      const mark = newMark();
      const mail = mailCode(m);
      c.write('MAIL FROM:<billing@example.com>\r\n');
      await expectReply(c, mail, 'MAIL FROM after the revoke');
      if (mail !== '250') return;
      c.write(`RCPT TO:<revoked-${mark}@example.org>\r\n`);
      const rcpt = await c.reply();
      if (code(rcpt) === '530') {
        c.write('DATA\r\n');
        await expectReply(c, '530', 'DATA after the recipient was refused 530');
      } else {
        if (code(rcpt) !== '250') throw new Error(`RCPT after the revoke: expected 250 or 530, got ${rcpt} (SMTP_FUZZ_SEED=${SEED})`);
        c.write('DATA\r\n');
        await expectReply(c, '354', 'DATA after the revoke');
        c.write(wire(message('valid', mark, [`revoked-${mark}@example.org`], 'revoked')));
        await expectReply(c, '530', 'end of DATA after the revoke');
      }
      sent.push({ mark, kind: 'valid', rcpts: 1, stored: false, reply: rcpt });
      m.authed = false;
      // Every later MAIL FROM: 530. (The session ends here: smtp-server cuts a client that keeps sending commands
      // unauthenticated, a limit of its own that this model does not follow.)
      c.write('MAIL FROM:<billing@example.com>\r\n');
      await expectReply(c, '530', 'MAIL FROM once the key is revoked');
      m.done = true;
      return;
    }
    case 'rset':
      c.write('RSET\r\n');
      await expectReply(c, '250', 'RSET');
      return;
    case 'noop':
      c.write('NOOP\r\n');
      await expectReply(c, '250', 'NOOP');
      return;
  }
}

const counts: Record<string, number> = {};
const count = (what: string) => { counts[what] = (counts[what] ?? 0) + 1; };

async function runSession(s: Session): Promise<void> {
  const key = s.revocable ? (await createKey(project.id, 'secret', { name: 'fuzz revocable' }))! : undefined;
  const secret = key?.key ?? project.secretKey;
  const m: SubModel = { authed: false, messages: 0, open: true, key, revoked: false, done: false };
  const c = await SmtpClient.open(submission.port);
  try {
    await expectReply(c, '220', 'greeting');
    c.write('EHLO fuzz.example\r\n');
    await expectReply(c, '250', 'EHLO');
    count(`prelude ${s.prelude.t}`);
    switch (s.prelude.t) {
      case 'tls':
        await starttls(c);
        await login(c, secret, s.prelude.login);
        m.authed = true;
        break;
      case 'authBeforeTls': {
        // AUTH is not offered before STARTTLS; one that comes anyway is refused "encryption required" (RFC 4954).
        c.write(`${plain(secret)}\r\n`);
        await expectReply(c, '538', 'AUTH before STARTTLS');
        await starttls(c);
        await login(c, secret, 'PLAIN');
        m.authed = true;
        break;
      }
      case 'mailBeforeAuth':
        c.write('MAIL FROM:<billing@example.com>\r\n');
        await expectReply(c, '530', 'MAIL FROM before STARTTLS and AUTH');
        await starttls(c);
        c.write('MAIL FROM:<billing@example.com>\r\n');
        await expectReply(c, '530', 'MAIL FROM before AUTH');
        await login(c, secret, 'PLAIN');
        m.authed = true;
        break;
      case 'wrong': {
        count(s.prelude.n >= MAX_AUTH_FAILURES ? 'wrong passwords: cut (421)' : 'wrong passwords: then logged in');
        await starttls(c);
        for (let i = 1; i <= s.prelude.n; i++) {
          c.write(`${plain(wrongKey(secret, s.prelude.spelling + i))}\r\n`);
          // The per-connection cut: the last allowed failure is answered 421 and the connection closed.
          if (i >= MAX_AUTH_FAILURES) {
            await expectReply(c, '421', `wrong password ${i}`);
            expect(await c.reply(5000)).toBeUndefined();
            m.open = false;
            return;
          }
          await expectReply(c, '535', `wrong password ${i}`);
        }
        await login(c, secret, 'PLAIN');
        m.authed = true;
        break;
      }
    }
    for (const u of s.units) {
      if (!m.open || m.done) break;
      if (u.t !== 'revoke') count(u.t === 'message' ? `message ${u.kind}${u.pipelined ? ' (pipelined)' : ''}` : u.t);
      await runUnit(c, m, u);
    }
    if (m.open) {
      c.write('QUIT\r\n');
      await expectReply(c, '221', 'QUIT');
    }
  } finally {
    c.destroy();
  }
}

/** A session through nodemailer, a real client (STARTTLS required, AUTH PLAIN): one message of a kind, or a wrong key. */
async function runNodemailer(kind: Kind, rcpts: number, wrong: boolean, noise: string): Promise<void> {
  const mark = newMark();
  const to = recipientsFor(mark, rcpts);
  const transport = nodemailer.createTransport({
    host: '127.0.0.1', port: submission.port, secure: false, requireTLS: true, tls: { rejectUnauthorized: false },
    auth: { user: 'fuzz', pass: wrong ? wrongKey(project.secretKey, rcpts) : project.secretKey },
  } as SMTPTransport.Options);
  count(wrong ? 'nodemailer wrong key' : `nodemailer ${kind}`);
  const answer = await transport.sendMail({ envelope: { from: 'billing@example.com', to }, raw: Buffer.from(message(kind, mark, to, noise), 'latin1') })
    .then((info) => ({ code: '250', response: info.response }), (err: { responseCode?: number; response?: string; code?: string }) => ({ code: String(err.responseCode ?? err.code), response: err.response ?? '' }));
  const want = wrong ? { code: '535' } : finalFor(kind);
  if (answer.code !== want.code) throw new Error(`nodemailer ${wrong ? 'with a wrong key' : kind}: expected ${want.code}, got ${answer.code} ${answer.response} (SMTP_FUZZ_SEED=${SEED})`);
  if ('text' in want && want.text) expect(answer.response).toMatch(want.text);
  sent.push({ mark, kind, rcpts, stored: answer.code === '250', reply: answer.response });
}

const runArb = fc.oneof(
  { weight: 4, arbitrary: sessionArb.map((s) => ({ t: 'raw' as const, s })) },
  { weight: 1, arbitrary: fc.record({ kind: kindArb, rcpts: fc.integer({ min: 1, max: 3 }), wrong: fc.integer({ min: 0, max: 4 }).map((n) => n === 0), noise: noiseArb }).map((n) => ({ t: 'nodemailer' as const, ...n })) },
);

// ---------------------------------------------------------------- the tests

test('submission: the model\'s reply to every attack and every valid message; each 250 stored exactly once, nothing refused stored', async () => {
  const started = Date.now();
  await fc.assert(fc.asyncProperty(runArb, async (run) => {
    if (run.t === 'raw') await runSession(run.s);
    else await runNodemailer(run.kind, run.rcpts, run.wrong, run.noise);
  }), { seed: SEED, numRuns: RUNS, endOnFailure: true });

  expect(escaped).toEqual([]);
  const stored = sent.filter((s) => s.stored);
  expect(stored.length).toBeGreaterThan(20);
  expect(sent.some((s) => !s.stored)).toBe(true);
  // Each message by its mark: the raw messages that hold it, and the emails on them (one per recipient).
  const rows: { mark: string; raws: number; emails: number; whole: number }[] = (await knex.raw(`
    SELECT s.mark,
           (SELECT count(*)::int FROM raw_messages r WHERE position(convert_to(s.mark, 'UTF8') IN r.content) > 0) AS raws,
           (SELECT count(*)::int FROM emails e WHERE e.project_id = ? AND e.to_email LIKE '%' || s.mark || '@example.org') AS emails,
           (SELECT count(*)::int FROM emails e JOIN raw_messages r ON r.id = e.raw_message_id
             WHERE e.project_id = ? AND e.to_email LIKE '%' || s.mark || '@example.org' AND position(convert_to(s.mark, 'UTF8') IN r.content) > 0
               AND e.status = 'QUEUED' AND e.from_email = 'billing@example.com') AS whole
    FROM unnest(?::text[]) AS s(mark)`, [project.id, project.id, sent.map((s) => s.mark)])).rows;
  const byMark = new Map(rows.map((r) => [r.mark, r]));
  for (const s of sent) {
    const got = byMark.get(s.mark)!;
    const n = s.stored ? s.rcpts : 0;
    expect({ mark: s.mark, kind: s.kind, reply: s.reply, raws: got.raws, emails: got.emails, whole: got.whole })
      .toEqual({ mark: s.mark, kind: s.kind, reply: s.reply, raws: s.stored ? 1 : 0, emails: n, whole: n });
  }
  // Nothing else was stored: the emails of the project are exactly those of the 250s.
  const total = await knex('emails').where({ project_id: project.id }).count('* as n').first();
  expect(Number(total?.n)).toBe(stored.reduce((a, s) => a + s.rcpts, 0));
  process.stdout.write(`SMTP submission fuzz (seed ${SEED}): ${RUNS} runs, ${sent.length} messages (${stored.length} stored) in ${Date.now() - started} ms\n${
    Object.entries(counts).sort().map(([k, v]) => `  ${k}: ${v}`).join('\n')}\n`);
}, 120_000);

// ---------------------------------------------------------------- the bounce listener

type Spelling = { t: 'canonical' } | { t: 'upperDomain' } | { t: 'respelt'; kind: string; i: number } | { t: 'unknownEmail' };
type Report = 'hard' | 'soft' | 'unknownStatus' | 'notReport' | 'noStatus' | 'nul' | 'deepMime' | 'hugeHeader';
interface Delivery { email: number; spelling: Spelling; report: Report; pipelined: boolean }

const RESPELLINGS = ['one extra character', 'last-character variants', 'upper case', 'another domain'];
const deliveryArb: fc.Arbitrary<Delivery> = fc.record({
  email: fc.nat(9),
  spelling: fc.oneof(
    { weight: 6, arbitrary: fc.constant<Spelling>({ t: 'canonical' }) },
    { weight: 1, arbitrary: fc.constant<Spelling>({ t: 'upperDomain' }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constantFrom(...RESPELLINGS), i: fc.nat(40) }).map((r) => ({ t: 'respelt' as const, ...r })) },
    { weight: 1, arbitrary: fc.constant<Spelling>({ t: 'unknownEmail' }) },
  ),
  report: fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom<Report>('hard', 'soft', 'unknownStatus') },
    { weight: 4, arbitrary: fc.constantFrom<Report>('notReport', 'noStatus', 'nul', 'deepMime') },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: 2 }).map((n): Report => (n === 0 ? 'hugeHeader' : 'nul')) },
  ),
  pipelined: fc.boolean(),
});
const bounceSessionArb = fc.record({ tls: fc.boolean(), deliveries: fc.array(deliveryArb, { minLength: 1, maxLength: 8 }) });

function reportMessage(r: Report, recipient: string): Buffer {
  switch (r) {
    case 'hard': return dsn(recipient, 'failed', '5.1.1');
    case 'soft': return dsn(recipient, 'delayed', '4.2.2');
    case 'unknownStatus': return dsn(recipient, 'failed', '9.9.9');
    case 'notReport': return Buffer.from('From: someone@example.org\r\nSubject: Out of office\r\n\r\nI am away.\r\n');
    case 'noStatus': return Buffer.from('From: MAILER-DAEMON@mx.example.org\r\nContent-Type: multipart/report; boundary=x\r\n\r\n--x\r\nContent-Type: text/plain\r\n\r\nno status\r\n--x--\r\n');
    case 'nul': return Buffer.from(dsn(recipient, 'failed', '5.1.1').toString().replace('mailbox', 'mail\0box'));
    case 'deepMime': return Buffer.from(`From: MAILER-DAEMON@mx.example.org\r\n${nested(300)}`);
    case 'hugeHeader': return Buffer.concat([Buffer.from(`X-Filler: ${'a'.repeat(2.1 * 1024 * 1024)}\r\n`), dsn(recipient, 'failed', '5.1.1')]);
  }
}

test('bounce listener: canonical tokens counted once per email, respelt ones refused, unreadable DSNs 554, state as the model says', async () => {
  const started = Date.now();
  // Ten emails to bounce: one message to ten recipients through the submission listener (an email each), then
  // marked delivered (this test has no engine).
  const c = await authenticated();
  const tos = Array.from({ length: 10 }, (_, i) => `bounce-${i}@example.org`);
  c.write(`MAIL FROM:<billing@example.com>\r\n${tos.map((to) => `RCPT TO:<${to}>\r\n`).join('')}DATA\r\n`);
  for (const what of ['MAIL FROM', ...tos]) await expectReply(c, '250', what);
  await expectReply(c, '354', 'DATA');
  c.write(wire(`From: billing@example.com\r\nTo: ${tos.join(', ')}\r\nSubject: to bounce\r\n\r\nhi\r\n`));
  const queued = await expectReply(c, '250', 'end of DATA');
  c.destroy();
  const ids = queued!.replace(/^250 2\.0\.0 Queued as /, '').split(', ');
  const emails0 = await knex('emails').whereIn('id', ids).orderBy('to_email').select('id', 'to_email');
  expect(emails0.map((e) => e.to_email)).toEqual([...tos].sort());
  ids.sort((x, y) => tos.indexOf(emails0.find((e) => e.id === x)!.to_email) - tos.indexOf(emails0.find((e) => e.id === y)!.to_email));
  await knex('emails').whereIn('id', ids).update({ status: 'SENT' });
  const canonical = ids.map((id) => bounceAddress(TEST_SECRET, id, BOUNCE_DOMAIN));

  const model = ids.map(() => ({ hard: false, soft: false }));
  const bounceCounts: Record<string, number> = {};
  const tally = (what: string) => { bounceCounts[what] = (bounceCounts[what] ?? 0) + 1; };
  await fc.assert(fc.asyncProperty(bounceSessionArb, async (s) => {
    const b = await SmtpClient.open(inbound.port);
    try {
      await expectReply(b, '220', 'greeting');
      b.write('EHLO mta.example\r\n');
      await expectReply(b, '250', 'EHLO');
      if (s.tls) await starttls(b);
      for (const d of s.deliveries) {
        const address = canonical[d.email]!;
        const [local, domain] = address.split('@') as [string, string];
        let to: string;
        switch (d.spelling.t) {
          case 'canonical': to = address; break;
          case 'upperDomain': to = `${local}@${domain.toUpperCase()}`; break;
          case 'unknownEmail': to = bounceAddress(TEST_SECRET, `0190b4d2-0000-7000-8000-${String(d.email).padStart(12, '0')}`, BOUNCE_DOMAIN); break;
          case 'respelt': { const list = variants(address)[d.spelling.kind]!; to = list[d.spelling.i % list.length]!; break; }
        }
        const taken = d.spelling.t !== 'respelt';
        tally(taken ? `${d.spelling.t}: ${d.report}` : `respelt (${(d.spelling as { kind: string }).kind}): refused at RCPT`);
        const lines = ['MAIL FROM:<>', `RCPT TO:<${to}>`, 'DATA'];
        if (d.pipelined) b.write(lines.map((l) => `${l}\r\n`).join(''));
        else b.write(`${lines[0]}\r\n`);
        await expectReply(b, '250', 'MAIL FROM:<>');
        if (!d.pipelined) b.write(`${lines[1]}\r\n`);
        const rcpt = await expectReply(b, taken ? '250' : '550', `RCPT TO:<${to}>`);
        if (!taken) expect(rcpt).toMatch(/^550 5\.1\.1/);
        if (!d.pipelined) b.write('DATA\r\n');
        if (!taken) {
          await expectReply(b, '503', 'DATA without a recipient');
          b.write('RSET\r\n');
          await expectReply(b, '250', 'RSET');
          continue;
        }
        await expectReply(b, '354', 'DATA');
        b.write(wire(reportMessage(d.report, `bounce-${d.email}@example.org`).toString('latin1')));
        // The model: unreadable is 554 5.6.0 for good; a report for a known email is recorded the first time of its kind.
        const m = model[d.email]!;
        if (d.report === 'nul' || d.report === 'deepMime' || d.report === 'hugeHeader') {
          expect(await expectReply(b, '554', `a ${d.report} report`)).toMatch(/^554 5\.6\.0/);
          continue;
        }
        const kind = d.report === 'hard' ? 'hard' : d.report === 'soft' || d.report === 'unknownStatus' ? 'soft' : undefined;
        const records = kind !== undefined && d.spelling.t !== 'unknownEmail' && !m[kind];
        if (records) m[kind!] = true;
        const r = await expectReply(b, '250', `a ${d.report} report to ${d.spelling.t}`);
        expect(r).toMatch(records ? /^250 2\.0\.0 Recorded/ : /^250 2\.0\.0 Received/);
      }
      b.write('QUIT\r\n');
      await expectReply(b, '221', 'QUIT');
    } finally {
      b.destroy();
    }
  }), { seed: SEED + 1, numRuns: BOUNCE_RUNS, endOnFailure: true });

  // Each email's state as the model says: its events (one per kind at most), its status, its suppression.
  const emails = await knex('emails').whereIn('id', ids).select('id', 'status', 'to_email');
  const events: { email_id: string; type: string; n: number }[] = (await knex.raw(
    `SELECT email_id, data->>'type' AS type, count(*)::int AS n FROM events WHERE email_id = ANY(?::uuid[]) AND name = 'email.bounced' GROUP BY 1, 2`, [ids])).rows;
  const suppressed = new Set((await knex('suppressions').where({ project_id: project.id, reason: 'hard_bounce' }).select('email')).map((r) => r.email as string));
  for (const [i, id] of ids.entries()) {
    const m = model[i]!;
    const row = emails.find((e) => e.id === id)!;
    const n = (type: string) => events.find((e) => e.email_id === id && e.type === type)?.n ?? 0;
    expect({ i, status: row.status, hard: n('hard'), soft: n('soft'), suppressed: suppressed.has(row.to_email) })
      .toEqual({ i, status: m.hard ? 'BOUNCED' : 'SENT', hard: m.hard ? 1 : 0, soft: m.soft ? 1 : 0, suppressed: m.hard });
  }
  expect(model.some((m) => m.hard) && model.some((m) => m.soft)).toBe(true);
  expect(escaped).toEqual([]);
  process.stdout.write(`SMTP bounce fuzz (seed ${SEED + 1}): ${BOUNCE_RUNS} sessions in ${Date.now() - started} ms\n${
    Object.entries(bounceCounts).sort().map(([k, v]) => `  ${k}: ${v}`).join('\n')}\n`);
}, 120_000);
