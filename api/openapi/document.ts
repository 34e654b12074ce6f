import Joi from 'joi';
import { IDEMPOTENCY_KEY } from '../idempotency';
import { errorAnswer, successOf } from '../schemas/answers';
import { HERALD_VERSION } from '../../core/version';
import { exampleOf } from './examples';
import { jsonSchemaOf } from './jsonSchema';
import { permissionLine } from '../../projects/roles';
import { ROUTES } from '../routes';
import { uuidParam, type Answer, type Operation } from './operations';

type Json = Record<string, unknown>;

const MEDIA: Record<string, string> = {
  json: 'application/json', html: 'text/html', gif: 'image/gif', javascript: 'application/javascript', text: 'text/plain', css: 'text/css', svg: 'image/svg+xml',
  mime: 'message/rfc822', csv: 'text/csv', jsonl: 'application/x-ndjson', binary: 'application/octet-stream',
};

const ERROR_TEXT: Record<number, string> = {
  400: 'Bad request: a body that is not a JSON object, malformed JSON, a Content-Type other than JSON, an invalid query parameter or cursor, an invalid Idempotency-Key, or with a session a missing or malformed Herald-Project header.',
  401: 'Missing, malformed or unknown API key; or a session that ended or expired (sign in again), or a wrong login.',
  403: 'The project is disabled (PROJECT_DISABLED); a public key (pk_) where only secret keys are accepted; a caller without the operation\'s permission; or a request with a session from another origin.',
  404: 'Not found in the caller\'s project (a foreign id is not found); with a session, also a Herald-Project that is not one of the person\'s projects.',
  409: 'Conflict: the state refuses the request, an Idempotency-Key reused with another body, or something it names was deleted meanwhile; on a read with a session, ACCESS_CHANGED: the member\'s role changed while it ran, send it again.',
  413: 'The body is too large (15 MB on POST /v1/send, 1 MB elsewhere).',
  415: 'Unsupported Content-Encoding (identity, gzip, deflate and br are accepted).',
  422: 'Validation failed: `error.errors` names every offending field.',
  429: 'Rate limited (API_RATE_LIMIT_PER_MINUTE per project), or too many failed logins; Retry-After says when to retry.',
};

/** What each error answer of the document shows (api/middleware/errorHandler.ts writes them so). */
const ERROR_EXAMPLE: Record<number, { code: string; message: string; errors?: { field: string; message: string; code: string }[]; suggestion?: string }> = {
  400: { code: 'BAD_REQUEST', message: 'Invalid cursor', errors: [{ field: 'cursor', message: 'cursor is not one this API returned', code: 'invalid_cursor' }] },
  401: { code: 'UNAUTHORIZED', message: 'Invalid API key', suggestion: 'The key is unknown or was revoked (GET /keys lists a project\'s live keys).' },
  403: { code: 'FORBIDDEN', message: 'A viewer may not create a webhook: it needs the admin permission' },
  404: { code: 'NOT_FOUND', message: 'Contact not found' },
  409: { code: 'CONFLICT', message: 'The Idempotency-Key was used with another body' },
  413: { code: 'PAYLOAD_TOO_LARGE', message: 'Request body is too large', suggestion: 'Send a smaller body.' },
  415: { code: 'UNSUPPORTED_MEDIA_TYPE', message: 'Unsupported Content-Encoding "compress"' },
  422: { code: 'VALIDATION_ERROR', message: 'to must be a valid email', errors: [{ field: 'to', message: 'to must be a valid email', code: 'invalid_string' }] },
  429: { code: 'RATE_LIMITED', message: 'Rate limit of 600 requests per minute exceeded', suggestion: 'Retry after 42 seconds.' },
};

/** The error envelope with both shapes (api/middleware/errorHandler.ts), as a person would see it. */
function errorExample(status: number): Json {
  const { code, message, errors, suggestion } = ERROR_EXAMPLE[status]!;
  return {
    success: false,
    error: { code, message, statusCode: status, requestId: '0197a3c4-5e2f-7a10-8b3c-4d5e6f7a8b9c', ...(errors ? { errors } : {}), ...(suggestion ? { suggestion } : {}) },
    timestamp: '2025-06-02T09:41:07.512Z',
    code: status,
    message,
    time: 1748857267512,
  };
}

