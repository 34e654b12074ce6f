import { readFile } from 'node:fs/promises';
import path from 'node:path';
import Joi from 'joi';
import type { Context } from 'koa';
import { HERALD_VERSION } from '../../core/version';
import { guide } from '../guide';
import { serveMetrics } from '../metricsServer';
import { rawRoute } from '../route';
import * as A from '../schemas/answers';

/**
 * The service's own routes: health, the API's description, its reference page and guide, Herald's icon, metrics. No API
 * key.
 */

/** Redoc's standalone bundle, as npm installed it (no CDN): read once, on the first request for it. */
const REDOC_BUNDLE = require.resolve('redoc/bundles/redoc.standalone.js');
/**
 * Redoc 2 draws "API docs by Redocly" under its menu with an image from cdn.redoc.ly, whatever its options: the only
 * request the page would make to another origin (the CSP refuses it, with an error in the console). The image's URL is
 * replaced by an empty data: URL, which fails to load, and Redoc then leaves the image out (its onError); the credit's
 * text stays. A Redoc without this URL fails the reference page test rather than passing unnoticed.
 */
const REDOCLY_LOGO = '"https://cdn.redoc.ly/redoc/logo-mini.svg"';
let bundle: Promise<Buffer> | undefined;
const readBundle = () => readFile(REDOC_BUNDLE, 'utf8').then((source) => {
  if (!source.includes(REDOCLY_LOGO)) throw new Error(`${REDOC_BUNDLE} no longer has ${REDOCLY_LOGO}: see api/routes/system.ts`);
  return Buffer.from(source.replace(REDOCLY_LOGO, '"data:,"'));
});

/** The files of Herald's own pages (api/assets/): the icon, the reference's start script, the guide's styles. */
const ASSETS = path.join(__dirname, '..', 'assets');
const assets = new Map<string, Promise<Buffer>>();
const asset = (name: string) => {
  let file = assets.get(name);
  if (!file) assets.set(name, file = readFile(path.join(ASSETS, name)));
  return file;
};

/**
 * The reference page: Redoc renders the document in the browser, started by docs/reference.js (no inline script).
 * Paths are relative, so the page also works behind a proxy that serves Herald under a prefix. Redoc's styles are
 * injected at run time (styled-components), hence 'unsafe-inline' for styles only; its search index runs in a blob:
 * worker. Nothing else may load, and nothing from another origin.
 */
