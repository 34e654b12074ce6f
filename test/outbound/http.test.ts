import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { isIP } from 'node:net';
import {
  createWebhookClient, REFUSED_MESSAGE, webhookConfig, WebhookError, type WebhookLookup, type WebhookOptions, type WebhookRequest,
} from '../../outbound/http';

/**
 * The WEBHOOK step's HTTP client against a real server on 127.0.0.1. Every destination other than loopback is only
 * ever named through a fake resolver or an IP literal that must be refused before anything is sent.
 */

const BIG_BYTES = 10 * 1024 * 1024;

let server: http.Server;
let base: string;
let port: number;
const hanging = new Set<http.ServerResponse>();
let bigClosed: Promise<{ written: number; finished: boolean }> | undefined;

function writeBig(res: http.ServerResponse): void {
  let written = 0;
  bigClosed = new Promise((resolve) => res.on('close', () => resolve({ written, finished: res.writableFinished })));
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': BIG_BYTES });
  const chunk = Buffer.alloc(64 * 1024, 'a');
  const pump = () => {
    while (written < BIG_BYTES && !res.destroyed) {
      written += chunk.length;
      if (written >= BIG_BYTES) {
        res.end(chunk);
        return;
      }
      if (!res.write(chunk)) {
        res.once('drain', pump);
        return;
      }
    }
  };
  pump();
}

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const status = /^\/status\/(\d+)$/.exec(path);
      if (path === '/echo') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ method: req.method, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') }));
      } else if (status) {
        const code = Number(status[1]);
        res.writeHead(code, code >= 300 && code < 400 ? { location: `${base}/echo` } : {});
        res.end('status body');
      } else if (path === '/hang') {
        hanging.add(res); // never answers
      } else if (path === '/stall') {
        res.writeHead(200).write('half a bod'); // answers, then never finishes
        hanging.add(res);
      } else if (path === '/utf8') {
        res.end('é'.repeat(100)); // 200 bytes
      } else if (path === '/big') {
        writeBig(res);
      } else if (path.startsWith('/exact/')) {
        res.end('x'.repeat(Number(path.slice('/exact/'.length))));
      } else {
        res.writeHead(404).end();
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  for (const res of hanging) res.destroy();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

afterEach(() => jest.restoreAllMocks());

/** A resolver that knows only these names; anything else does not exist. */
const fakeDns = (table: Record<string, string[]>): WebhookLookup => async (name) => {
  const addresses = table[name];
  if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
  return addresses.map((address) => ({ address, family: isIP(address) }));
};

const loopbackAllowed = (opts: Partial<WebhookOptions> = {}) => createWebhookClient({ allowPrivate: ['127.0.0.1'], ...opts });

async function failure(promise: Promise<unknown>): Promise<WebhookError> {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(WebhookError);
  return err as WebhookError;
}

describe('a successful call', () => {
  test('POST sends the JSON body with its method and headers, and resolves with the 2xx response', async () => {
    const res = await loopbackAllowed().call({ url: `${base}/echo`, headers: { 'X-Signature': 'abc123' }, body: { event: 'signup', n: 1, é: 'ü' } });
    expect(res.status).toBe(200);
    expect(res.truncated).toBe(false);
    const seen = JSON.parse(res.body) as { method: string; headers: Record<string, string>; body: string };
    expect(seen.method).toBe('POST');
    expect(seen.headers['content-type']).toBe('application/json');
    expect(seen.headers['user-agent']).toBe('Herald-Webhook/1');
    expect(seen.headers['x-signature']).toBe('abc123');
    expect(seen.headers['content-length']).toBe(String(Buffer.byteLength(seen.body)));
    expect(JSON.parse(seen.body)).toEqual({ event: 'signup', n: 1, é: 'ü' });
  });

  test('GET sends no body and no content-type; a caller-set content-type is kept', async () => {
    const get = JSON.parse((await loopbackAllowed().call({ url: `${base}/echo`, method: 'GET' })).body);
    expect(get.method).toBe('GET');
    expect(get.body).toBe('');
    expect(get.headers['content-type']).toBeUndefined();

    const put = JSON.parse((await loopbackAllowed().call({
      url: `${base}/echo`, method: 'PUT', headers: { 'Content-Type': 'application/vnd.acme+json' }, body: [1, 2],
    })).body);
    expect(put.method).toBe('PUT');
    expect(put.headers['content-type']).toBe('application/vnd.acme+json');
    expect(put.body).toBe('[1,2]');
  });

  test('a GET with a body is refused rather than silently dropping the body', async () => {
    expect((await failure(loopbackAllowed().call({ url: `${base}/echo`, method: 'GET', body: { a: 1 } }))).permanent).toBe(true);
  });
});

describe('private destinations', () => {
  const expectRefused = (err: WebhookError) => {
    expect(err.permanent).toBe(true);
    expect(err.status).toBeUndefined();
    // One message for every refusal: neither the address a name resolved to nor its range (issue 26).
    expect(err.message).toBe(REFUSED_MESSAGE);
    expect(err.message).toMatch(/refused: private address/);
  };

  test.each([
    'http://127.0.0.1:1/',
    'http://10.0.0.1/',
    'http://169.254.169.254/latest/meta-data/',
    'http://100.64.0.1/',
    'http://[::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:10.0.0.1]/',
    'http://[fd00::1]/',
    'http://[64:ff9b::a00:1]/', // NAT64 of 10.0.0.1
    'http://[::127.0.0.1]/', // IPv4-compatible (::/96, deprecated): unicast to ipaddr.js
    'http://[::8.8.8.8]/',
    'http://0x7f.1/', // 127.0.0.1 spelt differently
    'http://0.0.0.0/',
  ])('the IP literal %s is refused before any request is made', async (url) => {
    const request = jest.spyOn(http, 'request').mockImplementation(() => {
      throw new Error('no request may be made');
    });
    expectRefused(await failure(createWebhookClient({}).call({ url })));
    expect(request).not.toHaveBeenCalled();
  });

  test.each<[string, string[]]>([
    ['127.0.0.1', ['127.0.0.1']],
    ['10.1.2.3', ['10.1.2.3']],
    ['169.254.169.254 (cloud metadata)', ['169.254.169.254']],
    ['::1', ['::1']],
    ['::ffff:192.168.1.1', ['::ffff:192.168.1.1']],
    // One bad address among good ones is enough: the socket may connect to any of them.
    ['a public address and 127.0.0.1', ['93.184.216.34', '127.0.0.1']],
  ])('a host name resolving to %s is refused', async (_label, addresses) => {
    const client = createWebhookClient({ lookup: fakeDns({ 'hooks.example.com': addresses }) });
    expectRefused(await failure(client.call({ url: `http://hooks.example.com:${port}/echo` })));
  });

  test('localhost, resolved by the system resolver, is refused', async () => {
    expectRefused(await failure(createWebhookClient({}).call({ url: `http://localhost:${port}/echo` })));
  });

  test('allowed by IP, by CIDR range and by host name', async () => {
    expect((await createWebhookClient({ allowPrivate: ['127.0.0.1'] }).call({ url: `${base}/echo` })).status).toBe(200);
    expect((await createWebhookClient({ allowPrivate: ['127.0.0.0/8'] }).call({ url: `${base}/echo` })).status).toBe(200);

    // The socket connects to what the resolver said: a made-up name reaches the loopback server.
    const lookup = fakeDns({ 'hooks.internal': ['127.0.0.1'] });
    const byRange = await createWebhookClient({ allowPrivate: ['10.0.0.0/8', '127.0.0.0/8'], lookup }).call({ url: `http://hooks.internal:${port}/echo` });
    expect(JSON.parse(byRange.body).headers.host).toBe(`hooks.internal:${port}`);
    const byName = await createWebhookClient({ allowPrivate: ['Hooks.Internal'], lookup }).call({ url: `http://hooks.internal:${port}/echo` });
    expect(byName.status).toBe(200);
  });

  test('an allow-list entry covers only what it names', async () => {
    const lookup = fakeDns({ 'hooks.internal': ['127.0.0.1'] });
    expectRefused(await failure(createWebhookClient({ allowPrivate: ['10.0.0.0/8', 'other.internal'], lookup }).call({ url: `http://hooks.internal:${port}/` })));
  });

  test('an allow-list entry that is no host, address or range is rejected when the client is made', () => {
    expect(() => createWebhookClient({ allowPrivate: ['10.0.0.0/33'] })).toThrow(/WEBHOOK_ALLOW_PRIVATE/);
  });
});

describe('status codes', () => {
  test.each([
    [500, false],
    [503, false],
    [429, false],
    [408, false],
    [404, true],
    [400, true],
    [302, true],
  ])('%i → permanent: %s', async (status, permanent) => {
    const err = await failure(loopbackAllowed().call({ url: `${base}/status/${status}` }));
    expect(err.permanent).toBe(permanent);
    expect(err.status).toBe(status);
    expect(err.message).not.toMatch(/status body/);
  });

  test('a redirect says it is not followed', async () => {
    expect((await failure(loopbackAllowed().call({ url: `${base}/status/301` }))).message).toMatch(/redirects are not followed/);
  });
});

describe('network failures', () => {
  test('a server that never answers times out as a transient error', async () => {
    const started = Date.now();
    const err = await failure(loopbackAllowed({ timeoutMs: 200 }).call({ url: `${base}/hang` }));
    expect(err.permanent).toBe(false);
    expect(err.message).toMatch(/timed out after 200 ms/);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  test('a body that stops coming times out too: the timeout covers the whole exchange', async () => {
    const err = await failure(loopbackAllowed({ timeoutMs: 200 }).call({ url: `${base}/stall`, method: 'GET' }));
    expect(err.permanent).toBe(false);
    expect(err.message).toMatch(/timed out/);
  });

  test('a resolver that never answers times out too', async () => {
    const client = createWebhookClient({ timeoutMs: 200, lookup: () => new Promise(() => undefined) });
    expect((await failure(client.call({ url: 'http://slow.example.com/' }))).permanent).toBe(false);
  });

  test('connection refused is transient', async () => {
    const closed = http.createServer().listen(0, '127.0.0.1');
    await new Promise((r) => closed.once('listening', r));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const err = await failure(loopbackAllowed().call({ url: `http://127.0.0.1:${closedPort}/` }));
    expect(err.permanent).toBe(false);
    expect(err.message).toMatch(/ECONNREFUSED/);
  });

  test('a name that does not exist is permanent; a resolver failure (EAI_AGAIN) is transient', async () => {
    const missing = createWebhookClient({ lookup: fakeDns({}) });
    expect((await failure(missing.call({ url: 'http://nowhere.example.com/' }))).permanent).toBe(true);

    const flaky = createWebhookClient({
      lookup: async () => {
        throw Object.assign(new Error('getaddrinfo EAI_AGAIN'), { code: 'EAI_AGAIN' });
      },
    });
    expect((await failure(flaky.call({ url: 'http://flaky.example.com/' }))).permanent).toBe(false);
  });
});

describe('response size', () => {
  test('a 10 MB body is cut at the cap without being read to its end', async () => {
    bigClosed = undefined;
    const res = await loopbackAllowed({ maxResponseBytes: 1024 }).call({ url: `${base}/big`, method: 'GET' });
    expect(res.truncated).toBe(true);
    expect(res.body.length).toBe(1024);
    expect(res.body).toBe('a'.repeat(1024));
    const seen = await bigClosed!;
    // The client hung up: the server could not finish writing.
    expect(seen.finished).toBe(false);
    expect(seen.written).toBeLessThan(BIG_BYTES);
  });

  test('a cut through a multi-byte character leaves the broken character out', async () => {
    const res = await loopbackAllowed({ maxResponseBytes: 101 }).call({ url: `${base}/utf8`, method: 'GET' });
    expect(res).toEqual({ status: 200, body: 'é'.repeat(50), truncated: true });
  });

  test('a body of exactly the cap is whole', async () => {
    const res = await loopbackAllowed({ maxResponseBytes: 100 }).call({ url: `${base}/exact/100`, method: 'GET' });
    expect(res).toEqual({ status: 200, body: 'x'.repeat(100), truncated: false });
  });
});

describe('refused requests', () => {
  const refusedOutright = async (req: WebhookRequest, message: RegExp) => {
    const request = jest.spyOn(http, 'request');
    const err = await failure(loopbackAllowed().call(req));
    expect(err.permanent).toBe(true);
    expect(err.message).toMatch(message);
    expect(request).not.toHaveBeenCalled();
  };

  test.each([
    ['ftp://127.0.0.1/file', /scheme ftp: is not allowed/],
    ['file:///etc/passwd', /scheme file: is not allowed/],
    ['not a url', /not a valid URL/],
    [`http://user:secret@127.0.0.1:1/`, /credentials/],
  ])('the URL %s', async (url, message) => {
    await refusedOutright({ url }, message);
  });

  test('a header with CR or LF in its value or name', async () => {
    await refusedOutright({ url: `${base}/echo`, headers: { 'X-Token': 'a\r\nX-Injected: 1' } }, /CR or LF/);
    await refusedOutright({ url: `${base}/echo`, headers: { 'X-A\nB': '1' } }, /CR or LF/);
  });

  test('the header value is not repeated in the error', async () => {
    const err = await failure(loopbackAllowed().call({ url: `${base}/echo`, headers: { Authorization: 'Bearer s3cret\n' } }));
    expect(err.message).not.toMatch(/s3cret/);
  });

  test.each(['Host', 'content-length', 'Transfer-Encoding', 'connection'])('setting %s', async (name) => {
    await refusedOutright({ url: `${base}/echo`, headers: { [name]: 'x' } }, /may not be set/);
  });
});

describe('webhookConfig', () => {
  test('defaults', () => {
    expect(webhookConfig({})).toEqual({ allowPrivate: [], timeoutMs: 10_000, maxResponseBytes: 65_536 });
    expect(webhookConfig({ WEBHOOK_ALLOW_PRIVATE: '', WEBHOOK_TIMEOUT_MS: '', WEBHOOK_MAX_RESPONSE_BYTES: '' }).timeoutMs).toBe(10_000);
  });

  test('reads every variable', () => {
    expect(webhookConfig({
      WEBHOOK_ALLOW_PRIVATE: ' 127.0.0.1, 10.0.0.0/8 ,::1,hooks.internal,',
      WEBHOOK_TIMEOUT_MS: '2500',
      WEBHOOK_MAX_RESPONSE_BYTES: '1024',
    })).toEqual({ allowPrivate: ['127.0.0.1', '10.0.0.0/8', '::1', 'hooks.internal'], timeoutMs: 2500, maxResponseBytes: 1024 });
  });

  test.each([
    ['WEBHOOK_TIMEOUT_MS', 'soon'],
    ['WEBHOOK_TIMEOUT_MS', '0'],
    ['WEBHOOK_TIMEOUT_MS', '1.5'],
    ['WEBHOOK_MAX_RESPONSE_BYTES', '-1'],
    ['WEBHOOK_MAX_RESPONSE_BYTES', '64k'],
    ['WEBHOOK_ALLOW_PRIVATE', '10.0.0.0/8,not a host'],
    ['WEBHOOK_ALLOW_PRIVATE', '300.1.1.1/8'],
    ['WEBHOOK_ALLOW_PRIVATE', '10.0.0.256'],
  ])('%s=%j is rejected, naming the variable', (name, value) => {
    expect(() => webhookConfig({ [name]: value })).toThrow(new RegExp(`Invalid configuration: ${name}`));
  });
});
