import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import nodemailer from 'nodemailer';
import * as dailyStats from '../../db/migrations/20261201000001_daily_stats';
import { addDomain } from '../../domains/rows';
import { createLogger } from '../../logging/logger';
import { startInbound } from '../../smtp/inbound';
import { smtpTls } from '../../smtp/tls';
import { bearer, TEST_SECRET } from '../support/app';
import { startEndToEnd, type EndToEnd } from '../support/endToEnd';
import { waitForEmails } from '../support/engine';
import { waitFor } from '../support/processes';

/**
 * GET /stats/overview end to end: real sends through the embedded engine to a real SMTP server (sent, refused,
 * refused at RCPT: a hard bounce), a DSN and an ARF report delivered to the inbound listener (bounce, complaint), opens
 * and clicks fetched from the links of the received HTML. The day's counts must be those of the events recorded, which
 * project_daily_stats adds up as they are written (db/queries/events.ts EVENT_EFFECTS).
 */
const BOUNCE_DOMAIN = 'bounces.herald.test';
const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
let e: EndToEnd;
let knex: Knex;
let inbound: { port: number; close(): Promise<void> };
let tlsDir: string;

beforeAll(async () => {
  e = await startEndToEnd({ bounces: { domain: BOUNCE_DOMAIN, settings: { softBounceLimit: 2, softBounceWindowDays: 7 } } });
  knex = e.t.db.knex;
  tlsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-overview-tls-'));
  const tls = await smtpTls({ port: 0, host: undefined, tlsCertFile: undefined, tlsKeyFile: undefined, insecureAuthOnLoopback: false }, tlsDir, createLogger('silent'));
  inbound = await startInbound({ knex, secret: TEST_SECRET, log: createLogger('silent'), settings: { softBounceLimit: 2, softBounceWindowDays: 7 }, bounceDomain: BOUNCE_DOMAIN, port: 0, host: '127.0.0.1', tls, maxBytes: 1024 * 1024 });
}, 60_000);
afterAll(async () => {
  await inbound.close();
  await e.close();
  fs.rmSync(tlsDir, { recursive: true, force: true });
});

const mta = () => nodemailer.createTransport({ host: '127.0.0.1', port: inbound.port, secure: false, tls: { rejectUnauthorized: false } });
const today = () => new Date().toISOString().slice(0, 10);
const overview = (days: number | string, key = e.key) => e.t.http().get(`/stats/overview?days=${days}`).set(key);

function dsn(recipient: string): Buffer {
  return Buffer.from([
    'From: MAILER-DAEMON@mx.example.org', 'Subject: Undelivered Mail Returned to Sender', 'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="B"', '',
    '--B', 'Content-Type: message/delivery-status', '', 'Reporting-MTA: dns; mx.example.org', '',
    `Final-Recipient: rfc822; ${recipient}`, 'Action: failed', 'Status: 5.1.1', `Diagnostic-Code: smtp; 550 5.1.1 <${recipient}>: no mailbox`, '',
    '--B--', '',
  ].join('\r\n'));
}

function arf(recipient: string): Buffer {
  return Buffer.from([
    'From: fbl@mailbox.example', 'Subject: Complaint', 'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=feedback-report; boundary="F"', '',
    '--F', 'Content-Type: message/feedback-report', '', 'Feedback-Type: abuse', 'User-Agent: ExampleFBL/1.0', 'Version: 1', `Original-Rcpt-To: ${recipient}`, '',
    '--F', 'Content-Type: text/rfc822-headers', '', 'From: app@example.com', `To: ${recipient}`, 'Subject: Hi', '',
    '--F--', '',
  ].join('\r\n'));
}

/** Sends one email and waits for its outcome; answers its id and, when the SMTP server took it, what it received. */
async function send(to: string, extra: object = {}) {
  const before = e.smtp.received.length;
  const res = await e.t.http().post('/v1/send').set(e.key)
    .send({ from: 'app@example.com', to, subject: 'Hi', body: '<p>Hi <a href="https://shop.example/a">shop</a></p>', ...extra }).expect(200);
  const id = res.body.data.emails[0].email as string;
  const { status } = (await waitForEmails(e.t.db, [id]))[id]!;
  const mail = status === 'SENT' ? await waitFor('the message at the SMTP server', () => e.smtp.received.slice(before).find((m) => m.envelopeTo.includes(to))) : undefined;
  return { id, status, mail };
}

