import { readFile } from 'node:fs/promises';
import Joi from 'joi';
import { serveMetrics } from '../metricsServer';
import { rawRoute } from '../route';
import * as A from '../schemas/answers';

/** The service's own routes: health, the API's description and its reference page, metrics. No API key. */

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

export const systemRoutes = [
  rawRoute({ operationId: 'health', method: 'get', path: '/health', summary: 'Health check', tag: 'Service', access: 'open',
    description: 'No key needed: 200 when the database answers, 503 otherwise (load balancers, compose healthchecks).',
    answers: { 200: { description: 'Herald and its database answer.', raw: A.healthAnswer }, 503: { description: 'The database does not answer.', raw: A.healthAnswer } },
    async serve(ctx, { health }) {
      const ok = await health.ping();
      ctx.status = ok ? 200 : 503;
      ctx.body = ok ? { status: 'ok' } : { status: 'unavailable', checks: { database: 'unreachable' } };
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
      bundle ??= readFile(REDOC_BUNDLE);
      ctx.set('Cache-Control', 'public, max-age=86400');
      ctx.set('X-Content-Type-Options', 'nosniff');
      ctx.type = 'application/javascript';
      ctx.body = await bundle;
    } }),
];
