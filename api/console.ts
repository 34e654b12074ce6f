import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Context, Middleware, Next } from 'koa';
import { routeMatches } from '../core/routePaths';
import { sessionTokenOf } from './cookies';

/**
 * The web console at /app (web/, built by scripts/buildWeb.ts into dist/web/): static files and nothing else, no
 * business and no route of the API (the console is a client of the API like any script).
 *
 * - `/app/assets/<name>-<hash>.js|css`: a year of cache (`immutable`: a new build has new names), brotli or gzip from
 *   the precompressed files by Accept-Encoding, an ETag; a missing asset is a 404.
 * - `/app/preview`: the empty document, with its own policy, that the console shows an email's HTML in (previewCsp).
 * - `/app` and every other `/app/*`: index.html, `no-cache` (the router of web/ shows the page, or its "not found"), with
 *   the page's chunks and (with the session cookie) the session preloaded: indexReader.
 * - `/` asked by a browser (Accept: text/html): redirected to /app. Scripts asking for `/` get the API's usual 404.
 *
 * Every answer here (the preview's aside) carries the console's CSP, nosniff and Referrer-Policy. Only GET and HEAD; names are matched
 * against one pattern (no `/`, no `..`), so nothing outside dist/web/assets can be asked for.
 */
export const CONSOLE_DIR = path.resolve(__dirname, '..', 'dist', 'web');

/**
 * The console's Content-Security-Policy: everything from Herald itself, no inline script or style, images from Herald
 * or `data:` only. The console sets no inline style (index.html has none, Preact writes styles through the CSSOM) and
 * writes no HTML into its own document. An email's HTML, which needs inline styles and may load remote images, is
 * shown in the preview document below, never in the console's.
 */
export const CONSOLE_CSP = [
  "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'",
  "frame-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'", "object-src 'none'",
].join('; ');

/**
 * `/app/preview`: the empty document an email is shown in (web/components/MessagePreview.tsx). Its own policy, not the
 * console's: an iframe's `srcdoc` would inherit the console's (HTML's policy container), so a message's inline styles
 * would need the console to allow them too. This document is loaded by URL into an iframe sandboxed without scripts
 * (`allow-same-origin` only, so the console can put the message's nodes in it); its policy stays with it whatever is
 * put in: no script, no fetch, no frame, no form, no <base>; inline styles; `data:` images, and remote ones only
 * at `?images=remote` (the console's "Load remote images"). Framed by the console only; its requests send no Referer.
 */
export function previewCsp(remoteImages: boolean): string {
  return [
    "default-src 'none'", "style-src 'unsafe-inline'", `img-src data:${remoteImages ? ' https: http:' : ''}`, 'font-src data:',
    "base-uri 'none'", "form-action 'none'", "frame-ancestors 'self'",
  ].join('; ');
}
const PREVIEW_HTML = '<!doctype html>\n<html><head><meta charset="utf-8"><title>Message</title></head><body></body></html>\n';

function servePreview(ctx: Context): void {
  ctx.set('Content-Security-Policy', previewCsp(ctx.query.images === 'remote'));
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('X-Frame-Options', 'SAMEORIGIN');
  ctx.set('Cache-Control', 'public, max-age=86400');
  ctx.type = 'text/html; charset=utf-8';
  ctx.status = 200;
  ctx.body = PREVIEW_HTML;
}

const ASSET = /^\/app\/assets\/([A-Za-z0-9_-]+-[A-Z0-9]{8}\.(js|css))$/;
const TYPES: Record<string, string> = { js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8' };
const YEAR = 'public, max-age=31536000, immutable';

function secure(ctx: Context): void {
  ctx.set('Content-Security-Policy', CONSOLE_CSP);
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'same-origin');
  ctx.set('X-Frame-Options', 'DENY');
}

/** The encodings the client accepts (q=0 refuses one), brotli preferred. */
export function pickEncoding(accept: string): 'br' | 'gzip' | null {
  const accepted = new Map<string, number>();
  for (const part of accept.toLowerCase().split(',')) {
    const [name, ...params] = part.trim().split(';');
    if (!name) continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    accepted.set(name.trim(), q ? Number(q.slice(2)) : 1);
  }
  const ok = (enc: string) => (accepted.get(enc) ?? accepted.get('*') ?? 0) > 0;
  return ok('br') ? 'br' : ok('gzip') ? 'gzip' : null;
}

const notModified = (ctx: Context, etag: string) => ctx.get('If-None-Match').split(',').map((t) => t.trim()).includes(etag);