/**
 * What the reference says first (Markdown, rendered by Redoc at /docs). Its links are relative to the page at /docs, so
 * they hold behind a proxy that serves Herald under a prefix: `app` is the console, `docs/guide` docs/api.md.
 */
const DESCRIPTION = `Herald is an open-source, self-hostable email platform: transactional sending, contacts and events, templates,
campaigns, segments, automations, sending domains and webhooks, behind this one REST API. This reference is generated from the
Joi schemas that validate every request and shape every answer, so it says exactly what Herald accepts and answers.

- **[The guide](docs/guide)** (docs/api.md): concepts, limits and behaviours that a schema cannot say: sending, tracking,
  subscriptions, suppressions, campaigns, automations, webhooks, people and roles.
- **[The console](app)**: the same API for people, in the browser.
- **[This document](openapi.json)** as OpenAPI 3.1 JSON, for tools and typed clients.

## Authentication

| Caller | Send |
|---|---|
| A server (every route its scope allows) | a secret key: \`Authorization: Bearer sk_…\` (\`full\` or \`sending\`; POST /keys makes more) |
| A browser that tracks events (POST /v1/track only) | a public key: \`Authorization: Bearer pk_…\` |
| A person signed in (the console) | the \`herald_session\` cookie of POST /auth/login, and \`Herald-Project: <project id>\` on project routes |

The project is the key's own. Each operation says the permission it needs (\`read\`, \`send\`, \`write\`, \`admin\`, \`owner\`).

## Answers

Every success is \`{ "success": true, "data": … }\` (GET /health and this document aside); every error is the envelope of
the Error schema, whose \`error.errors\` names each refused field. Lists are pages: pass \`nextCursor\` as \`cursor\`.`;

const WITH_BODY = new Set(['post', 'patch', 'delete']);

/** The error statuses an operation can give: those of its router's middleware, of its parameters and of its business. */
export function errorStatuses(op: Operation): number[] {
  const codes = new Set<number>(op.errors ?? []);
  if (op.access === 'session') {
    // A person signed in, no project: no rate window; 403 for a request from another origin.
    [401, 403].forEach((c) => codes.add(c));
    if (WITH_BODY.has(op.method)) [400, 413, 415].forEach((c) => codes.add(c));
    if (/:(id)\b/.test(op.path)) codes.add(404);
  } else if (op.access !== 'open') {
    // 404: with a session, a Herald-Project that is not one of the person's projects (api/middleware/auth.ts).
    [401, 403, 404, 429].forEach((c) => codes.add(c));
    // jsonBody (api/middleware/body.ts) reads the body of every POST, PATCH and DELETE, whether the route uses it or not.
    if (WITH_BODY.has(op.method)) [400, 413, 415].forEach((c) => codes.add(c));
    // A POST or PATCH writes rows that refer to others: one deleted meanwhile is a 409 (errorHandler.ts, 23503).
    if (op.method === 'post' || op.method === 'patch') codes.add(409);
    // With a session, a read that ran beside its admission while the member's role changed: ACCESS_CHANGED, to send
    // again (api/middleware/auth.ts readAhead).
    if (op.method === 'get') codes.add(409);
    if (/:(id|executionId|deliveryId)\b/.test(op.path)) codes.add(404);
  }
  if (op.body || op.upload) codes.add(422);
  if (op.query) codes.add(400);
  if (op.idempotent) [400, 409].forEach((c) => codes.add(c));
  for (const status of Object.keys(op.answers)) codes.delete(Number(status));
  return [...codes].sort((a, b) => a - b);
}

/** `/contacts/:id` → `/contacts/{id}`. */
export const openApiPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

function parametersOf(op: Operation): Json[] {
  const params: Json[] = [];
  for (const name of op.path.match(/:([A-Za-z0-9_]+)/g)?.map((p) => p.slice(1)) ?? []) {
    const given = op.params?.[name];
    const schema = given ? jsonSchemaOf(given) : jsonSchemaOf(uuidParam);
    const { description, ...rest } = schema;
    params.push({ name, in: 'path', required: true, schema: rest, ...(description ? { description } : {}) });
  }
  if (op.query) {
    const schema = jsonSchemaOf(op.query) as { properties?: Record<string, Json>; required?: string[] };
    for (const [name, prop] of Object.entries(schema.properties ?? {})) {
      const { description, ...rest } = prop;
      params.push({ name, in: 'query', required: schema.required?.includes(name) ?? false, schema: rest, ...(description ? { description } : {}) });
    }
  }
  if (op.idempotent) params.push({ $ref: '#/components/parameters/IdempotencyKey' });
  return params;
}

