import type { Server } from 'node:http';
import { isIP } from 'node:net';
import pino from 'pino';
import request from 'supertest';
import { createApp } from '../../api/app';
import { addDomain } from '../../domains/rows';
import { unsubscribeToken } from '../../mail/unsubscribe';
import type { WebhookLookup } from '../../outbound/http';
import { createProject, type CreatedProject } from '../../projects/service';
import { clickToken, openToken } from '../../tracking/links';
import { addressThrottle } from '../../tracking/throttle';
import { outboundWebhookConfig } from '../../webhooks/config';
import { startWebhookQueue, type WebhookQueue } from '../../worker/webhookQueue';
import { bearer, TEST_SECRET, testAppDeps } from '../support/app';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { waitFor } from '../support/processes';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhookReceiver';

/**
 * Issue 26: abuse of the public tracking links and what a project may learn from Herald's answers, against a real app
 * on a real database (no engine: the emails stay queued, which is all tracking needs) with its request log captured.
 */
let db: TestDatabase;
let server: Server;
/** The tracking routes with a short event window and no address limit, and with a low address limit. */
let windowed: Server;
let throttled: Server;
let receiver: WebhookReceiver;
let queue: WebhookQueue;
let project: CreatedProject;
const logLines: string[] = [];
const http = () => request.agent(server);
const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';

beforeAll(async () => {
  db = await createTestDatabase();
  const log = pino({ level: 'info' }, { write: (line: string) => { logLines.push(line); } });
  const listen = async (tracking?: { eventWindowMs: number; ratePerAddress: number }) => {
    const s = createApp(testAppDeps(db.knex, { log, ...(tracking ? { tracking } : {}) })).listen(0, '127.0.0.1');
    await new Promise((r) => s.once('listening', r));
    return s;
  };
  server = await listen();
  windowed = await listen({ eventWindowMs: 60_000, ratePerAddress: 0 });
  throttled = await listen({ eventWindowMs: 60_000, ratePerAddress: 10 });
  project = await createProject('Issue 26');
  await addDomain(project.id, 'example.com', true);

  receiver = await startWebhookReceiver();
  // The operator's network as a fake resolver: "vm" and "db.internal" are internal names; "hooks.example" is allowed.
  const table: Record<string, string[]> = { vm: ['127.0.0.1'], 'db.internal': ['10.20.30.40'], 'hooks.example': ['127.0.0.1'] };
  const lookup: WebhookLookup = async (name) => {
    const addresses = table[name];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: isIP(address) }));
  };
  const config = outboundWebhookConfig({});
  queue = startWebhookQueue({
    knex: db.knex, log: pino({ level: 'silent' }), secret: TEST_SECRET, executorId: `issue26-${db.name}`, pollMs: 50,
    config: { ...config, retryDelaysMs: [], http: { ...config.http, allowPrivate: ['hooks.example'], timeoutMs: 2000, lookup } },
  });
});
afterAll(async () => {
  await queue.stop();
  await receiver.close();
  for (const s of [server, windowed, throttled]) await new Promise((r) => s.close(r));
  await db.close();
});

/** A queued email of the project (and its contact), by the API. */
async function newEmail(to: string): Promise<{ emailId: string; contactId: string }> {
  const res = await http().post('/v1/send').set(bearer(project.secretKey)).send({ to, from: 'hi@example.com', subject: 'Hi', body: '<p>hi</p>' });
  expect(res.status).toBe(200);
  return { emailId: res.body.data.emails[0].email, contactId: res.body.data.emails[0].contact.id };
}
const counts = (id: string) => db.knex('emails').where({ project_id: project.id, id }).first('opens', 'clicks');