async function serveAsset(ctx: Context, dir: string, name: string, ext: string): Promise<void> {
  const encoding = pickEncoding(ctx.get('Accept-Encoding'));
  const file = path.join(dir, 'assets', name);
  const chosen = encoding ? `${file}.${encoding === 'br' ? 'br' : 'gz'}` : file;
  let body: Buffer;
  try {
    body = await readFile(chosen);
  } catch {
    ctx.status = 404;
    ctx.type = 'text/plain';
    ctx.set('Cache-Control', 'no-store');
    ctx.body = 'Not found: this console asset does not exist (an old page after an upgrade? Reload it).';
    return;
  }
  // The name carries the content's hash; the encoding tells the variants apart.
  const etag = `"${name}${encoding ? `-${encoding}` : ''}"`;
  ctx.set('Cache-Control', YEAR);
  ctx.set('ETag', etag);
  ctx.set('Vary', 'Accept-Encoding');
  ctx.type = TYPES[ext]!;
  if (encoding) ctx.set('Content-Encoding', encoding);
  if (notModified(ctx, etag)) {
    ctx.status = 304;
    return;
  }
  ctx.status = 200;
  ctx.body = body;
}

/**
 * What a visit that carries the session cookie also loads at once: GET /auth/session (who is signed in, their
 * projects), fetched while the scripts download instead of once they have run (web/session.tsx askSessionEarly's
 * fetch is answered from it; on the sign-in pages, main.tsx takes it too, so it is never left unused). Without the
 * cookie the answer would be a 401: no preload then.
 */
export const SESSION_PRELOAD = '<link rel="preload" href="/auth/session" as="fetch" crossorigin>';

/** A page route of the build (scripts/buildWeb.ts PageRoute): its path pattern and its chunks. */
interface PageRoute { path: string; js: string[] }

interface IndexPage { body: Buffer; etag: string }

/**
 * index.html as each request gets it: the build's file, plus what this request's page will ask for first, so the
 * browser fetches it with the first load instead of after the first load has run: the page's own chunks
 * (`modulepreload`, from build.json's routes) and, with the session cookie, SESSION_PRELOAD. Variants are made once
 * per build and cached; a new build (npm run build:web while Herald runs) is read again.
 */
function indexReader(dir: string) {
  let cached: { mtimeMs: number; html: string; routes: PageRoute[]; variants: Map<string, IndexPage> } | undefined;
  return async (requested: string, signedIn: boolean): Promise<IndexPage | undefined> => {
    const file = path.join(dir, 'index.html');
    const info = await stat(file).catch(() => undefined);
    if (!info) return undefined;
    if (cached?.mtimeMs !== info.mtimeMs) {
      const html = await readFile(file, 'utf8');
      const build = JSON.parse(await readFile(path.join(dir, 'build.json'), 'utf8').catch(() => '{}')) as { routes?: PageRoute[] };
      cached = { mtimeMs: info.mtimeMs, html, routes: build.routes ?? [], variants: new Map() };
    }
    const route = cached.routes.find((r) => routeMatches(r.path, requested));
    const key = `${route?.path ?? ''}|${signedIn}`;
    let page = cached.variants.get(key);
    if (!page) {
      const links = [
        ...(route?.js ?? []).map((js) => `<link rel="modulepreload" href="/app/assets/${js}">`),
        ...(signedIn ? [SESSION_PRELOAD] : []),
      ];
      const body = Buffer.from(links.length ? cached.html.replace('</head>', `${links.join('\n')}\n</head>`) : cached.html);
      page = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
      cached.variants.set(key, page);
    }
    return page;
  };
}

export function consoleApp(opts: { dir?: string } = {}): Middleware {
  const dir = opts.dir ?? CONSOLE_DIR;
  const index = indexReader(dir);
  return async (ctx: Context, next: Next) => {
    const { path: p } = ctx;
    if (p === '/' && (ctx.method === 'GET' || ctx.method === 'HEAD') && ctx.accepts('html') === 'html' && /text\/html/.test(ctx.get('Accept'))) {
      ctx.status = 302;
      ctx.redirect('/app');
      return;
    }
    if (p !== '/app' && !p.startsWith('/app/')) return next();
    secure(ctx);
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.status = 405;
      ctx.set('Allow', 'GET, HEAD');
      ctx.type = 'text/plain';
      ctx.body = 'The console is static: GET only.';
      return;
    }
    if (p === '/app/preview') return servePreview(ctx);
    if (p.startsWith('/app/assets/')) {
      const match = ASSET.exec(p);
      if (!match) {
        ctx.status = 404;
        ctx.type = 'text/plain';
        ctx.body = 'Not found.';
        return;
      }
      return serveAsset(ctx, dir, match[1]!, match[2]!);
    }
    const page = await index(p, sessionTokenOf(ctx) !== undefined);
    ctx.set('Cache-Control', 'no-cache');
    if (!page) {
      ctx.status = 503;
      ctx.type = 'text/plain';
      ctx.body = 'The console is not built: run `npm run build:web` (npm start does it), then reload.';
      return;
    }
    ctx.set('Vary', 'Cookie');
    ctx.set('ETag', page.etag);
    ctx.type = 'text/html; charset=utf-8';
    if (notModified(ctx, page.etag)) {
      ctx.status = 304;
      return;
    }
    ctx.status = 200;
    ctx.body = page.body;
  };
}
