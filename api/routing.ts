import Router, { type RouterMiddleware } from '@koa/router';
import type { Knex } from 'knex';
import type { SessionConfig } from '../config';
import { notFound } from '../core/errors';
import { isUuid } from '../core/values';
import { sessionOf } from '../people/sessions';
import { allows, type Permission } from '../projects/roles';
import { clearedSessionCookie, fromOwnOrigin, originOf, sessionTokenOf } from './cookies';
import { ApiError, forbiddenFor } from './errors';
import { idempotent } from './idempotency';
import { authenticate, crossSite, SAFE_METHODS, type AuthState, type Permitted, type SessionAuth } from './middleware/auth';
import { jsonBody } from './middleware/body';
import { uuidParam } from './openapi/operations';
import type { Call, Client, JsonRoute, Lookup, PersonCall, PersonRoute, Reply, Route } from './route';
import type { Upload } from '../contacts/imports/imports';
import type { Services } from './services';
import { validateBody, validateQuery } from './validate';

/** What authentication leaves for the routes after it (api/middleware/auth.ts). */
export interface CallerState {
  auth: AuthState;
  /** What permit checked of the caller (api/middleware/auth.ts readAhead). */
  permitted?: Permitted;
}

/** Sending bodies carry base64 attachments (10 MB decoded at most); every other body stays small. */
const LARGE_BODY_LIMIT = '15mb';

/** `/campaigns/…` → `Campaign`: the resource a path names, for its 404. */
function resourceOf(path: string): string {
  // `/auth/sessions/:id` → Session: the people routes' collections sit under /auth.
  const collection = path.replace(/^\/auth\//, '/').split('/')[1] ?? '';
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
  const action = route.summary.toLowerCase();
  return (ctx, next) => {
    const { principal } = ctx.state.auth;
    if (!allows(principal, needs)) throw forbiddenFor(principal, action, needs);
    // A read that ran ahead of its admission checks this again against the caller admitted (api/middleware/auth.ts).
    ctx.state.permitted = { needs, action } satisfies Permitted;
    return next();
  };
}

/**
 * The handler of a JSON route: look up what the path names, validate, call, answer. A read (GET, HEAD) looks it up
 * beside its own work rather than before it (one database round trip, not two in a row), and the lookup's refusal (the
 * 404 of another project's id) still wins over whatever the work answered, a 400 of its query included: the answer is
 * the one the lookup first would give. A read changes nothing, so running it for an id then refused costs only the read.
 * A read whose handler looks the id up itself (`handleLooksUp`) runs the lookup only when the work refused the request.
 */
function jsonHandler(route: JsonRoute, services: Services, knex: Knex): RouterMiddleware<CallerState> {
  return async (ctx) => {
    const lookup: Lookup<string> = { auth: ctx.state.auth, params: ctx.params, services };
    const work = async () => {
      const query = route.query ? validateQuery(ctx, route.query) : undefined;
      const body = route.body ? validateBody(ctx, route.body) : undefined;
      const call: Call<string, unknown, unknown> = {
        ...lookup, query, body, upload: route.upload ? uploadOf(ctx) : undefined,
        once: (run) => (route.idempotent && ctx.get('idempotency-key')
          ? idempotent(ctx, knex, lookup.auth.projectId, route.operationId, body, run)
          : run(undefined)),
      };
      return route.handle(call);
    };
    if (route.before && SAFE_METHODS.has(ctx.method) && route.handleLooksUp) {
      let reply: Reply;
      try {
        reply = await work();
      } catch (err) {
        // Refused: the lookup's own refusal (another project's id) is the answer, whatever the work said.
        await route.before(lookup);
        throw err;
      }
      answer(ctx, reply);
      return;
    }
    if (route.before && SAFE_METHODS.has(ctx.method)) {
      const [looked, worked] = await Promise.allSettled([route.before(lookup), work()]);
      if (looked.status === 'rejected') throw looked.reason;
      if (worked.status === 'rejected') throw worked.reason;
      answer(ctx, worked.value);
      return;
    }
    if (route.before) await route.before(lookup);
    answer(ctx, await work());
  };
}

/**
 * An upload's body as it arrives (never parsed here). Sent compressed it is a 415: the file is stored as it is read,
 * and its size limit is the stored size.
 */
function uploadOf(ctx: Parameters<RouterMiddleware>[0]): Upload {
  const encoding = (ctx.get('content-encoding') || 'identity').trim().toLowerCase();
  if (encoding !== 'identity') {
    throw new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', `Unsupported Content-Encoding "${encoding}": a file is uploaded uncompressed`, {
      suggestion: 'Send the file without a Content-Encoding header.',
    });
  }
  return { stream: ctx.req, contentType: ctx.get('content-type'), length: ctx.request.length };
}

function answer(ctx: Parameters<RouterMiddleware>[0], reply: Reply): void {
  for (const [name, value] of Object.entries(reply.headers ?? {})) ctx.set(name, value);
  ctx.status = reply.status;
  if (reply.body !== undefined) ctx.body = reply.body;
}