describe('tokens are accepted in their one canonical encoding only', () => {
  /** Spellings of the same token that Node's lenient base64url decoder reads as the same bytes. */
  function aliases(token: string): string[] {
    const [payload, sig] = token.split('.') as [string, string];
    const last = sig[sig.length - 1]!;
    // 20 bytes in base64url are 27 characters: the last carries 4 bits, so 4 characters share them.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const base = alphabet.indexOf(last) & ~0x3;
    const lastVariants = [0, 1, 2, 3].map((i) => alphabet[base + i]!).filter((c) => c !== last);
    const std = (s: string) => s.replace(/-/g, '+').replace(/_/g, '/');
    return [
      `${payload}.${sig}=`, `${payload}.${sig}==`, `${payload}.${sig}!`, `${payload}.${sig}%20`, `${payload}=.${sig}`,
      ...lastVariants.map((c) => `${payload}.${sig.slice(0, -1)}${c}`),
      ...(std(sig) !== sig ? [`${payload}.${encodeURIComponent(std(sig))}`] : []),
      ...(std(payload) !== payload ? [`${encodeURIComponent(std(payload))}.${sig}`] : []),
    ];
  }

  test('an open or click token with =, ==, !, %20 appended, the +/ alphabet or another last character is a 404 and counts nothing', async () => {
    const { emailId } = await newEmail('canonical@example.org');
    // Signatures with - and _ in them, so that the +/ spelling differs (a retry over urls keeps it deterministic).
    let n = 0;
    const withDashes = (make: (i: number) => string) => {
      for (;; n++) {
        const t = make(n);
        if (/[-_]/.test(t.split('.')[1]!)) return t;
      }
    };
    const open = openToken(TEST_SECRET, { projectId: project.id, emailId });
    const click = withDashes((i) => clickToken(TEST_SECRET, { projectId: project.id, emailId, url: `https://example.org/reset?i=${i}` }));
    for (const [kind, token] of [['o', open], ['c', click]] as const) {
      const variants = aliases(token);
      expect(variants.length).toBeGreaterThanOrEqual(8);
      for (const v of variants) {
        const res = await http().get(`/t/${kind}/${v}`).set('User-Agent', BROWSER).redirects(0);
        expect([v, res.status]).toEqual([v, 404]);
        expect(res.headers.location).toBeUndefined();
      }
      // The canonical token itself still works.
      expect((await http().get(`/t/${kind}/${token}`).set('User-Agent', BROWSER).redirects(0)).status).toBe(kind === 'o' ? 200 : 302);
    }
    expect(await counts(emailId)).toEqual({ opens: 1, clicks: 1 });
  });

  test('the unsubscribe token (same signing code) too', async () => {
    const created = await http().post('/contacts').set(bearer(project.secretKey)).send({ email: 'unsub-canonical@example.org', subscribed: true });
    expect(created.status).toBe(201);
    const contactId = created.body.data.id as string;
    const token = unsubscribeToken(TEST_SECRET, { projectId: project.id, contactId });
    for (const v of aliases(token)) {
      const res = await http().post(`/unsubscribe/${v}`);
      expect([v, res.status]).toEqual([v, 404]);
    }
    const subscribed = async () => (await db.knex('contacts').where({ project_id: project.id, id: contactId }).first('subscribed')).subscribed;
    expect(await subscribed()).toBe(true);
    expect((await http().post(`/unsubscribe/${token}`)).status).toBe(200);
    expect(await subscribed()).toBe(false);
  });
});

test('the request log redacts tracking and unsubscribe tokens; query strings are not logged', async () => {
  const { emailId, contactId } = await newEmail('logged@example.org');
  const click = clickToken(TEST_SECRET, { projectId: project.id, emailId, url: 'https://bank.example/reset?code=SECRET-RESET-CODE' });
  const open = openToken(TEST_SECRET, { projectId: project.id, emailId });
  const unsub = unsubscribeToken(TEST_SECRET, { projectId: project.id, contactId });
  const from = logLines.length;
  await http().get(`/t/c/${click}`).set('User-Agent', BROWSER).redirects(0).expect(302);
  await http().get(`/T/C/${click}?token=${open}`).set('User-Agent', BROWSER).redirects(0).expect(302); // the router ignores case
  await http().get(`/t/o/${open}`).set('User-Agent', BROWSER).expect(200);
  await http().get(`/t//o/${open}x`).expect(404); // no route, still a token
  await http().get(`/unsubscribe/${unsub}`).expect(200);
  await http().get(`/health?token=${open}`).expect(200);
  const lines = await waitFor('the request log', () => (logLines.length - from >= 6 ? logLines.slice(from) : undefined));
  const requests = lines.map((l) => JSON.parse(l) as { msg: string; path: string }).filter((l) => l.msg === 'request');
  expect(requests.map((r) => r.path)).toEqual(['/t/c/[redacted]', '/T/C/[redacted]', '/t/o/[redacted]', '/t//o/[redacted]', '/unsubscribe/[redacted]', '/health']);
  const all = lines.join('\n');
  for (const secret of [click, open, unsub, click.split('.')[0]!, 'SECRET-RESET-CODE', 'bank.example']) expect(all).not.toContain(secret);
});

