import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import nodemailer from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport';
import { bounceAddress } from '../../bounces/token';
import { createLogger } from '../../logging/logger';
import { createSender } from '../../sending/sender';
import { startInbound } from '../../smtp/inbound';
import { addressKey } from '../../core/addresses';
import type { ListenerLimits, Listening } from '../../smtp/listener';
import { startSubmission } from '../../smtp/submission';
import { smtpTls } from '../../smtp/tls';
import { TEST_SECRET, testAppDeps } from '../support/app';
import { startEndToEnd, type EndToEnd } from '../support/endToEnd';

/**
 * Issue 26, point 1: one client cannot hold the SMTP ports. Both listeners (submission and inbound), with small limits:
 * an attacker (raw sockets from 127.0.0.1) holds as many connections as one address may, and a real client (nodemailer
 * from 127.0.0.2: Linux routes all of 127/8 to lo) still gets in and sends; a client that dribbles a command is cut at
 * the command deadline, one that dribbles a message body (or keeps sending NOOPs) at the session deadline.
 */

const BOUNCE_DOMAIN = 'bounces.herald.test';
const log = createLogger('silent');
let e2e: EndToEnd;
let tls: { key: Buffer; cert: Buffer };
let tlsDir: string;
const started: Listening[] = [];

beforeAll(async () => {
  e2e = await startEndToEnd();
  tlsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-listeners-tls-'));
  tls = await smtpTls({ port: 0, host: undefined, tlsCertFile: undefined, tlsKeyFile: undefined, insecureAuthOnLoopback: false }, tlsDir, log);
});
afterAll(async () => {
  await Promise.all(started.map((s) => s.close()));
  await e2e.close();
  fs.rmSync(tlsDir, { recursive: true, force: true });
});

type Options = { limits: Partial<ListenerLimits>; maxClients?: number; socketTimeoutMs?: number };

async function submission(o: Options): Promise<Listening> {
  const knex = e2e.t.db.knex;
  const s = await startSubmission({ knex, sender: createSender(knex, testAppDeps(knex)), log, port: 0, host: '127.0.0.1', tls, insecureAuthOnLoopback: true, ratePerMinute: 100_000, ...o });
  started.push(s);
  return s;
}

async function inbound(o: Options): Promise<Listening> {
  const s = await startInbound({ knex: e2e.t.db.knex, secret: TEST_SECRET, log, settings: { softBounceLimit: 3, softBounceWindowDays: 7 }, bounceDomain: BOUNCE_DOMAIN, port: 0, host: '127.0.0.1', tls, ...o });
  started.push(s);
  return s;
}

/** A raw client: what the server wrote, and when (ms after connecting) the connection closed. */
interface Raw {
  socket: net.Socket;
  said(): string;
  waitFor(pattern: RegExp | ((said: string) => boolean), ms?: number): Promise<void>;
  closedAt: Promise<number>;
}

function raw(port: number, localAddress = '127.0.0.1'): Promise<Raw> {
  const start = Date.now();
  const socket = net.connect({ port, host: '127.0.0.1', localAddress });
  let text = '';
  socket.on('data', (d) => { text += d.toString(); });
  socket.on('error', () => undefined);
  const closedAt = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now() - start)));
  const waitFor = (pattern: RegExp | ((said: string) => boolean), ms = 5000) => new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => { clearInterval(poll); reject(new Error(`no ${String(pattern)} within ${ms} ms; got ${JSON.stringify(text)}`)); }, ms);
    const poll = setInterval(() => {
      if (!(typeof pattern === 'function' ? pattern(text) : pattern.test(text))) return;
      clearInterval(poll);
      clearTimeout(timer);
      resolve();
    }, 10);
  });
  return waitFor(/^(220|421) /m).then(() => ({ socket, said: () => text, waitFor, closedAt }));
}

/** Waits for the connection to close; fails when it is still open after `ms`. */
async function closedWithin(r: Raw, ms: number): Promise<number> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      r.closedAt,
      new Promise<number>((_, reject) => { timer = setTimeout(() => reject(new Error(`still connected after ${ms} ms; the server said ${JSON.stringify(r.said())}`)), ms); }),
    ]);
  } finally {
    clearTimeout(timer);
    r.socket.destroy();
  }
}

/** Opens `n` raw connections from 127.0.0.1 at once: how many were greeted (held) and how many got 421. */
async function flood(port: number, n: number): Promise<{ held: Raw[]; refused: number }> {
  const all = await Promise.all(Array.from({ length: n }, () => raw(port)));
  const held = all.filter((r) => r.said().startsWith('220'));
  for (const r of all) if (!r.said().startsWith('220')) r.socket.destroy();
  return { held, refused: all.filter((r) => r.said().startsWith('421')).length };
}

const realClient = (port: number, extra: Partial<SMTPTransport.Options> = {}) => nodemailer.createTransport({
  host: '127.0.0.1', port, secure: false, localAddress: '127.0.0.2', tls: { rejectUnauthorized: false }, ...extra,
} as SMTPTransport.Options);

const limits = { maxConnectionsPerAddress: 5, sessionTimeoutMs: 60_000, commandTimeoutMs: 60_000 };

test('the per-address key: an IPv4 address as it is, IPv4-mapped IPv6 as IPv4, IPv6 by its /64', () => {
  expect(addressKey('192.0.2.7')).toBe('192.0.2.7');
  expect(addressKey('::ffff:192.0.2.7')).toBe('192.0.2.7');
  expect(addressKey('2001:db8:0:1::5')).toBe('2001:db8:0:1::/64');
  expect(addressKey('2001:0db8:0000:0001:ffff:1:2:3')).toBe('2001:db8:0:1::/64');
  expect(addressKey('::1')).toBe('0:0:0:0::/64');
});