/**
 * A JSON media type with its example: the one the answer gives, else the one composed from the schema's
 * (api/openapi/examples.ts). A schema without a whole example gets none; test/api/openapi.test.ts names the fields that
 * lack one. The schemas a `$ref` names are in `components` already: jsonSchemaOf put them there with the schema.
 */
function withExample(schema: Json, given: unknown, components: Json): Json {
  if (given !== undefined) return { schema, example: given };
  const { value, missing } = exampleOf(schema, components);
  return missing.length ? { schema } : { schema, example: value };
}

function responseOf(answer: Answer, components: Json): Json {
  const medias = Array.isArray(answer.media) ? answer.media : [answer.media ?? 'json'];
  const response: Json = { description: answer.description };
  if (answer.headers) {
    response.headers = Object.fromEntries(Object.entries(answer.headers).map(([name, description]) => [name, { description, schema: jsonSchemaOf(Joi.string()) }]));
  }
  if (medias.includes('none')) return response;
  response.content = Object.fromEntries(medias.map((media) => {
    const schema: Json = media === 'json'
      ? jsonSchemaOf(answer.raw ?? successOf(answer.data as Joi.Schema), components)
      : media === 'gif' || media === 'svg' ? { type: 'string', contentMediaType: MEDIA[media] } : { type: 'string' };
    return [MEDIA[media]!, media === 'json' ? withExample(schema, answer.example, components) : { schema }];
  }));
  return response;
}

/** Headers of every answer (api/middleware/requestId.ts), of every authenticated one (auth.ts), and of a replay (idempotency.ts). */
const HEADERS: Record<string, { description: string; schema: Joi.Schema }> = {
  'X-Request-Id': { description: 'The request id (an incoming sane X-Request-Id is reused); also `error.requestId`.', schema: Joi.string() },
  'RateLimit-Limit': { description: 'Requests per minute allowed to the project.', schema: Joi.string().pattern(/^[0-9]+$/) },
  'RateLimit-Remaining': { description: 'Requests left in the current window.', schema: Joi.string().pattern(/^[0-9]+$/) },
  'RateLimit-Reset': { description: 'Seconds until the window resets.', schema: Joi.string().pattern(/^[0-9]+$/) },
  'Idempotent-Replayed': { description: '`true` when the answer is the replay of an earlier request with the same Idempotency-Key.', schema: Joi.string().valid('true') },
};