describe('webhook targets that resolve to private addresses', () => {
  test('lastError says "refused: private address", never what a name resolved to', async () => {
    const key = bearer(project.secretKey);
    const hook = async (url: string) => {
      const res = await http().post('/webhooks').set(key).send({ url, events: ['contact.created'] });
      expect(res.status).toBe(201);
      return res.body.data.id as string;
    };
    const internal = await hook(`http://vm:${receiver.port}/probe`);
    const internal2 = await hook('http://db.internal/probe');
    const literal = await hook('http://[::ffff:10.0.0.7]/probe');
    await hook(`http://hooks.example:${receiver.port}/ok`); // allowed by name: reached
    await http().post('/contacts').set(key).send({ email: 'probe@example.org' }).expect(201);

    await waitFor('the allowed endpoint to get its delivery', () => receiver.received.some((r) => r.path === '/ok') || undefined);
    for (const id of [internal, internal2, literal]) {
      const endpoint = await waitFor('the endpoint marked failing', async () => {
        const res = await http().get(`/webhooks/${id}`).set(key);
        return res.body.data.status === 'failing' ? res.body.data : undefined;
      });
      const deliveries = (await http().get(`/webhooks/${id}/deliveries`).set(key)).body.data.items as { lastError: string; attemptLog: { error: string }[] }[];
      const shown = [endpoint.lastError, deliveries[0]!.lastError, ...deliveries[0]!.attemptLog.map((a) => a.error)];
      for (const message of shown) {
        expect(message).toMatch(/refused: private address/);
        for (const leak of ['127.0.0.1', '10.20.30.40', '10.0.0.7', 'vm', 'db.internal', 'loopback', 'private)', 'resolves']) expect(message).not.toContain(leak);
      }
    }
    expect(receiver.received.filter((r) => r.path === '/probe')).toHaveLength(0);
  });
});