/** What the events table says of the project's days: the truth the rollup must equal. */
async function countedFromEvents(projectId: string) {
  const { rows } = await knex.raw(
    `SELECT to_char((created_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS day,
            count(*) FILTER (WHERE name = 'email.sent')::int AS sent, count(*) FILTER (WHERE name = 'email.bounced')::int AS bounced,
            count(*) FILTER (WHERE name = 'email.complained')::int AS complained, count(*) FILTER (WHERE name = 'email.opened')::int AS opened,
            count(*) FILTER (WHERE name = 'email.clicked')::int AS clicked, count(*) FILTER (WHERE name = 'email.failed')::int AS failed
     FROM events WHERE project_id = ? GROUP BY 1 ORDER BY 1`, [projectId]);
  return rows as Record<string, number | string>[];
}

test('the day’s series counts real sends, failures, bounces, complaints, opens and clicks, as the events record them', async () => {
  // Sent, then opened and clicked from the received HTML (tracking on).
  const read = await send('reader@example.org', { track: { opens: true, clicks: true } });
  const html = read.mail!.parsed.html as string;
  const pixel = /<img\b[^>]*?\ssrc="([^"]*)"/.exec(html)![1]!;
  const link = /<a\b[^>]*?\shref="(http:\/\/herald\.test\/t\/c\/[^"]*)"/.exec(html)![1]!;
  await e.t.http().get(new URL(pixel).pathname).set('User-Agent', BROWSER).expect(200);
  await e.t.http().get(new URL(link).pathname).set('User-Agent', BROWSER).redirects(0).expect(302);
  // Refused at DATA: failed. Refused at RCPT: failed, and a hard bounce.
  e.smtp.script([{ code: 550, message: 'Message refused' }]);
  expect((await send('refused@example.org')).status).toBe('FAILED');
  e.smtp.unknownUsers.add('nobody@example.org');
  expect((await send('nobody@example.org')).status).toBe('BOUNCED');
  // Sent, then bounced later (a DSN to its VERP address); sent, then complained about (ARF).
  const later = await send('gone@example.org');
  await mta().sendMail({ envelope: { from: '', to: [later.mail!.envelopeFrom] }, raw: dsn('gone@example.org') });
  const angry = await send('angry@example.org');
  await mta().sendMail({ envelope: { from: '', to: [angry.mail!.envelopeFrom] }, raw: arf('angry@example.org') });

  const res = await overview(7);
  expect(res.status).toBe(200);
  const o = res.body.data;
  expect(o).toMatchObject({ days: 7, to: today() });
  expect(o.series).toHaveLength(7);
  expect(o.series.map((d: { day: string }) => d.day)).toEqual(
    Array.from({ length: 7 }, (_, i) => new Date(Date.parse(`${today()}T00:00:00Z`) - (6 - i) * 86_400_000).toISOString().slice(0, 10)));
  expect(o.from).toBe(o.series[0].day);
  // Every earlier day is filled with zeros; today has what happened.
  for (const d of o.series.slice(0, 6)) expect(d).toEqual({ day: d.day, sent: 0, bounced: 0, complained: 0, opened: 0, clicked: 0, failed: 0 });
  expect(o.series[6]).toEqual({ day: today(), sent: 3, bounced: 2, complained: 1, opened: 1, clicked: 1, failed: 2 });
  expect(o.totals).toEqual({ sent: 3, bounced: 2, complained: 1, opened: 1, clicked: 1, failed: 2 });
  // The rollup is exactly what the events table counts.
  expect(await countedFromEvents(e.t.project.id)).toEqual([o.series[6]]);
  // 30 and 90 days: the same today, longer zero-filled windows.
  for (const days of [30, 90]) {
    const longer = (await overview(days)).body.data;
    expect(longer.series).toHaveLength(days);
    expect(longer.series[days - 1]).toEqual(o.series[6]);
  }
}, 90_000);

test('the queue: depth and the age of the oldest queued email of the project; zero when empty', async () => {
  await waitFor('an empty queue', async () => ((await overview(7)).body.data.queue.depth === 0 ? true : undefined));
  expect((await overview(7)).body.data.queue).toEqual({ depth: 0, depthExact: true, oldestAgeSeconds: 0 });
  await e.smtp.pause();
  let sent: { body: { data: { emails: { email: string }[] } } };
  try {
    sent = await e.t.http().post('/v1/send').set(e.key).send({ from: 'app@example.com', to: ['q1@example.org', 'q2@example.org'], subject: 'Hi', body: '<p>x</p>' }).expect(200);
    // Each attempt fails (the port is closed) and puts its email back QUEUED for a while; an email a worker holds for an
    // attempt (SENDING) is not waiting, so the depth is 1 or 2 depending on the moment.
    const queue = await waitFor('a queued email older than a second', async () => {
      const q = (await overview(7)).body.data.queue;
      return q.depth >= 1 && q.oldestAgeSeconds >= 1 ? q : undefined;
    }, 20_000, 100);
    expect(queue.depth).toBeLessThanOrEqual(2);
    expect(queue.depthExact).toBe(true);
    expect(queue.oldestAgeSeconds).toBeLessThan(60);
    // Another project's queue is its own.
    const other = await e.t.newProject('Overview, quiet project');
    expect((await overview(7, bearer(other.secretKey))).body.data.queue).toEqual({ depth: 0, depthExact: true, oldestAgeSeconds: 0 });
  } finally {
    await e.smtp.resume();
  }
  await waitForEmails(e.t.db, sent.body.data.emails.map((x: { email: string }) => x.email));
}, 90_000);

