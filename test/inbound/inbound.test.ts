import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import nodemailer from 'nodemailer';
import { emailToken } from '../../bounces/token';
import { authenticator } from '../../inbound/auth';
import { replyAddressFor } from '../../inbound/replyAddress';
import { pruneInbound } from '../../inbound/messages';
import { inboundReceiver, type InboundReceiver } from '../../inbound/receive';
import { createLogger } from '../../logging/logger';
import { startInbound } from '../../smtp/inbound';
import type { Listening } from '../../smtp/listener';
import { smtpTls } from '../../smtp/tls';
import { bearer, TEST_SECRET } from '../support/app';
import { startDnsServer, type TestDnsServer } from '../support/dns';
import { startEndToEnd, type EndToEnd } from '../support/endToEnd';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhookReceiver';

/**
 * Inbound mail (issue 31) end to end on the embedded engine: an inbound domain verified by its MX on a loopback DNS
 * server, routes, nodemailer delivering to the inbound listener, the message parsed and stored, `email.received`
 * delivered by the webhook queue to a real receiver that verifies it with standardwebhooks, then read back through
 * GET /inbound/:id, its raw bytes and attachments (by key and by the payload's signed links).
 */

const MX_HOST = 'mx.herald.test';
const DOMAIN = 'in.acme-widgets.com';
let e2e: EndToEnd;
let knex: Knex;
let dns: TestDnsServer;
let hooks: WebhookReceiver;
let listener: Listening;
let tlsDir: string;
let receiver: InboundReceiver;
const savedDns = process.env.DNS_SERVERS;

beforeAll(async () => {
  dns = await startDnsServer();
  // The app's services read DNS_SERVERS when built: the domain checks ask the loopback server.
  process.env.DNS_SERVERS = dns.address;
  e2e = await startEndToEnd({ outboundWebhooks: { http: { allowPrivate: ['127.0.0.1'], timeoutMs: 2000, maxResponseBytes: 1024 } } });
  knex = e2e.t.db.knex;
  hooks = await startWebhookReceiver();
  tlsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-inbound-tls-'));
  const log = createLogger('silent');
  const tls = await smtpTls({ port: 0, host: undefined, tlsCertFile: undefined, tlsKeyFile: undefined, insecureAuthOnLoopback: false }, tlsDir, log);
  receiver = inboundReceiver({ knex, secret: TEST_SECRET, publicUrl: 'http://herald.test', authenticate: authenticator({ servers: [dns.address], timeoutMs: 300, tries: 1, verifyBudgetMs: 300, domainCheckIntervalMinutes: 60 }, MX_HOST) });
  listener = await startInbound({ knex, secret: TEST_SECRET, log, settings: { softBounceLimit: 3, softBounceWindowDays: 7 }, bounceDomain: 'bounces.herald.test', port: 0, host: '127.0.0.1', tls,
    maxBytes: 256 * 1024, receiver, maxRecipients: 5 });
});
afterAll(async () => {
  await listener.close();
  await hooks.close();
  await e2e.close();
  await dns.close();
  fs.rmSync(tlsDir, { recursive: true, force: true });
  if (savedDns === undefined) delete process.env.DNS_SERVERS;
  else process.env.DNS_SERVERS = savedDns;
});

const http = () => e2e.t.http();
const mta = () => nodemailer.createTransport({ host: '127.0.0.1', port: listener.port, secure: false, tls: { rejectUnauthorized: false } });