test('submission: an attacker from one address holds at most its share; a real client from another gets in and sends', async () => {
  const s = await submission({ limits, maxClients: 10 });
  const { held, refused } = await flood(s.port, 50);
  try {
    // Before: the first 10 took every slot (maxClients) and the rest, the real client too, got 421.
    expect({ held: held.length, refused }).toEqual({ held: 5, refused: 45 });
    const refusal = await raw(s.port);
    expect(refusal.said()).toMatch(/^421 .*Too many connections from your address \(at most 5\)/);
    expect(await closedWithin(refusal, 2000)).toBeLessThan(2000);
    const info = await realClient(s.port, { requireTLS: true, auth: { user: 'app', pass: e2e.t.project.secretKey } })
      .sendMail({ from: 'real@example.com', to: 'beside-the-flood@example.org', subject: 'in', text: 'x' });
    expect(info.response).toMatch(/^250 2\.0\.0 Queued as /);
  } finally {
    for (const r of held) r.socket.destroy();
  }
  // The attacker's slots are its own again once its connections close.
  await new Promise((r) => setTimeout(r, 100));
  const again = await flood(s.port, 5);
  expect(again.held).toHaveLength(5);
  for (const r of again.held) r.socket.destroy();
});

test('inbound: an attacker from one address holds at most its share; a real MTA from another delivers a report', async () => {
  const s = await inbound({ limits, maxClients: 10 });
  const { held, refused } = await flood(s.port, 50);
  try {
    expect({ held: held.length, refused }).toEqual({ held: 5, refused: 45 });
    const to = bounceAddress(TEST_SECRET, '0190b4d2-0000-7000-8000-00000000abcd', BOUNCE_DOMAIN);
    const info = await realClient(s.port).sendMail({ envelope: { from: '', to: [to] }, raw: 'From: MAILER-DAEMON@mx.example.org\r\nSubject: x\r\n\r\nnot a report\r\n' });
    expect(info.response).toMatch(/^250 /);
  } finally {
    for (const r of held) r.socket.destroy();
  }
});

describe.each([
  ['submission', submission, ['EHLO dribbler.example', 'AUTH PLAIN <key>', 'MAIL FROM:<a@example.com>', 'RCPT TO:<b@example.org>', 'DATA']],
  ['inbound', inbound, ['EHLO dribbler.example', 'MAIL FROM:<>', `RCPT TO:<${bounceAddress(TEST_SECRET, '0190b4d2-0000-7000-8000-00000000abcd', BOUNCE_DOMAIN)}>`, 'DATA']],
] as const)('%s deadlines', (_name, start, dialogue) => {
  const deadlines = { maxConnectionsPerAddress: 50, sessionTimeoutMs: 1500, commandTimeoutMs: 600 };

  test('a command dribbled a byte at a time is cut at the command deadline (the idle timeout never fires)', async () => {
    const s = await start({ limits: deadlines, socketTimeoutMs: 1000 });
    const r = await raw(s.port);
    // The deadline runs from the server's reply, which this side hears later (a CI run heard it 100 ms later and saw
    // the cut 500 ms after hearing it): timed from before the command, the cut can only come 600 ms or more after.
    const from = Date.now();
    r.socket.write('EHLO dribbler.example\r\n');
    await r.waitFor(/^250 /m);
    let i = 0;
    const line = 'MAIL FROM:<slow@example.org>';
    const drip = setInterval(() => r.socket.write(line[i++ % line.length]!), 100);
    try {
      await closedWithin(r, 5000);
    } finally {
      clearInterval(drip);
    }
    const cutAfter = Date.now() - from;
    expect(r.said()).toMatch(/^421 .*Command time limit/m);
    expect(cutAfter).toBeGreaterThanOrEqual(595);
    expect(cutAfter).toBeLessThan(1400); // the command deadline, well before the session's
  });

  test('a message body dribbled a byte at a time is cut at the session deadline', async () => {
    const s = await start({ limits: deadlines, socketTimeoutMs: 1000 });
    const r = await raw(s.port);
    const replies = (said: string) => said.match(/^\d{3} /gm)?.length ?? 0;
    for (const [i, command] of dialogue.entries()) {
      const plain = Buffer.from(`\0app\0${e2e.t.project.secretKey}`).toString('base64');
      r.socket.write(`${command.replace('<key>', plain)}\r\n`);
      await r.waitFor((said) => replies(said) >= i + 2); // the greeting, then one reply per command
    }
    const codes = r.said().trim().split('\r\n').filter((l) => /^\d{3} /.test(l)).map((l) => l.slice(0, 3));
    expect(codes).toEqual([...dialogue.map(() => expect.stringMatching(/^2/)), '354']); // the greeting, EHLO, (AUTH,) MAIL, RCPT: all taken
    const drip = setInterval(() => r.socket.write('x'), 100);
    let closedAt: number;
    try {
      closedAt = await closedWithin(r, 5000);
    } finally {
      clearInterval(drip);
    }
    expect(r.said()).toMatch(/^421 .*Session time limit/m);
    expect(closedAt).toBeGreaterThanOrEqual(1450);
    expect(closedAt).toBeLessThan(2500);
  });

  test('a client that keeps sending NOOP (each command on time) is cut at the session deadline', async () => {
    const s = await start({ limits: deadlines, socketTimeoutMs: 1000 });
    const r = await raw(s.port);
    const noop = setInterval(() => r.socket.write('NOOP\r\n'), 200);
    let closedAt: number;
    try {
      closedAt = await closedWithin(r, 5000);
    } finally {
      clearInterval(noop);
    }
    expect(r.said()).toMatch(/^421 .*Session time limit/m);
    expect(closedAt).toBeGreaterThanOrEqual(1450);
    expect(closedAt).toBeLessThan(2500);
  });
});