function headersOf(op: Operation, success: boolean): Json {
  const names = ['X-Request-Id', ...(op.access === 'open' || op.access === 'session' ? [] : ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']), ...(op.idempotent && success ? ['Idempotent-Replayed'] : [])];
  return Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${name}` }]));
}

/** A session (with Herald-Project) is accepted wherever a secret key is (api/middleware/auth.ts). */
const SECURITY: Record<Operation['access'], Json[]> = {
  open: [],
  secret: [{ secretKey: [] }, { sessionCookie: [], projectHeader: [] }],
  secretOrPublic: [{ secretKey: [] }, { publicKey: [] }, { sessionCookie: [], projectHeader: [] }],
  session: [{ sessionCookie: [] }],
};

function operationOf(op: Operation, components: Json): Json {
  const responses: Json = {};
  for (const [status, answer] of Object.entries(op.answers)) {
    const response = responseOf(answer, components);
    response.headers = { ...headersOf(op, Number(status) < 300), ...(response.headers as Json | undefined) };
    if (op.links && Number(status) >= 200 && Number(status) < 300) response.links = op.links;
    responses[status] = response;
  }
  for (const status of errorStatuses(op)) responses[String(status)] = { $ref: `#/components/responses/Error${status}` };
  // What the caller needs (projects/roles.ts), in the description for people and as x-herald-permission for tools.
  const description = [op.description, op.permission ? permissionLine(op.permission) : undefined].filter(Boolean).join('\n\n');
  const operation: Json = {
    operationId: op.operationId,
    summary: op.summary,
    ...(description ? { description } : {}),
    tags: [op.tag],
    security: SECURITY[op.access],
    ...(op.permission ? { 'x-herald-permission': op.permission } : {}),
  };
  const parameters = parametersOf(op);
  if (parameters.length) operation.parameters = parameters;
  if (op.body) {
    operation.requestBody = { required: !op.bodyOptional, content: { 'application/json': withExample(jsonSchemaOf(op.body), undefined, components) } };
  }
  if (op.upload) {
    // A file, streamed: any of these media types, its bytes as they are.
    operation.requestBody = { required: true, content: Object.fromEntries(op.upload.map((type) => [type, { schema: { type: 'string', contentMediaType: type } }])) };
  }
  operation.responses = responses;
  return operation;
}

function build(): Json {
  const paths: Record<string, Json> = {};
  // The answers' named shapes (Joi `.id()`: Contact, Campaign, Error…), referred to by $ref.
  const components: Json = {};
  for (const op of ROUTES) {
    const path = openApiPath(op.path);
    paths[path] = { ...(paths[path] ?? {}), [op.method]: operationOf(op, components) };
  }
  jsonSchemaOf(errorAnswer, components);
  const responses = Object.fromEntries(Object.entries(ERROR_TEXT).map(([status, description]) => [`Error${status}`, {
    description,
    headers: {
      'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
      ...(status === '429' ? { 'Retry-After': { description: 'Seconds until the window resets.', schema: jsonSchemaOf(Joi.string().pattern(/^[0-9]+$/)) } } : {}),
    },
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, example: errorExample(Number(status)) } },
  }]));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Herald API',
      version: HERALD_VERSION,
      description: DESCRIPTION,
      license: { name: 'MIT', identifier: 'MIT' },
    },
    tags: [...new Set(ROUTES.map((o) => o.tag))].map((name) => ({ name })),
    security: [{ secretKey: [] }],
    paths,
    components: {
      securitySchemes: {
        secretKey: { type: 'http', scheme: 'bearer', description: 'A secret key, `sk_` followed by 40 letters and digits: every route that needs a key. Never in a browser.' },
        publicKey: { type: 'http', scheme: 'bearer', description: 'A public key, `pk_…`: accepted by POST /v1/track only (client-side tracking).' },
        sessionCookie: { type: 'apiKey', in: 'cookie', name: 'herald_session', description: 'A person\'s session, set by POST /auth/login. On a project route it goes with `Herald-Project`; a request that changes anything must come from Herald\'s own origin (`Origin` or `Sec-Fetch-Site: same-origin`), else 403. A Bearer key, when present, wins.' },
        projectHeader: { type: 'apiKey', in: 'header', name: 'Herald-Project', description: 'The project (its id) a request signed in with a session acts on; the person\'s role in it decides what is allowed.' },
      },
      // Every one is always sent where it is listed, but Idempotent-Replayed (on a replay only).
      headers: Object.fromEntries(Object.entries(HEADERS).map(([name, { description, schema }]) => [name, { description, required: name !== 'Idempotent-Replayed', schema: jsonSchemaOf(schema) }])),
      parameters: {
        IdempotencyKey: {
          name: 'Idempotency-Key', in: 'header', required: false,
          description: 'The same key with the same body within 24 hours answers the first answer again (with `Idempotent-Replayed: true`) and does nothing; with another body it is a 409.',
          schema: jsonSchemaOf(Joi.string().pattern(IDEMPOTENCY_KEY)),
        },
      },
      schemas: Object.fromEntries(Object.entries(components).sort(([a], [b]) => a.localeCompare(b))),
      responses,
    },
  };
}

let built: Json | undefined;
let serialised: string | undefined;

/** The OpenAPI 3.1 document of every route of the table (api/routes/index.ts; built once per process: the schemas do not change while it runs). */
export function openApiDocument(): Json {
  built ??= build();
  return built;
}

/** The document as JSON text, serialised once (about 250 KB: not worth doing again for every request). */
export function openApiJson(): string {
  serialised ??= JSON.stringify(openApiDocument());
  return serialised;
}