/**
 * The handler of a people route (/auth/…). A `session` route needs a live session (people/sessions.ts sessionOf, one
 * statement); one that changes anything also its own origin, as on the project routes. The login (`open`) checks the
 * Origin when there is one: a cross-site page cannot sign a browser in to an account of its choosing.
 */
function personHandler(route: PersonRoute, services: Services, knex: Knex, sessions: SessionAuth): RouterMiddleware {
  return async (ctx) => {
    const token = sessionTokenOf(ctx);
    const client: Client = { address: ctx.ip, userAgent: ctx.get('user-agent') || undefined, sessionToken: token, secureCookies: sessions.secureCookies };
    const changes = !SAFE_METHODS.has(ctx.method);
    let person: PersonCall['person'];
    if (route.access === 'session') {
      if (changes && !fromOwnOrigin(ctx, sessions.publicOrigin)) throw crossSite();
      person = token ? await sessionOf(knex, token, sessions) : undefined;
      if (!person) {
        throw new ApiError(401, 'UNAUTHORIZED', token ? 'Session expired or ended: sign in again' : 'Not signed in', {
          suggestion: 'POST /auth/login with your email and password.',
          ...(token ? { headers: { 'Set-Cookie': clearedSessionCookie(sessions.secureCookies) } } : {}),
        });
      }
    } else if (ctx.get('origin') && !fromOwnOrigin(ctx, sessions.publicOrigin)) {
      throw crossSite();
    }
    const query = route.query ? validateQuery(ctx, route.query) : undefined;
    const body = route.body ? validateBody(ctx, route.body) : undefined;
    const call = { person, client, params: ctx.params, query, body, services } as PersonCall<string, unknown, unknown>;
    answer(ctx, await route.handle(call));
  };
}

export interface Routers {
  /** No API key: health, the document, metrics, and recipients' links (a signed token authorises). */
  open: Router;
  /** People's own routes (/auth/…): the login, and what a session may do whatever its projects. JSON bodies. */
  people: Router;
  /** POST /v1/send: secret keys, large bodies. */
  sending: Router<CallerState>;
  /** POST /v1/track: secret or public keys (client-side tracking). */
  tracking: Router<CallerState>;
  /** Everything else: secret keys, small bodies. */
  management: Router<CallerState>;
  /** Files (a contact import): secret keys or sessions, the body streamed to the route, not parsed. */
  uploads: Router<CallerState>;
}

/**
 * The Koa routers, built from the route table. Each router but the open one authenticates and rate-limits (one
 * round trip), then parses the body, so unauthenticated or throttled requests cost no body parsing; a route then
 * checks its path ids, looks up what they name, validates its query and body, and calls its handler.
 */
export function buildRouters(routes: readonly Route[], services: Services,
  deps: { knex: Knex; apiRateLimitPerMinute: number; publicUrl: string; sessions: SessionConfig }): Routers {
  const sessions: SessionAuth = {
    idleMinutes: deps.sessions.idleMinutes,
    publicOrigin: originOf(deps.publicUrl),
    secureCookies: deps.publicUrl.startsWith('https:'),
  };
  const authenticated = (accepts: AuthState['keyType'][], limit?: string | null) => {
    const router = new Router<CallerState>();
    router.use(authenticate(deps.knex, accepts, deps.apiRateLimitPerMinute, sessions));
    if (limit !== null) router.use(jsonBody(limit));
    return router;
  };
  const people = new Router();
  // Only the people routes' own paths parse a body here: the router runs its middleware for matched paths only.
  const routers: Routers = {
    open: new Router(),
    people,
    sending: authenticated(['secret'], LARGE_BODY_LIMIT),
    tracking: authenticated(['secret', 'public']),
    management: authenticated(['secret']),
    uploads: authenticated(['secret'], null),
  };
  for (const route of routes) {
    if (route.available && !route.available(services)) continue;
    const methods = [route.method.toUpperCase()];
    if (route.serve) {
      const serve = route.serve;
      routers.open.register(route.path, methods, (ctx) => serve(ctx, services));
      continue;
    }
    if (route.people) {
      const ids = checkUuids(route);
      people.register(route.path, methods, [...(ids ? [ids as RouterMiddleware] : []), jsonBody(), personHandler(route, services, deps.knex, sessions)]);
      continue;
    }
    if (route.access === 'open') throw new Error(`${route.operationId}: an open route serves its own answer (rawRoute), having no caller`);
    const router = route.access === 'secretOrPublic' ? routers.tracking : route.largeBody ? routers.sending : route.upload ? routers.uploads : routers.management;
    const uuids = checkUuids(route);
    router.register(route.path, methods, [permit(route), ...(uuids ? [uuids] : []), jsonHandler(route, services, deps.knex)]);
  }
  return routers;
}