async function waitFor<T>(what: string, check: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One SMTP session by hand: each line sent after the previous reply; answers the replies. */
async function session(lines: string[]): Promise<string[]> {
  const socket = net.connect({ port: listener.port, host: '127.0.0.1' });
  let buffer = '';
  const replies: string[] = [];
  let wake: (() => void) | undefined;
  socket.on('data', (d) => {
    buffer += d.toString();
    wake?.();
  });
  const next = async () => {
    for (;;) {
      const m = /^(\d{3}) .*\r\n/m.exec(buffer);
      if (m) {
        const end = m.index + m[0].length;
        const reply = buffer.slice(0, end);
        buffer = buffer.slice(end);
        return reply.trim().split('\r\n').pop()!;
      }
      await new Promise<void>((r) => { wake = r; });
    }
  };
  await next(); // greeting
  for (const line of lines) {
    socket.write(`${line}\r\n`);
    if (line === 'DATA' || !line.startsWith('\u0000')) replies.push(await next());
  }
  socket.destroy();
  return replies;
}

let domainId: string;
let mxValue: string;
let ownTxt: string;
let endpoint: { id: string; secret: string };
let webhookRoute: string;

describe('inbound domains and routes', () => {
  test('a domain shows its MX and ownership records; VERIFIED needs both; a foreign id is a 404', async () => {
    const made = await http().post('/inbound/domains').set(e2e.key).send({ domain: ` ${DOMAIN.toUpperCase()}. ` });
    expect(made.status).toBe(201);
    expect(made.body.data).toMatchObject({ domain: DOMAIN, status: 'PENDING', verifiedAt: null, records: [
      { type: 'MX', name: DOMAIN, value: expect.stringMatching(/^10 /), status: 'PENDING' },
      { type: 'TXT', name: `_herald.${DOMAIN}`, value: expect.stringMatching(/^herald-inbound=[\w-]{22}$/), status: 'PENDING' },
    ] });
    domainId = made.body.data.id;
    mxValue = made.body.data.records[0].value.slice(3);
    ownTxt = made.body.data.records[1].value;
    expect((await http().post('/inbound/domains').set(e2e.key).send({ domain: DOMAIN })).status).toBe(409);

    const verify = async () => (await http().post(`/inbound/domains/${domainId}/verify`).set(e2e.key)).body.data;
    dns.set(DOMAIN, { MX: ['mx.elsewhere.example'] });
    expect(await verify()).toMatchObject({ status: 'FAILED', records: [{ status: 'FAILED' }, { status: 'FAILED' }] });
    // The MX alone proves nothing: anyone can point an MX at Herald.
    dns.set(DOMAIN, { MX: [mxValue] });
    expect(await verify()).toMatchObject({ status: 'FAILED', records: [{ status: 'VERIFIED' }, { status: 'FAILED' }] });
    dns.set(`_herald.${DOMAIN}`, { TXT: ['v=spf1 -all', 'herald-inbound=not-this-project'] });
    expect((await verify()).status).toBe('FAILED');
    dns.set(`_herald.${DOMAIN}`, { TXT: ['v=spf1 -all', ownTxt] });
    expect(await verify()).toMatchObject({ status: 'VERIFIED', verifiedAt: expect.any(String), checkedAt: expect.any(String), records: [{ status: 'VERIFIED' }, { status: 'VERIFIED' }] });
    // Each check by an admin is in the audit log, with the domain.
    expect(await knex('audit_log').where({ project_id: e2e.t.project.id, operation: 'verifyInboundDomain', resource_id: domainId }).count('* as n').first()).toEqual({ n: 4 });

    const other = await e2e.t.newProject('Other');
    expect((await http().get(`/inbound/domains/${domainId}`).set(bearer(other.secretKey))).status).toBe(404);
    expect((await http().post('/inbound/domains').set(e2e.key).send({ domain: 'localhost' })).status).toBe(422);
    const list = await http().get('/inbound/domains').set(e2e.key);
    expect(list.body.data.items.map((d: { domain: string }) => d.domain)).toEqual([DOMAIN]);
  });

  test('ownership: another project may add the domain but gets it only by publishing its own token; then it takes it over', async () => {
    const other = await e2e.t.newProject('Claimant');
    const theirs = await http().post('/inbound/domains').set(bearer(other.secretKey)).send({ domain: DOMAIN });
    expect(theirs.status).toBe(201);
    const theirTxt = theirs.body.data.records[1].value as string;
    expect(theirTxt).not.toBe(ownTxt);
    const verifyTheirs = async () => (await http().post(`/inbound/domains/${theirs.body.data.id}/verify`).set(bearer(other.secretKey))).body.data;
    // Our token is published, not theirs: the MX is right, the claim fails; the domain stays ours.
    expect(await verifyTheirs()).toMatchObject({ status: 'FAILED', records: [{ status: 'VERIFIED' }, { status: 'FAILED' }] });
    expect((await http().get(`/inbound/domains/${domainId}`).set(e2e.key)).body.data.status).toBe('VERIFIED');

    // The domain's owner publishes the other project's token: it takes the domain over, ours is FAILED at once.
    dns.set(`_herald.${DOMAIN}`, { TXT: [theirTxt] });
    expect((await verifyTheirs()).status).toBe('VERIFIED');
    expect((await http().get(`/inbound/domains/${domainId}`).set(e2e.key)).body.data).toMatchObject({ status: 'FAILED', verifiedAt: null });
    const rows = await knex('inbound_domains').where({ domain: DOMAIN, status: 'VERIFIED' }).select('project_id');
    expect(rows.map((r: { project_id: string }) => r.project_id)).toEqual([other.id]);

    // And back (the later tests receive for this project).
    dns.set(`_herald.${DOMAIN}`, { TXT: [ownTxt] });
    expect((await http().post(`/inbound/domains/${domainId}/verify`).set(e2e.key)).body.data.status).toBe('VERIFIED');
    expect((await http().get(`/inbound/domains/${theirs.body.data.id}`).set(bearer(other.secretKey))).body.data.status).toBe('FAILED');
  });

  test('routes: the match must be at a domain of the project, a webhook route needs an endpoint of the project; PATCH and DELETE', async () => {
    const hook = await http().post('/webhooks').set(e2e.key).send({ url: `${hooks.url}/inbound`, events: ['email.sent'] });
    expect(hook.status).toBe(201);
    endpoint = { id: hook.body.data.id, secret: hook.body.data.secret };

    const bad = async (body: object, field: string) => {
      const res = await http().post('/inbound/routes').set(e2e.key).send(body);
      expect(res.status).toBe(422);
      expect(res.body.error.errors[0].field).toBe(field);
    };
    await bad({ match: 'support@not-ours.example.com', action: 'store' }, 'match');
    await bad({ match: 'sup port@in.acme-widgets.com', action: 'store' }, 'match');
    await bad({ match: `support@${DOMAIN}`, action: 'webhook', endpointId: '0197a12c-7b3e-7f04-a6d8-9c1e3a5b7d60' }, 'endpointId');
    await bad({ match: `support@${DOMAIN}`, action: 'webhook' }, 'endpointId');

    const route = await http().post('/inbound/routes').set(e2e.key).send({ match: `Support@${DOMAIN}`, action: 'webhook', endpointId: endpoint.id, priority: 10 });
    expect(route.status).toBe(201);
    expect(route.body.data).toMatchObject({ match: `support@${DOMAIN}`, kind: 'address', action: 'webhook', endpointId: endpoint.id, priority: 10, domainId });
    webhookRoute = route.body.data.id;
    const tag = await http().post('/inbound/routes').set(e2e.key).send({ match: `reply+*@${DOMAIN}`, action: 'store', priority: 20 });
    expect(tag.body.data).toMatchObject({ kind: 'tag', match: `reply+*@${DOMAIN}` });
    const block = await http().post('/inbound/routes').set(e2e.key).send({ match: `noreply@${DOMAIN}`, action: 'reject', rejectMessage: 'Nobody reads this\r\nX-Injected: yes', priority: 5 });
    expect(block.body.data.rejectMessage).toBe('Nobody reads this X-Injected: yes');
    const all = await http().post('/inbound/routes').set(e2e.key).send({ match: `*@${DOMAIN}`, action: 'store', priority: 1000 });
    const patched = await http().patch(`/inbound/routes/${all.body.data.id}`).set(e2e.key).send({ priority: 999 });
    expect(patched.body.data.priority).toBe(999);
    expect((await http().delete(`/inbound/routes/${all.body.data.id}`).set(e2e.key)).status).toBe(204);
    expect((await http().get(`/inbound/routes/${all.body.data.id}`).set(e2e.key)).status).toBe(404);
    expect((await http().get('/inbound/routes').set(e2e.key)).body.data.total).toBe(3);
  });

  test('GET /inbound/routes answers in the order routes are tried (priority, then oldest first), page after page, even when the last row shown is deleted', async () => {
    const help = (await http().post('/inbound/routes').set(e2e.key).send({ match: `help@${DOMAIN}`, action: 'store', priority: 10 }).expect(201)).body.data;
    const gone = (await http().post('/inbound/routes').set(e2e.key).send({ match: `gone@${DOMAIN}`, action: 'store', priority: 7 }).expect(201)).body.data;
    const pageAfter = async (cursor: string | null) => (await http().get(`/inbound/routes?limit=2${cursor ? `&cursor=${cursor}` : ''}`).set(e2e.key).expect(200)).body.data;
    const first = await pageAfter(null);
    expect(first.items.map((r: { match: string }) => r.match)).toEqual([`noreply@${DOMAIN}`, `gone@${DOMAIN}`]);
    expect(first).toMatchObject({ total: 5, hasMore: true });
    // The row the cursor names is deleted before the next page is asked: the page starts after its place all the same.
    expect((await http().delete(`/inbound/routes/${gone.id}`).set(e2e.key)).status).toBe(204);
    const second = await pageAfter(first.nextCursor);
    // Two routes of priority 10: the older first, as the listener tries them.
    expect(second.items.map((r: { match: string; priority: number }) => [r.match, r.priority])).toEqual([[`support@${DOMAIN}`, 10], [`help@${DOMAIN}`, 10]]);
    const third = await pageAfter(second.nextCursor);
    expect(third.items.map((r: { match: string }) => r.match)).toEqual([`reply+*@${DOMAIN}`]);
    expect(third).toMatchObject({ hasMore: false, nextCursor: null, total: 4 });
    // A cursor this list did not make (another list's, or garbage) is a 400 naming the field.
    const foreign = Buffer.from(`v1:${help.id}`).toString('base64url');
    for (const bad of [foreign, 'bm90LWEtY3Vyc29y']) {
      const res = await http().get(`/inbound/routes?cursor=${bad}`).set(e2e.key);
      expect(res.status).toBe(400);
      expect(res.body.error.errors[0]).toMatchObject({ field: 'cursor', code: 'invalid_cursor' });
    }
    expect((await http().delete(`/inbound/routes/${help.id}`).set(e2e.key)).status).toBe(204);
  });
});

describe('the listener', () => {
  test('unknown recipients and reject routes are refused at RCPT TO; recipients beyond the limit get 452; an oversized SIZE 552', async () => {
    const replies = await session(['EHLO client.example.org', 'MAIL FROM:<ada@example.org>', `RCPT TO:<nobody@${DOMAIN}>`, 'RCPT TO:<x@unknown.example>', `RCPT TO:<noreply@${DOMAIN}>`,
      ...Array.from({ length: 6 }, (_, i) => `RCPT TO:<reply+${i}@${DOMAIN}>`), 'QUIT']);
    expect(replies[2]).toMatch(/^550 5\.1\.1/);
    expect(replies[3]).toMatch(/^550 5\.1\.1/);
    expect(replies[4]).toBe('550 5.7.1 Nobody reads this X-Injected: yes');
    expect(replies.slice(5, 10).every((r) => r.startsWith('250'))).toBe(true);
    expect(replies[10]).toMatch(/^452 4\.5\.3/);
    const big = await session(['EHLO client.example.org', `MAIL FROM:<ada@example.org> SIZE=${10 * 1024 * 1024}`, 'QUIT']);
    expect(big[1]).toMatch(/^552/);
  });

  test('a reply to an email Herald sent: stored, parsed, authenticated, threaded; email.received reaches the route\'s endpoint signed', async () => {
    const sent = await e2e.t.http().post('/v1/send').set(e2e.key).send({ from: 'app@example.com', to: 'grace@example.org', subject: 'Your order', body: '<p>Shipped</p>' }).expect(200);
    const emailId = sent.body.data.emails[0].email as string;
    const contactId = (await knex('emails').where({ id: emailId }).first('contact_id')).contact_id as string;

    const info = await mta().sendMail({
      envelope: { from: 'grace@example.org', to: [`Support@${DOMAIN}`] },
      from: 'Grace Hopper <grace@example.org>', to: `support@${DOMAIN}`, cc: 'ops@example.org', replyTo: 'grace+replies@example.org', subject: 'Re: Your order',
      inReplyTo: `<${emailId}@example.com>`, references: [`<${emailId}@example.com>`], text: 'Thanks, it arrived!', html: '<p>Thanks, it <b>arrived</b>!</p>',
      attachments: [{ filename: 'photo.png', content: Buffer.from('not really a png'), contentType: 'image/png', cid: 'photo1' }, { filename: 'notes.txt', content: 'line 1\nline 2' }],
    });
    expect(info.response).toMatch(/^250 2\.0\.0 Stored/);

    const [delivery] = await waitFor('the signed webhook', async () => {
      // The endpoint wants email.sent only: email.received reaches it because the route names it.
      const got = hooks.verified(endpoint.secret, '/inbound').filter((h) => h.payload.type === 'email.received');
      return got.length ? got : undefined;
    });
    expect(delivery!.payload.type).toBe('email.received');
    const d = delivery!.payload.data as Record<string, unknown> & { attachments: { url: string }[]; inboundId: string; rawUrl: string };
    expect(d).toMatchObject({
      routeId: webhookRoute, recipient: `support@${DOMAIN}`, mailFrom: 'grace@example.org', contactId,
      from: { address: 'grace@example.org', name: 'Grace Hopper' }, cc: [{ address: 'ops@example.org', name: null }], replyTo: [{ address: 'grace+replies@example.org', name: null }],
      subject: 'Re: Your order', text: 'Thanks, it arrived!\n', html: '<p>Thanks, it <b>arrived</b>!</p>\n', bodiesOmitted: false,
      inReplyTo: { emailId, contactId }, inReplyToMessageId: `<${emailId}@example.com>`, warnings: [],
      auth: { spf: { result: expect.any(String) }, dmarc: { result: expect.any(String) }, arc: { result: 'none' }, dkim: [] },
    });
    expect(d.attachments).toEqual([
      expect.objectContaining({ index: 0, filename: 'photo.png', contentType: 'image/png', contentId: '<photo1>', size: 16 }),
      expect.objectContaining({ index: 1, filename: 'notes.txt', contentType: 'text/plain', size: 13 }),
    ]);

    // The message through the API: parsed fields, raw bytes, an attachment; and by the payload's signed links.
    const id = d.inboundId as string;
    const got = await http().get(`/inbound/${id}`).set(e2e.key);
    expect(got.status).toBe(200);
    expect(got.body.data).toMatchObject({ id, subject: 'Re: Your order', text: 'Thanks, it arrived!\n', inReplyTo: { emailId, contactId } });
    expect(got.body.data.headers).toEqual(expect.arrayContaining([{ name: 'Subject', value: 'Re: Your order' }]));
    const raw = await http().get(`/inbound/${id}/raw`).set(e2e.key).buffer(true).parse((res, cb) => { const c: Buffer[] = []; res.on('data', (x: Buffer) => c.push(x)); res.on('end', () => cb(null, Buffer.concat(c))); });
    expect(raw.headers['content-type']).toMatch(/message\/rfc822/);
    expect((raw.body as Buffer).toString()).toContain('Subject: Re: Your order');
    const notes = await http().get(`/inbound/${id}/attachments/1`).set(e2e.key).buffer(true).parse((res, cb) => { const c: Buffer[] = []; res.on('data', (x: Buffer) => c.push(x)); res.on('end', () => cb(null, Buffer.concat(c))); });
    expect((notes.body as Buffer).toString()).toBe('line 1\nline 2');
    expect(notes.headers['content-disposition']).toContain('filename="notes.txt"');
    expect((await http().get(`/inbound/${id}/attachments/7`).set(e2e.key)).status).toBe(404);
    const link = new URL(d.attachments[1]!.url);
    const byLink = await http().get(link.pathname).buffer(true).parse((res, cb) => { const c: Buffer[] = []; res.on('data', (x: Buffer) => c.push(x)); res.on('end', () => cb(null, Buffer.concat(c))); });
    expect(byLink.status).toBe(200);
    expect((byLink.body as Buffer).toString()).toBe('line 1\nline 2');
    expect((await http().get(`${link.pathname.slice(0, -3)}abc`)).status).toBe(404);
    expect((await http().get(new URL(d.rawUrl as string).pathname)).status).toBe(200);

    // Lists and filters; another project sees nothing.
    expect((await http().get(`/inbound?route=${webhookRoute}`).set(e2e.key)).body.data.items.map((m: { id: string }) => m.id)).toEqual([id]);
    expect((await http().get('/inbound?from=grace@example.org').set(e2e.key)).body.data.total).toBe(1);
    expect((await http().get('/inbound?to=nobody@example.org').set(e2e.key)).body.data.total).toBe(0);
    const other = await e2e.t.newProject('Nosy');
    expect((await http().get(`/inbound/${id}`).set(bearer(other.secretKey))).status).toBe(404);
    expect((await http().get('/inbound').set(bearer(other.secretKey))).body.data.total).toBe(0);
  });

  test('a reply to the signed reply address names its email with no In-Reply-To; a forged or foreign token names nothing', async () => {
    const sent = await http().post('/v1/send').set(e2e.key).send({ from: 'app@example.com', to: 'linus@example.org', reply: `reply+*@${DOMAIN}`, subject: 'Your ticket', body: '<p>Reply to this email</p>' }).expect(200);
    const emailId = sent.body.data.emails[0].email as string;
    const contactId = (await knex('emails').where({ id: emailId }).first('contact_id')).contact_id as string;
    // The message goes out with the address signed for this email (GET /emails/:id/raw builds what delivery sends).
    const raw = await http().get(`/emails/${emailId}/raw`).set(e2e.key).buffer(true).parse((res, cb) => { const c: Buffer[] = []; res.on('data', (x: Buffer) => c.push(x)); res.on('end', () => cb(null, Buffer.concat(c))); });
    // (a long header is folded onto the next line)
    const replyTo = /^Reply-To:\s+(\S+)\r?$/m.exec((raw.body as Buffer).toString())?.[1];
    expect(replyTo).toMatch(new RegExp(`^reply\\+[a-z2-7]{42}@${DOMAIN.replace(/\./g, '\\.')}$`));
    expect(replyTo).toBe(replyAddressFor(TEST_SECRET, emailId, `reply+*@${DOMAIN}`));

    const reply = async (to: string) => {
      const info = await mta().sendMail({ from: 'linus@example.org', to, subject: 'Re: Your ticket', text: 'It works now.', headers: { 'In-Reply-To': '<unrelated@elsewhere.example>' } });
      expect(info.response).toMatch(/^250 2\.0\.0 Stored/);
      const [row] = await knex('inbound_messages').where({ recipient: to.toLowerCase() }).orderBy('id', 'desc').limit(1).select('id');
      return (await http().get(`/inbound/${row.id}`).set(e2e.key)).body.data;
    };
    expect(await reply(replyTo!)).toMatchObject({ inReplyTo: { emailId, contactId }, inReplyToMessageId: '<unrelated@elsewhere.example>' });
    // One character changed: a tag like any other, naming nothing.
    const forged = replyTo!.replace(/\+(.)/, (_m, c: string) => `+${c === 'a' ? 'b' : 'a'}`);
    expect(await reply(forged)).toMatchObject({ inReplyTo: null });
    // Another purpose's token for the same email (its bounce address's) names nothing here either.
    expect(await reply(`reply+${emailToken(TEST_SECRET, emailId, 'bounce')}@${DOMAIN}`)).toMatchObject({ inReplyTo: null });
  });

  test('bad input is stored with a warning, never half-written: no From, broken encoding, multiparts nested past the bound; a NUL byte is 554', async () => {
    const before = Number((await knex('inbound_messages').count('* as n'))[0]!.n);
    const noFrom = ['To: reply+abc@in.acme-widgets.com', 'Subject: =?UTF-8?B?////?=', 'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: base64', '', '/////w==', ''].join('\r\n');
    const deep = `From: a@example.org\r\nSubject: deep\r\n${Array.from({ length: 60 }, (_, i) => `Content-Type: multipart/mixed; boundary="b${i}"\r\n\r\n--b${i}\r\n`).join('')}Content-Type: text/plain\r\n\r\nbottom\r\n`;
    for (const body of [noFrom, deep]) {
      const r = await session(['EHLO x.example.org', 'MAIL FROM:<a@example.org>', `RCPT TO:<reply+abc@${DOMAIN}>`, 'DATA', `${body}\r\n.`, 'QUIT']);
      expect(r[4]).toMatch(/^250 2\.0\.0 Stored/);
    }
    const rows = await knex('inbound_messages').orderBy('id', 'desc').limit(2).select('warnings', 'from_address', 'raw_message_id');
    const [deepRow, noFromRow] = rows as { warnings: string[]; from_address: string | null; raw_message_id: string }[];
    expect(noFromRow!.warnings).toEqual(expect.arrayContaining(['The message has no From address', expect.stringMatching(/could not be decoded/)]));
    expect(deepRow!.warnings).toEqual([expect.stringMatching(/could not be parsed as MIME/)]);
    expect(await knex('raw_messages').where({ id: deepRow!.raw_message_id }).first('size')).toBeTruthy();

    const nul = await session(['EHLO x.example.org', 'MAIL FROM:<a@example.org>', `RCPT TO:<reply+abc@${DOMAIN}>`, 'DATA', 'From: a@example.org\r\nSubject: nul\r\n\r\na\u0000b\r\n.', 'QUIT']);
    expect(nul[4]).toMatch(/^554 5\.6\.0/);
    const tooBig = await session(['EHLO x.example.org', 'MAIL FROM:<a@example.org>', `RCPT TO:<reply+abc@${DOMAIN}>`, 'DATA', `From: a@example.org\r\n\r\n${'x'.repeat(300 * 1024)}\r\n.`, 'QUIT']);
    expect(tooBig[4]).toMatch(/^552/);
    expect(Number((await knex('inbound_messages').count('* as n'))[0]!.n)).toBe(before + 2);
  });

  test('group commit: messages ready together are stored by ONE statement; one the database refuses fails alone and the others are stored', async () => {
    const to = await receiver.resolve(`reply+g0@${DOMAIN}`);
    if (to?.kind !== 'route') throw new Error('the reply+* route should take it');
    const envelope = { mailFrom: 'grace@example.org', remoteAddress: '127.0.0.1', helo: 'mail.example.org' };
    const message = (n: number) => Buffer.from(`From: grace@example.org\r\nSubject: batch ${n}\r\n\r\nmessage ${n}\r\n`);
    const statements: string[] = [];
    const count = (q: { sql: string }) => { if (q.sql.includes('INSERT INTO raw_messages')) statements.push(q.sql); };
    knex.on('query', count);
    try {
      const ids = await Promise.all([1, 2, 3, 4].map((n) => receiver.store(message(n), envelope, [{ address: `reply+g${n}@${DOMAIN}`, to }])));
      expect(statements).toHaveLength(1);
      const rows = await knex('inbound_messages').whereIn('id', ids.flat()).orderBy('subject').select('subject', 'recipient');
      expect(rows).toEqual([1, 2, 3, 4].map((n) => ({ subject: `batch ${n}`, recipient: `reply+g${n}@${DOMAIN}` })));
      expect(Number((await knex('events').where('name', 'email.received').whereRaw("data->>'inboundId' = ANY(?)", [ids.flat()]).count('* as n').first())!.n)).toBe(4);

      // A recipient whose project is gone (deleted between RCPT TO and the end of DATA): its message fails, the batch
      // is retried message by message, and the others are stored once each.
      statements.length = 0;
      const gone = { ...to, projectId: '0197a12c-7b3e-7f04-a6d8-9c1e3a5b7d60' };
      const results = await Promise.allSettled([5, 6, 7].map((n) => receiver.store(message(n), envelope, [{ address: `reply+g${n}@${DOMAIN}`, to: n === 6 ? gone : to }])));
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect(statements.length).toBeGreaterThan(1);
      expect((await knex('inbound_messages').whereIn('subject', ['batch 5', 'batch 6', 'batch 7']).orderBy('subject').select('subject')).map((r) => r.subject)).toEqual(['batch 5', 'batch 7']);
    } finally {
      knex.off('query', count);
    }
  });

  test('retention: messages past it go with their raw bytes and attachments; newer ones stay', async () => {
    const [old] = await knex('inbound_messages').orderBy('id').limit(1).select('id', 'raw_message_id', 'attachments');
    await knex('inbound_messages').where({ raw_message_id: old.raw_message_id }).update({ created_at: knex.raw("now() - interval '40 days'") });
    const left = Number((await knex('inbound_messages').count('* as n'))[0]!.n);
    expect(await pruneInbound(knex, 30)).toBe(1);
    expect(await knex('raw_messages').where({ id: old.raw_message_id }).first()).toBeUndefined();
    expect(await knex('attachments').whereIn('id', (old.attachments as { attachmentId: string }[]).map((a) => a.attachmentId))).toEqual([]);
    expect(Number((await knex('inbound_messages').count('* as n'))[0]!.n)).toBe(left - 1);
  });
});

test('GET /inbound: the total is exact up to 1,000 (totalExact), and past it says "at least 1,000"', async () => {
  const p = await e2e.t.newProject('Much mail');
  const k = bearer(p.secretKey);
  // 1,001 messages (and their raw bytes), one INSERT: the point is the count, not how they came.
  await knex.raw(
    `WITH r AS (INSERT INTO raw_messages (project_id, content, size) SELECT ?::uuid, '\\x00'::bytea, 1 FROM generate_series(1, 1001) RETURNING id, project_id)
     INSERT INTO inbound_messages (project_id, raw_message_id, recipient, mail_from, from_address, size)
     SELECT project_id, id, 'support@in.example.com', 'someone@example.org', CASE WHEN row_number() OVER () <= 2 THEN 'grace@example.org' ELSE 'someone@example.org' END, 1 FROM r`,
    [p.id]);
  const page = (await http().get('/inbound?limit=5').set(k)).body.data;
  expect(page).toMatchObject({ total: 1000, totalExact: false, hasMore: true });
  expect(page.items).toHaveLength(5);
  expect((await http().get('/inbound?from=grace@example.org').set(k)).body.data).toMatchObject({ total: 2, totalExact: true });
});
