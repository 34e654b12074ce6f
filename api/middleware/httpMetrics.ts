import type { Middleware } from 'koa';
import { UNMATCHED_ROUTE, httpDuration } from '../../metrics/registry';

interface RouteLayer {
  path: string | RegExp;
  methods: string[];
}

/**
 * The route pattern a request matched, as its router declares it (`/contacts/:id`), never the raw path: ids and
 * tracking tokens in paths would make a series per request. @koa/router lists every layer whose path matched in
 * `ctx.matched` (the routers' own `use` layers too, which have no methods): the route is the last layer with methods
 * that takes the request's method; failing that (a 405), the last one whose path matched; none: UNMATCHED_ROUTE.
 */
export function routeOf(ctx: { matched?: RouteLayer[]; method: string }): string {
  const routes = (ctx.matched ?? []).filter((l) => l.methods.length > 0);
  const layer = routes.findLast((l) => l.methods.includes(ctx.method)) ?? routes.at(-1);
  return layer ? String(layer.path) : UNMATCHED_ROUTE;
}

/**
 * Times every request into herald_http_request_duration_seconds (metrics/registry.ts), by method, route pattern and
 * final status. Mounted outside the error handler, so that the status is the one the client got.
 */
export function httpMetrics(): Middleware {
  return async (ctx, next) => {
    const end = httpDuration.startTimer();
    try {
      await next();
    } finally {
      end({ method: ctx.method, route: routeOf(ctx as unknown as { matched?: RouteLayer[]; method: string }), status: String(ctx.status) });
    }
  };
}
