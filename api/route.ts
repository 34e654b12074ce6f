import type { RouterContext } from '@koa/router';
import type Joi from 'joi';
import type { Knex } from 'knex';
import type { Permission } from '../projects/roles';
import type { AuthState } from './middleware/auth';
import type { Operation } from './openapi/operations';
import type { Services } from './services';
import type { Upload } from '../contacts/imports/imports';

/**
 * One route, declared once (api/routes/*.ts, listed in api/routes/index.ts): what the OpenAPI document says of it
 * (Operation: method, path, schemas, answers, errors, access) and what answers it. api/routing.ts builds the Koa
 * routers from the same entries, api/openapi/document.ts the document, so the two cannot disagree.
 */

/** What a JSON route answers: its status and body (`reply` wraps data in the success envelope). */
export interface Reply {
  status: number;
  body?: unknown;
  /** Headers to set (the session cookie of /auth/login and /auth/logout). */
  headers?: Record<string, string | string[]>;
}

/** `{ success: true, data }`, 200 unless said otherwise. */
export const reply = (data: unknown, status = 200): Reply => ({ status, body: { success: true, data } });

/** Every DELETE of a resource answers this: 204, no body. */
export const deleted: Reply = { status: 204 };

/** `/webhooks/:id/deliveries/:deliveryId/redeliver` → `'id' | 'deliveryId'`. */
type ParamNames<P extends string> = P extends `${string}:${infer Name}/${infer Rest}` ? Name | ParamNames<`/${Rest}`> : P extends `${string}:${infer Name}` ? Name : never;

/** The path's parameters, by name. A UUID one arrives lower-cased and checked (a 404 otherwise: api/routing.ts). */
export type Params<P extends string> = { readonly [K in ParamNames<P>]: string };

/** What a handler is given: the caller (typed once, here), its validated request, and the app's services. */
export interface Call<P extends string = string, B = undefined, Q = undefined> {
  auth: AuthState;
  params: Params<P>;
  body: B;
  query: Q;
  services: Services;
  /** An `upload` operation's body: the request's bytes as they arrive, its media type and announced length. */
  upload: Upload | undefined;
  /**
   * For an `idempotent` operation: runs `work` once per Idempotency-Key (api/idempotency.ts), in the transaction that
   * also stores its answer, and answers a replay with the first answer; without the header, `work` runs at once with
   * no transaction of its own (`undefined`).
   */
  once(work: (trx: Knex.Transaction | undefined) => Promise<Reply>): Promise<Reply>;
}

/** What runs before the query and body are validated (see `before`). */
export type Lookup<P extends string> = Pick<Call<P>, 'auth' | 'params' | 'services'>;

/** What a route declares besides its operation. */
interface Serving {
  /** Bodies up to 15 MB (base64 attachments); every other route takes 1 MB at most. */
  largeBody?: true;
  /** Whether the app serves the route (GET /metrics moves to METRICS_PORT when it is set). */
  available?(services: Services): boolean;
}

/** A JSON route: the common case. */
export interface JsonRoute<P extends string = string, B = unknown, Q = unknown> extends Omit<Operation, 'path' | 'body' | 'query' | 'permission'>, Serving {
  path: P;
  /** What the caller must be allowed (projects/roles.ts): checked by the routers before anything else of the route. */
  permission: Permission;
  body?: Joi.ObjectSchema<B>;
  query?: Joi.ObjectSchema<Q>;
  /**
   * Runs first, before the query and body are looked at: what the path names must exist in the caller's project,
   * so that another project's id is a 404 whatever the body says. On a read (GET, HEAD) it runs beside the route's work
   * instead, and its refusal still wins over what the work answered (api/routing.ts jsonHandler).
   */
  before?(call: Lookup<P>): Promise<unknown>;
  /**
   * A read whose `handle` refuses another project's id itself (its service looks the id up, a 404: before its page, or
   * after a page that came back empty):
   * `before` then runs only when the work refused the request, so that its 404 still wins over a 400 of the query, and
   * a page that is answered costs one lookup at most, not the same one twice side by side.
   */
  handleLooksUp?: true;
  handle(call: Call<P, B, Q>): Promise<Reply>;
}

/** The person a session names, on the /auth routes (no project). */
export interface Person {
  userId: string;
  sessionId: string;
  email: string;
  name: string;
  operator: boolean;
  createdAt: Date;
  expiresAt: Date;
}

/** The client of a request, as the /auth routes need it: its address (TRUST_PROXY_HOPS), user agent and cookie. */
export interface Client {
  address: string;
  userAgent: string | undefined;
  /** The `herald_session` cookie's value, if any. */
  sessionToken: string | undefined;
  /** Whether cookies must be `Secure` (PUBLIC_URL is https). */
  secureCookies: boolean;
}

/** What a people route's handler is given: the person (a `session` route) or nobody (`open`: the login). */
export interface PersonCall<P extends string = string, B = undefined, Q = undefined, A extends 'open' | 'session' = 'open' | 'session'> {
  person: A extends 'session' ? Person : undefined;
  client: Client;
  params: Params<P>;
  body: B;
  query: Q;
  services: Services;
}

/**
 * A route of people themselves (/auth/…): no project and no key. `open` (the login) takes anyone; `session` a person
 * signed in, whatever their projects. JSON in and out, as a JsonRoute.
 */
export interface PersonRoute<P extends string = string, B = unknown, Q = unknown, A extends 'open' | 'session' = 'open' | 'session'>
  extends Omit<Operation, 'path' | 'body' | 'query' | 'permission' | 'access'>, Serving {
  access: A;
  people: true;
  path: P;
  body?: Joi.ObjectSchema<B>;
  query?: Joi.ObjectSchema<Q>;
  handle(call: PersonCall<P, B, Q, A>): Promise<Reply>;
}

/**
 * A route that writes its own answer on the Koa context: other media than JSON (HTML pages, the pixel, a redirect,
 * the document, metrics) or an answer outside the envelope (GET /health). Open routes only: no caller to type.
 */
export interface RawRoute extends Operation, Serving {
  access: 'open';
  serve(ctx: RouterContext, services: Services): Promise<void> | void;
}

export type Route = (JsonRoute<string, unknown, unknown> & { serve?: undefined; people?: undefined })
  | (RawRoute & { handle?: undefined; people?: undefined })
  | (PersonRoute<string, unknown, unknown> & { serve?: undefined; permission?: undefined });

/**
 * A JSON route, its handler typed by its declaration: `params` by the path, `body` and `query` by their schemas. No
 * body schema: `body` is undefined (nothing is read); likewise the query.
 */
export function route<P extends string, B = undefined, Q = undefined>(r: JsonRoute<P, B, Q>): Route {
  return r as unknown as Route;
}

/** A people route (/auth/…), its handler typed by its declaration as `route`'s. */
export function personRoute<P extends string, B = undefined, Q = undefined, A extends 'open' | 'session' = 'session'>(r: PersonRoute<P, B, Q, A>): Route {
  return r as unknown as Route;
}

export function rawRoute(r: RawRoute): Route {
  return r;
}
