import Router, { type RouterMiddleware } from '@koa/router';
import type { Knex } from 'knex';
import { notFound } from '../core/errors';
import { isUuid } from '../core/values';
import { allows, type Permission } from '../projects/roles';
import { forbidden } from './errors';
import { idempotent } from './idempotency';
import { authenticate, type AuthState } from './middleware/auth';
import { jsonBody } from './middleware/body';
import { uuidParam } from './openapi/operations';
import type { Call, JsonRoute, Lookup, OpenJsonRoute, Reply, Route } from './route';
import type { Services } from './services';
import { validateBody, validateQuery } from './validate';

/** What authentication leaves for the routes after it (api/middleware/auth.ts). */
export interface CallerState {
  auth: AuthState;
}

/** Sending bodies carry base64 attachments (10 MB decoded at most); every other body stays small. */
const LARGE_BODY_LIMIT = '15mb';

/** `/campaigns/…` → `Campaign`: the resource a path names, for its 404. */
function resourceOf(path: string): string {
  const collection = path.split('/')[1] ?? '';
  return collection.charAt(0).toUpperCase() + collection.slice(1).replace(/s$/, '');
}

/** What a path id that is no UUID is not found as, when not the resource of the path. */
const NOT_FOUND_AS: Record<string, string> = { executionId: 'Execution', deliveryId: 'Webhook delivery' };

/** The path's UUID parameters: those declared so, and those not declared at all (`:id`, `:executionId`). */
function uuidParams(route: Route): string[] {
  const names = route.path.match(/:([A-Za-z0-9_]+)/g)?.map((p) => p.slice(1)) ?? [];
  return names.filter((name) => route.params?.[name] === undefined || route.params[name] === uuidParam);
}

/**
 * Ids in paths are canonical UUIDs, matched case-insensitively as in bodies (schemas/common.ts uuidSchema): upper case
 * is lower-cased here, once for every route; any other spelling is no id at all, a 404 (core/values.ts isUuid).
 */
function checkUuids(route: Route): RouterMiddleware<CallerState> | undefined {
  const names = uuidParams(route);
  if (names.length === 0) return undefined;
  return (ctx, next) => {
    const params = ctx.params;
    for (const name of names) {
      const id = params[name]!.toLowerCase();
      if (!isUuid(id)) throw notFound(NOT_FOUND_AS[name] ?? resourceOf(route.path));
      params[name] = id;
    }
    return next();
  };
}

/**
 * The one check of what a caller may do (issue 27), for keys and sessions alike: before the path's ids are looked up,
 * so a caller without the permission learns nothing of what exists.
 */
function permit(route: JsonRoute): RouterMiddleware<CallerState> {
  const needs: Permission = route.permission;
  return (ctx, next) => {
    const { principal } = ctx.state.auth;
    if (!allows(principal, needs)) {
      const who = principal.kind === 'key' ? `This API key (scope ${principal.scope})` : `Your role (${principal.role})`;
      throw forbidden(`${who} may not ${route.summary.toLowerCase()}: it needs the ${needs} permission`,
        principal.kind === 'key' ? 'Use a key with the full scope, or sign in as a member allowed to.' : 'Ask an admin of the project for a role that allows it.');
    }
    return next();
  };
}

/** The handler of a JSON route: look up what the path names, validate, call, answer. */
function jsonHandler(route: JsonRoute, services: Services, knex: Knex): RouterMiddleware<CallerState> {
  return async (ctx) => {
    const lookup: Lookup<string> = { auth: ctx.state.auth, params: ctx.params, services };
    if (route.before) await route.before(lookup);
    const query = route.query ? validateQuery(ctx, route.query) : undefined;
    const body = route.body ? validateBody(ctx, route.body) : undefined;
    const call: Call<string, unknown, unknown> = {
      ...lookup, query, body,
      once: (work) => (route.idempotent && ctx.get('idempotency-key')
        ? idempotent(ctx, knex, lookup.auth.projectId, route.operationId, body, work)
        : work(undefined)),
    };
    const answer: Reply = await route.handle(call);
    ctx.status = answer.status;
    if (answer.body !== undefined) ctx.body = answer.body;
  };
}

/** The handler of an open JSON route (openRoute): no caller; validate the body, call, answer. */
function openHandler(route: OpenJsonRoute, services: Services): RouterMiddleware {
  return async (ctx) => {
    const body = route.body ? validateBody(ctx, route.body) : undefined;
    const answer = await route.handleOpen({ params: ctx.params, body, services, address: ctx.ip });
    ctx.status = answer.status;
    if (answer.body !== undefined) ctx.body = answer.body;
  };
}

export interface Routers {
  /** No API key: health, the document, metrics, and recipients' links (a signed token authorises). */
  open: Router;
  /** POST /v1/send: secret keys, large bodies. */
  sending: Router<CallerState>;
  /** POST /v1/track: secret or public keys (client-side tracking). */
  tracking: Router<CallerState>;
  /** Everything else: secret keys, small bodies. */
  management: Router<CallerState>;
}

/**
 * The Koa routers, built from the route table. Each router but the open one authenticates and rate-limits (one
 * round trip), then parses the body, so unauthenticated or throttled requests cost no body parsing; a route then
 * checks its path ids, looks up what they name, validates its query and body, and calls its handler.
 */
export function buildRouters(routes: readonly Route[], services: Services, deps: { knex: Knex; apiRateLimitPerMinute: number }): Routers {
  const authenticated = (accepts: AuthState['keyType'][], limit?: string) => {
    const router = new Router<CallerState>();
    router.use(authenticate(deps.knex, accepts, deps.apiRateLimitPerMinute), jsonBody(limit));
    return router;
  };
  const routers: Routers = {
    open: new Router(),
    sending: authenticated(['secret'], LARGE_BODY_LIMIT),
    tracking: authenticated(['secret', 'public']),
    management: authenticated(['secret']),
  };
  for (const route of routes) {
    if (route.available && !route.available(services)) continue;
    const methods = [route.method.toUpperCase()];
    if (route.serve) {
      const serve = route.serve;
      routers.open.register(route.path, methods, (ctx) => serve(ctx, services));
      continue;
    }
    if (route.handleOpen) {
      routers.open.register(route.path, methods, [jsonBody(), openHandler(route, services)]);
      continue;
    }
    if (route.access === 'open') throw new Error(`${route.operationId}: an open route is a rawRoute or an openRoute, having no caller`);
    const router = route.access === 'secretOrPublic' ? routers.tracking : route.largeBody ? routers.sending : routers.management;
    const uuids = checkUuids(route);
    router.register(route.path, methods, [permit(route), ...(uuids ? [uuids] : []), jsonHandler(route, services, deps.knex)]);
  }
  return routers;
}