const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Herald API reference · ${HERALD_VERSION}</title><link rel="icon" href="favicon.svg" type="image/svg+xml"></head>
<body><div id="redoc"></div><script src="docs/redoc.standalone.js"></script><script src="docs/reference.js"></script></body></html>`;

const CSP = [
  "default-src 'none'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data:", "font-src 'self' data:",
  "connect-src 'self'", "worker-src 'self' blob:", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
].join('; ');

/** The guide: no script at all, its styles from Herald. */
const GUIDE_CSP = ["default-src 'none'", "style-src 'self'", "img-src 'self'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'"].join('; ');

/** A file of Herald's own pages, cached for a day (the names do not change with the content: a day is the staleness bound). */
function serveAsset(ctx: Context, type: string, body: Buffer): void {
  ctx.set('Cache-Control', 'public, max-age=86400');
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.type = type;
  ctx.body = body;
}

export const systemRoutes = [
  rawRoute({ operationId: 'health', method: 'get', path: '/health', summary: 'Health check', tag: 'Service', access: 'open',
    description: 'No key needed: 200 when the database answers, 503 when it does not within HEALTH_TIMEOUT_MS (2 s by default) (load balancers, compose healthchecks).',
    answers: { 200: { description: 'Herald and its database answer.', raw: A.healthyAnswer }, 503: { description: 'The database does not answer.', raw: A.unhealthyAnswer } },
    async serve(ctx, { health }) {
      const ok = await health.ping();
      ctx.status = ok ? 200 : 503;
      ctx.body = ok ? A.HEALTHY : A.UNHEALTHY;
    } }),

  rawRoute({ operationId: 'getOpenApiDocument', method: 'get', path: '/openapi.json', summary: 'This OpenAPI document', tag: 'Service', access: 'open',
    answers: { 200: { description: 'The OpenAPI 3.1 document of this API.', raw: Joi.object().unknown(true) } },
    serve(ctx, services) {
      ctx.type = 'json';
      ctx.body = services.openApi.json();
    } }),

  rawRoute({ operationId: 'getMetrics', method: 'get', path: '/metrics', summary: 'Prometheus metrics', tag: 'Service', access: 'open',
    description: 'The Prometheus text exposition (docs/api.md, "Metrics"). No API key: when METRICS_TOKEN is set, `Authorization: Bearer <METRICS_TOKEN>` is required (401 otherwise). With METRICS_PORT set it is served on that port instead, and this one answers 404.',
    answers: { 200: { description: 'The metrics, in the Prometheus text format 0.0.4.', media: 'text' } }, errors: [401],
    // Not served here when METRICS_PORT serves it (no route: a 404).
    available: (services) => services.metrics !== undefined,
    serve: (ctx, { metrics }) => serveMetrics(ctx, metrics!.metrics, metrics!.token) }),

  rawRoute({ operationId: 'getReference', method: 'get', path: '/docs', summary: 'API reference page (Redoc)', tag: 'Service', access: 'open',
    answers: { 200: { description: 'The reference rendered by Redoc, served by Herald itself.', media: 'html' } },
    serve(ctx) {
      ctx.set('Content-Security-Policy', CSP);
      ctx.set('X-Content-Type-Options', 'nosniff');
      ctx.type = 'html';
      ctx.body = PAGE;
    } }),

  rawRoute({ operationId: 'getReferenceScript', method: 'get', path: '/docs/redoc.standalone.js', summary: 'Redoc script of the reference page', tag: 'Service', access: 'open',
    answers: { 200: { description: "Redoc's standalone bundle.", media: 'javascript' } },
    async serve(ctx) {
      bundle ??= readBundle();
      serveAsset(ctx, 'application/javascript', await bundle);
    } }),

  rawRoute({ operationId: 'getReferenceStart', method: 'get', path: '/docs/reference.js', summary: 'Start script of the reference page', tag: 'Service', access: 'open',
    description: 'Starts Redoc with its options (the system font stack: nothing from Google Fonts).',
    answers: { 200: { description: 'The script.', media: 'javascript' } },
    async serve(ctx) {
      serveAsset(ctx, 'application/javascript', await asset('reference.js'));
    } }),

  rawRoute({ operationId: 'getGuide', method: 'get', path: '/docs/guide', summary: 'The API guide (docs/api.md)', tag: 'Service', access: 'open',
    description: 'docs/api.md rendered as a page: concepts, limits and behaviours. Its headings have the ids GitHub gives them (`#api-keys`).',
    answers: { 200: { description: 'The guide.', media: 'html' } },
    async serve(ctx) {
      const page = await guide(HERALD_VERSION);
      ctx.set('Content-Security-Policy', GUIDE_CSP);
      ctx.set('X-Content-Type-Options', 'nosniff');
      ctx.type = 'html';
      ctx.body = page.html;
    } }),

  rawRoute({ operationId: 'getGuideStyles', method: 'get', path: '/docs/guide.css', summary: 'Styles of the guide page', tag: 'Service', access: 'open',
    answers: { 200: { description: 'The stylesheet.', media: 'css' } },
    async serve(ctx) {
      serveAsset(ctx, 'text/css', await asset('guide.css'));
    } }),

  rawRoute({ operationId: 'getIcon', method: 'get', path: '/favicon.svg', summary: "Herald's icon", tag: 'Service', access: 'open',
    description: "Herald's mark (SVG), for the reference, the guide and the console.",
    answers: { 200: { description: 'The icon.', media: 'svg' } },
    async serve(ctx) {
      serveAsset(ctx, 'image/svg+xml', await asset('favicon.svg'));
    } }),

  rawRoute({ operationId: 'getFavicon', method: 'get', path: '/favicon.ico', summary: "Herald's icon, where browsers look for it", tag: 'Service', access: 'open',
    description: 'The same SVG as /favicon.svg, for a browser that asks for /favicon.ico on a page that names no icon.',
    answers: { 200: { description: 'The icon.', media: 'svg' } },
    async serve(ctx) {
      serveAsset(ctx, 'image/svg+xml', await asset('favicon.svg'));
    } }),
];
