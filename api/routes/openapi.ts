import { readFile } from 'node:fs/promises';
import type Router from '@koa/router';
import { openApiJson } from '../openapi/document';

/** Redoc's standalone bundle, as npm installed it (no CDN): read once, on the first request for it. */
const REDOC_BUNDLE = require.resolve('redoc/bundles/redoc.standalone.js');
let bundle: Promise<Buffer> | undefined;

/**
 * The reference page: Redoc renders the document in the browser. Paths are relative, so the page also works behind a
 * proxy that serves Herald under a prefix. Redoc's styles are injected at run time (styled-components), hence
 * 'unsafe-inline' for styles only; its search index runs in a blob: worker. Nothing else may load.
 */
const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Herald API reference</title></head>
<body><redoc spec-url="openapi.json"></redoc><script src="docs/redoc.standalone.js"></script></body></html>`;

const CSP = [
  "default-src 'none'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data:", "font-src 'self' data:",
  "connect-src 'self'", "worker-src 'self' blob:", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
].join('; ');

/** GET /openapi.json (the document, api/openapi/), GET /docs (the reference page) and the script it loads. No key needed. */
export function openApiRoutes(router: Router): void {
  router.get('/openapi.json', (ctx) => {
    ctx.type = 'json';
    ctx.body = openApiJson();
  });

  router.get('/docs', (ctx) => {
    ctx.set('Content-Security-Policy', CSP);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.type = 'html';
    ctx.body = PAGE;
  });

  router.get('/docs/redoc.standalone.js', async (ctx) => {
    bundle ??= readFile(REDOC_BUNDLE);
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.type = 'application/javascript';
    ctx.body = await bundle;
  });
}