describe('floods of one pixel or link', () => {
  const GMAIL_PROXY = 'Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)';
  const events = (emailId: string) => db.knex('events').where({ project_id: project.id, email_id: emailId }).whereIn('name', ['email.opened', 'email.clicked'])
    .orderBy('id').select('name', 'data');
  /** `n` GETs of `path` on `s`, 50 at a time; answers their statuses and Location headers. */
  async function flood(s: Server, path: string, n: number, ua = BROWSER): Promise<{ status: number; location?: string }[]> {
    const out: { status: number; location?: string }[] = [];
    for (let i = 0; i < n; i += 50) {
      const batch = await Promise.all(Array.from({ length: Math.min(50, n - i) }, () => request(s).get(path).set('User-Agent', ua).redirects(0)));
      out.push(...batch.map((r) => ({ status: r.status, location: r.headers.location as string | undefined })));
    }
    return out;
  }

  test('one event, and so one webhook, per email and kind (open; click per link) per window; the counts take every hit', async () => {
    const key = bearer(project.secretKey);
    const hook = await http().post('/webhooks').set(key).send({ url: `http://hooks.example:${receiver.port}/tracking`, events: ['email.opened', 'email.clicked'] });
    expect(hook.status).toBe(201);
    const { emailId } = await newEmail('flooded@example.org');
    const open = `/t/o/${openToken(TEST_SECRET, { projectId: project.id, emailId })}`;
    const linkA = `/t/c/${clickToken(TEST_SECRET, { projectId: project.id, emailId, url: 'https://a.example/' })}`;
    const linkB = `/t/c/${clickToken(TEST_SECRET, { projectId: project.id, emailId, url: 'https://b.example/' })}`;

    const answers = await Promise.all([flood(windowed, open, 300), flood(windowed, linkA, 100), flood(windowed, linkB, 100)]);
    expect(answers[0]!.every((a) => a.status === 200)).toBe(true);
    expect(answers[1]!.every((a) => a.status === 302 && a.location === 'https://a.example/')).toBe(true);
    expect(answers[2]!.every((a) => a.status === 302 && a.location === 'https://b.example/')).toBe(true);
    expect(await counts(emailId)).toEqual({ opens: 300, clicks: 200 });
    expect((await events(emailId)).map((e) => [e.name, e.data.url]).sort()).toEqual([
      ['email.clicked', 'https://a.example/'], ['email.clicked', 'https://b.example/'], ['email.opened', undefined],
    ]);
    // A proxy's fetch is windowed apart from people's (its prefetch never hides a person's open), once per window too.
    await flood(windowed, open, 20, GMAIL_PROXY);
    expect((await events(emailId)).filter((e) => e.data.proxy === 'gmail')).toHaveLength(1);

    // Once the window has passed (moved back an hour here, rather than waited for), the next hit is an event again.
    await db.knex('tracking_event_windows').where({ project_id: project.id, email_id: emailId }).update({ last_event_at: db.knex.raw("last_event_at - interval '1 hour'") });
    await flood(windowed, open, 30);
    expect(await counts(emailId)).toEqual({ opens: 350, clicks: 200 });
    const all = await events(emailId);
    expect(all).toHaveLength(5);
    // The webhooks are the events': five, not 550.
    await waitFor('the tracking webhooks', () => (receiver.received.filter((r) => r.path === '/tracking').length >= 5 ? true : undefined));
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.received.filter((r) => r.path === '/tracking')).toHaveLength(5);
  });

  test('over the per-address rate the pixel and the redirect are still answered, and nothing is recorded', async () => {
    const { emailId } = await newEmail('throttled@example.org');
    const open = `/t/o/${openToken(TEST_SECRET, { projectId: project.id, emailId })}`;
    const link = `/t/c/${clickToken(TEST_SECRET, { projectId: project.id, emailId, url: 'https://a.example/' })}`;
    const started = Date.now();
    const [opens, clicks] = await Promise.all([flood(throttled, open, 60), flood(throttled, link, 60)]);
    const seconds = Math.floor(Date.now() / 1000) - Math.floor(started / 1000) + 1;
    expect(opens.every((a) => a.status === 200)).toBe(true);
    expect(clicks.every((a) => a.status === 302 && a.location === 'https://a.example/')).toBe(true);
    const c = await counts(emailId);
    // 10 hits a second from 127.0.0.1, opens and clicks together.
    expect(c.opens + c.clicks).toBeGreaterThanOrEqual(10);
    expect(c.opens + c.clicks).toBeLessThanOrEqual(10 * seconds);
    expect(c.opens + c.clicks).toBeLessThan(120);
    // A bad token is still a 404 when the address is over its rate.
    expect((await request(throttled).get(`${open}x`)).status).toBe(404);
  });

  test('behind TRUST_PROXY_HOPS proxies the address is the one the nearest proxy forwarded; without, X-Forwarded-For is ignored', async () => {
    const proxied = createApp(testAppDeps(db.knex, { trustProxyHops: 1, tracking: { eventWindowMs: 60_000, ratePerAddress: 10 } })).listen(0, '127.0.0.1');
    await new Promise((r) => proxied.once('listening', r));
    try {
      /** 15 opens of each of two emails, one per client (X-Forwarded-For as a proxy appends it), inside one second. */
      const opensOfTwoClients = async (s: Server, forwarded: [string, string]) => {
        for (;;) {
          const emails = [await newEmail('client-a@example.org'), await newEmail('client-b@example.org')];
          await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000))); // at the start of a second
          const second = Math.floor(Date.now() / 1000);
          await Promise.all(emails.flatMap(({ emailId }, i) => Array.from({ length: 15 }, () =>
            request(s).get(`/t/o/${openToken(TEST_SECRET, { projectId: project.id, emailId })}`).set('User-Agent', BROWSER).set('X-Forwarded-For', forwarded[i]!))));
          if (Math.floor(Date.now() / 1000) !== second) continue; // the hits straddled two seconds: again
          return Promise.all(emails.map(async ({ emailId }) => (await counts(emailId)).opens));
        }
      };
      // Each client its own 10 a second, whatever it writes left of the proxy's entry.
      expect(await opensOfTwoClients(proxied, ['10.9.9.9, 198.51.100.1', '198.51.100.1, 203.0.113.7'])).toEqual([10, 10]);
      // No proxy trusted: the header is the client's to write, so both share the connection's address and its 10.
      const [a, b] = await opensOfTwoClients(throttled, ['198.51.100.1', '203.0.113.7']);
      expect(a! + b!).toBe(10);
    } finally {
      await new Promise((r) => proxied.close(r));
    }
  });

  test('the address throttle counts per address and per second', () => {
    let now = 5_000;
    const admit = addressThrottle(3, () => now);
    expect(['a', 'a', 'a', 'a', 'b'].map(admit)).toEqual([true, true, true, false, true]);
    now = 5_999;
    expect(admit('a')).toBe(false);
    now = 6_000;
    expect(admit('a')).toBe(true);
    expect(addressThrottle(0)('a')).toBe(true);
  });
});
