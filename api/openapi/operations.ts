import Joi from 'joi';
import type { Permission } from '../../projects/roles';

/**
 * What the OpenAPI document (api/openapi/document.ts) says of an operation, and the helpers that write it. Each route
 * declares its operation in its own entry of the route table (api/routes/*.ts, api/route.ts), beside its handler:
 * method and path as the router spells them, the Joi schemas that validate its request, its answers, the error
 * statuses it can give and who may call it. The routers are built from the same entries (api/routing.ts).
 */

/**
 * Who may call: nobody needs a key; secret keys (or a person's session naming the project: Herald-Project); secret
 * and public keys (POST /v1/track); or a person signed in, whatever the project (`session`: the /auth routes).
 */
export type Access = 'open' | 'secret' | 'secretOrPublic' | 'session';

export type Media = 'json' | 'html' | 'gif' | 'javascript' | 'text' | 'css' | 'svg' | 'mime' | 'csv' | 'jsonl' | 'binary' | 'none';

export interface Answer {
  description: string;
  /** The `data` of the success envelope; `raw` is the whole body (GET /health); absent for no body. */
  data?: Joi.Schema;
  raw?: Joi.Schema;
  /** The whole body a person would see, where the schema's own examples do not compose it (api/openapi/examples.ts). */
  example?: unknown;
  /** Several: the request chooses (GET /contacts/export's `format`). */
  media?: Media | Media[];
  headers?: Record<string, string>;
}

export interface Link {
  /** The operation to call next, with the created resource's field as its path parameter. */
  operationId: string;
  parameters: Record<string, string>;
}

export interface Operation {
  operationId: string;
  method: 'get' | 'post' | 'patch' | 'delete';
  /** As @koa/router has it (`/contacts/:id`). */
  path: string;
  summary: string;
  description?: string;
  tag: string;
  access: Access;
  /** What a caller of a non-open operation must be allowed (projects/roles.ts); the document prints it. */
  permission?: Permission;
  /** The JSON body's schema; its absence means the route reads no body. */
  body?: Joi.ObjectSchema;
  /**
   * The body is a file, not JSON: these media types, streamed to the handler (`call.upload`), never parsed or held
   * whole (a contact import). Its options are in the query.
   */
  upload?: readonly string[];
  /** Whether the body may be left out (POST /campaigns/:id/send sends now with none). */
  bodyOptional?: boolean;
  query?: Joi.ObjectSchema;
  /** Path parameters' schemas; `:id` and `:executionId` are UUIDs unless said otherwise. */
  params?: Record<string, Joi.Schema>;
  /** Honours the Idempotency-Key header (api/idempotency.ts). */
  idempotent?: boolean;
  answers: Record<number, Answer>;
  /** Error statuses beyond those every route of its kind can give (see document.ts commonErrors). */
  errors?: number[];
  links?: Record<string, Link>;
}

/** A path id; the routers check and lower-case every parameter declared so, or not declared (api/routing.ts). */
export const uuidParam = Joi.string().guid().description('A UUID (upper case is accepted and lower-cased); anything else is a 404.');
export const token = Joi.string().description('The signed token from the link in the email.');

export const ok = (description: string, data: Joi.Schema): Record<number, Answer> => ({ 200: { description, data } });
export const created = (description: string, data: Joi.Schema): Record<number, Answer> => ({ 201: { description, data } });
export const noContent = (description: string): Record<number, Answer> => ({ 204: { description, media: 'none' } });

/** The first item of a list answer, to an operation that takes its id (with the list's own path id, if any). */
export const first = (operationId: string, param = 'id', parent?: string): Record<string, Link> => ({
  [operationId]: { operationId, parameters: { ...(parent ? { [parent]: `$request.path.${parent}` } : {}), [param]: '$response.body#/data/items/0/id' } },
});

/** Links from a create answer to the get, patch and delete of what it created (stateful testing, clients). */
export function crud(kind: string, id = '$response.body#/data/id', param = 'id', ops: string[] = ['get', 'update', 'delete']): Record<string, Link> {
  const links: Record<string, Link> = {};
  // `get` is getContact for kind Contact; `sendCampaign:` names its operation whole.
  for (const op of ops) {
    const operationId = op.endsWith(':') ? op.slice(0, -1) : `${op}${kind}`;
    links[operationId] = { operationId, parameters: { [param]: id } };
  }
  return links;
}
