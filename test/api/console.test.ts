import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import request from 'supertest';
import { CONSOLE_CSP, pickEncoding, previewCsp, SESSION_PRELOAD } from '../../api/console';
import { buildWeb, type WebBuild } from '../../scripts/buildWeb';
import { createTestContext, type TestContext } from '../support/app';
import { createApp } from '../../api/app';
import { testAppDeps } from '../support/app';

/**
 * The console's files at /app (api/console.ts), over real HTTP from a build of web/ made for this file: cache
 * headers, precompressed encodings, ETags, the index fallback, 404s, the CSP and friends, `/` for browsers, and no
 * way out of the assets folder.
 */
let t: TestContext;
let built: WebBuild;
let dir: string;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-console-'));
  built = await buildWeb({ outDir: dir, quiet: true });
  t = await createTestContext();
  // The same app with this file's build.
  t.server.removeAllListeners('request');
  t.server.on('request', createApp(testAppDeps(t.db.knex, { consoleDir: dir })).callback());
}, 60_000);
afterAll(async () => {
  await t.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const http = () => request(t.server);
const securityHeaders = (res: request.Response) => {
  expect(res.headers['content-security-policy']).toBe(CONSOLE_CSP);
  expect(res.headers['x-content-type-options']).toBe('nosniff');
  expect(res.headers['referrer-policy']).toBe('same-origin');
};

test('the CSP is the one the console needs: scripts from Herald only, no framing, no base or plugin', () => {
  const directives = Object.fromEntries(CONSOLE_CSP.split('; ').map((d) => [d.split(' ')[0], d.split(' ').slice(1).join(' ')]));
  expect(directives).toMatchObject({
    'default-src': "'self'", 'script-src': "'self'", 'connect-src': "'self'", 'frame-src': "'self'", 'frame-ancestors': "'none'",
    'base-uri': "'none'", 'form-action': "'self'", 'object-src': "'none'",
  });
});

test('the console allows no inline style and no remote image: an email is shown in /app/preview, under its own policy', async () => {
  expect(CONSOLE_CSP).toContain("style-src 'self';");
  expect(CONSOLE_CSP).toContain("img-src 'self' data:;");
  expect(CONSOLE_CSP).not.toContain('unsafe-inline');
  for (const [query, img] of [['', 'img-src data:;'], ['?images=remote', 'img-src data: https: http:;']] as const) {
    const res = await http().get(`/app/preview${query}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    const csp = res.headers['content-security-policy'];
    expect(csp).toBe(previewCsp(query !== ''));
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("style-src 'unsafe-inline'");
    expect(csp).toContain(img);
    expect(csp).toContain("frame-ancestors 'self'");
    expect(csp).not.toMatch(/script-src/);
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['x-frame-options']).toBe('SAMEORIGIN');
    expect(res.text).toMatch(/<body><\/body>/);
  }
});

test('with the session cookie, index.html also preloads GET /auth/session; without it, not (it would be a 401)', async () => {
  const plain = await http().get('/app/emails');
  const withCookie = await http().get('/app/emails').set('Cookie', 'herald_session=anything');
  expect(plain.text).not.toContain('/auth/session');
  expect(withCookie.text).toContain(`${SESSION_PRELOAD}\n</head>`);
  expect(withCookie.text.replace(`${SESSION_PRELOAD}\n`, '')).toBe(plain.text);
  for (const res of [plain, withCookie]) expect(res.headers.vary).toMatch(/Cookie/);
  expect(withCookie.headers.etag).not.toBe(plain.headers.etag);
  expect((await http().get('/app/emails').set('Cookie', 'herald_session=anything').set('If-None-Match', withCookie.headers.etag!)).status).toBe(304);
});

test("each page's path preloads that page's chunks with the first load; an unknown path preloads none", async () => {
  const chunksOf = (route: string) => built.routes.find((r) => r.path === route)?.js ?? [];
  // The route table's pages, each with its own chunk (the module's name, hashed), the sign-in pages too.
  for (const [route, module] of [['/app', 'Overview'], ['/app/emails', 'Emails'], ['/app/emails/:id', 'EmailDetail'], ['/app/contacts', 'Contacts'], ['/app/settings/:tab', 'Settings'], ['/app/login', 'Login']]) {
    expect(chunksOf(route!)[0]).toMatch(new RegExp(`^${module}-[A-Z0-9]{8}\\.js$`));
    for (const js of chunksOf(route!)) expect(built.initialJs).not.toContain(js);
  }
  const preloads = (html: string) => [...html.matchAll(/<link rel="modulepreload" href="\/app\/assets\/([^"]+)">/g)].map((m) => m[1]!);
  const detail = await http().get('/app/emails/0192d7c2-0000-7000-8000-000000000000');
  expect(preloads(detail.text)).toEqual([...built.initialJs, ...chunksOf('/app/emails/:id')]);
  expect(preloads((await http().get('/app/emails/')).text)).toEqual([...built.initialJs, ...chunksOf('/app/emails')]);
  expect(preloads((await http().get('/app/no/such/page')).text)).toEqual(built.initialJs);
  // Every variant its own ETag.
  expect(detail.headers.etag).not.toBe((await http().get('/app/emails')).headers.etag);
});

test('/app and every page path answer index.html, not cached, with the security headers; it loads only hashed assets', async () => {
  for (const p of ['/app', '/app/', '/app/emails', '/app/emails/0192d7c2-0000-7000-8000-000000000000', '/app/login?error=state', '/app/no/such/page']) {
    const res = await http().get(p).set('Accept', 'text/html');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers.etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    securityHeaders(res);
    expect(res.text).toContain(`<script type="module" src="/app/assets/${built.entry}"></script>`);
  }
  const html = (await http().get('/app')).text;
  // No inline script or style in the page (the CSP would refuse them).
  expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
  expect(html).not.toMatch(/\sstyle=/);
  expect(html).not.toMatch(/<style/);
  for (const src of html.match(/\/app\/assets\/[^"]+/g) ?? []) expect(src).toMatch(/^\/app\/assets\/[A-Za-z0-9_-]+-[A-Z0-9]{8}\.(js|css)$/);
  // A second look with its ETag: 304.
  const again = await http().get('/app').set('If-None-Match', (await http().get('/app')).headers.etag!);
  expect(again.status).toBe(304);
});

test('assets: a year of immutable cache, brotli or gzip by Accept-Encoding from the precompressed files, the right type, an ETag', async () => {
  const file = path.join(dir, 'assets', built.entry);
  const original = fs.readFileSync(file);
  const url = `/app/assets/${built.entry}`;

  const br = await http().get(url).set('Accept-Encoding', 'gzip, deflate, br').buffer(true).parse((res, cb) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => cb(null, Buffer.concat(chunks)));
  });
  expect(br.status).toBe(200);
  expect(br.headers['content-encoding']).toBe('br');
  expect(br.headers['content-type']).toBe('text/javascript; charset=utf-8');
  expect(br.headers['cache-control']).toBe('public, max-age=31536000, immutable');
  expect(br.headers.vary).toBe('Accept-Encoding');
  expect(br.headers.etag).toBe(`"${built.entry}-br"`);
  securityHeaders(br);

  // Raw bytes: what was sent is the .gz file, which inflates to the asset.
  const raw = (enc: string) => new Promise<{ headers: Record<string, string | string[] | undefined>; body: Buffer }>((resolve, reject) => {
    const address = t.server.address() as { port: number };
    import('node:http').then(({ get }) => get({ host: '127.0.0.1', port: address.port, path: url, headers: { 'Accept-Encoding': enc } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
    }).on('error', reject), reject);
  });
  const gz = await raw('gzip');
  expect(gz.headers['content-encoding']).toBe('gzip');
  expect(zlib.gunzipSync(gz.body).equals(original)).toBe(true);
  const brotli = await raw('br;q=1, gzip;q=0.5');
  expect(zlib.brotliDecompressSync(brotli.body).equals(original)).toBe(true);
  const plain = await raw('identity');
  expect(plain.headers['content-encoding']).toBeUndefined();
  expect(plain.body.equals(original)).toBe(true);
  const refused = await raw('br;q=0, gzip');
  expect(refused.headers['content-encoding']).toBe('gzip');

  const css = await http().get(`/app/assets/${built.css}`).set('Accept-Encoding', 'gzip');
  expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
  expect(css.headers['content-encoding']).toBe('gzip');

  const cached = await http().get(url).set('Accept-Encoding', 'br').set('If-None-Match', `"${built.entry}-br"`);
  expect(cached.status).toBe(304);
});

test('a missing asset is a 404 (not the index page); so is every name outside the pattern, and no path leaves the folder', async () => {
  const missing = await http().get('/app/assets/main-AAAAAAAA.js');
  expect(missing.status).toBe(404);
  expect(missing.headers['content-type']).toMatch(/^text\/plain/);
  expect(missing.headers['cache-control']).toBe('no-store');
  for (const p of ['/app/assets/../../package.json', '/app/assets/..%2f..%2fpackage.json', '/app/assets/%2e%2e/index.html',
    '/app/assets/build.json', '/app/assets/index.html', `/app/assets/${built.entry}.gz`, '/app/assets/', '/app/assets/x/../../../etc/passwd']) {
    const res = await http().get(p);
    expect([p, res.status]).toEqual([p, 404]);
    expect(res.text).not.toContain('"name": "herald"');
  }
  // A page path with dots is a page path: the index, never a file.
  const dotted = await http().get('/app/../package.json');
  expect(dotted.text).not.toContain('"dependencies"');
});

test('a browser asking for / is sent to /app; an API client asking for / gets the API\'s 404 envelope', async () => {
  const browser = await http().get('/').set('Accept', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8');
  expect(browser.status).toBe(302);
  expect(browser.headers.location).toBe('/app');
  const script = await http().get('/').set('Accept', 'application/json');
  expect(script.status).toBe(404);
  expect(script.body.success).toBe(false);
});

test('the console is static: a POST to it is refused (405), and the API beside it is unchanged', async () => {
  const post = await http().post('/app/login').send({});
  expect(post.status).toBe(405);
  expect(post.headers.allow).toBe('GET, HEAD');
  expect((await http().get('/health')).status).toBe(200);
});

test('without a build, /app says how to make one (503) instead of a blank page', async () => {
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-console-empty-'));
  const app = createApp(testAppDeps(t.db.knex, { consoleDir: empty }));
  const res = await request(app.callback()).get('/app');
  expect(res.status).toBe(503);
  expect(res.text).toContain('npm run build:web');
  fs.rmSync(empty, { recursive: true, force: true });
});

test('Accept-Encoding: brotli preferred, q=0 refuses, * counts', () => {
  expect(pickEncoding('gzip, deflate, br')).toBe('br');
  expect(pickEncoding('gzip')).toBe('gzip');
  expect(pickEncoding('br;q=0, gzip;q=0.8')).toBe('gzip');
  expect(pickEncoding('*')).toBe('br');
  expect(pickEncoding('identity')).toBeNull();
  expect(pickEncoding('')).toBeNull();
});