test('domains needing attention: not verified, failed, or a record failing, with why; a healthy one is not listed', async () => {
  const p = await e.t.newProject('Overview domains');
  const key = bearer(p.secretKey);
  await addDomain(p.id, 'healthy-shop.com', true);
  const pending = await e.t.http().post('/domains').set(key).send({ domain: 'pending-shop.com' }).expect(201);
  const failed = await e.t.http().post('/domains').set(key).send({ domain: 'failed-shop.com' }).expect(201);
  await knex('domains').where({ id: failed.body.data.id }).update({ status: 'FAILED', records: { DKIM: 'FAILED', SPF: 'VERIFIED', DMARC: 'FAILED' }, checked_at: new Date() });
  const spf = await addDomain(p.id, 'nospf-shop.com', true);
  await knex('domains').where({ project_id: p.id, domain: 'nospf-shop.com' }).update({ records: { DKIM: 'VERIFIED', SPF: 'FAILED' } });
  expect(spf).toBeDefined();

  const { domains } = (await overview(30, key)).body.data;
  const byName = Object.fromEntries(domains.map((d: { domain: string }) => [d.domain, d]));
  expect(Object.keys(byName).sort()).toEqual(['failed-shop.com', 'nospf-shop.com', 'pending-shop.com']);
  expect(byName['pending-shop.com']).toMatchObject({ id: pending.body.data.id, status: 'PENDING', checkedAt: null, issues: [{ code: 'NOT_VERIFIED', record: null }] });
  expect(byName['failed-shop.com'].issues.map((i: { code: string; record: string | null }) => [i.code, i.record]))
    .toEqual([['VERIFICATION_FAILED', null], ['RECORD_FAILING', 'DKIM'], ['RECORD_FAILING', 'DMARC']]);
  expect(byName['failed-shop.com'].checkedAt).toEqual(expect.any(String));
  expect(byName['nospf-shop.com']).toMatchObject({ status: 'VERIFIED', issues: [{ code: 'RECORD_FAILING', record: 'SPF', message: expect.stringContaining('SPF') }] });
  // The project's days are its own: nothing was sent from it.
  expect((await overview(30, key)).body.data.totals).toEqual({ sent: 0, bounced: 0, complained: 0, opened: 0, clicked: 0, failed: 0 });
});

test('days is 7, 30 or 90 (30 when left out); anything else is a 400 naming it', async () => {
  expect((await e.t.http().get('/stats/overview').set(e.key)).body.data.series).toHaveLength(30);
  for (const bad of ['8', '0', 'week', '-7']) {
    const res = await overview(bad);
    expect(res.status).toBe(400);
    expect(res.body.error.errors[0].field).toBe('days');
  }
  expect((await e.t.http().get('/stats/overview')).status).toBe(401);
});

test('the migration’s backfill counts the events already recorded, per project and UTC day', async () => {
  const before = await knex('project_daily_stats').where({ project_id: e.t.project.id }).groupBy('day').orderBy('day')
    .select(knex.raw("to_char(day, 'YYYY-MM-DD') AS day"), ...['sent', 'bounced', 'complained', 'opened', 'clicked', 'failed'].map((c) => knex.raw(`sum(${c})::int AS ${c}`)));
  expect(before.length).toBeGreaterThan(0);
  // An event of another day, written before the rollup existed: only the backfill knows it.
  const yesterday = new Date(Date.now() - 86_400_000);
  await dailyStats.down(knex);
  await knex('events').insert({ project_id: e.t.project.id, name: 'email.opened', data: {}, created_at: yesterday });
  await dailyStats.up(knex);
  expect(await countedFromEvents(e.t.project.id)).toEqual(await knex('project_daily_stats').where({ project_id: e.t.project.id }).groupBy('day').orderBy('day')
    .select(knex.raw("to_char(day, 'YYYY-MM-DD') AS day"), ...['sent', 'bounced', 'complained', 'opened', 'clicked', 'failed'].map((c) => knex.raw(`sum(${c})::int AS ${c}`))));
  const o = (await overview(7)).body.data;
  expect(o.series[5]).toMatchObject({ day: yesterday.toISOString().slice(0, 10), opened: 1 });
  expect(o.series[6]).toEqual({ day: before.at(-1).day, ...Object.fromEntries(Object.entries(before.at(-1)).filter(([k]) => k !== 'day')) });
});
