import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type Router from '@koa/router';
import { createApp } from '../../api/app';
import type { Route } from '../../api/route';
import { ROUTES } from '../../api/routes';
import Joi from 'joi';
import { exampleOf } from '../../api/openapi/examples';
import { checkJsonValues } from '../../api/schemas/common';
import { errorAnswer, successOf, UNHEALTHY } from '../../api/schemas/answers';
import { HERALD_VERSION } from '../../core/version';
import { addDomain } from '../../domains/rows';
import { bearer, createTestContext, testAppDeps, type TestContext } from '../support/app';
import { answerChecker, pointerOf, type AnswerChecker } from '../support/openapi';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let t: TestContext;
let key: { Authorization: string };
let doc: Json;
let answers: AnswerChecker;

beforeAll(async () => {
  t = await createTestContext();
  key = bearer(t.project.secretKey);
  await addDomain(t.project.id, 'example.com', true);
  const res = await t.http().get('/openapi.json');
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  doc = res.body;
  answers = answerChecker(doc);
});
afterAll(() => t.close());

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

const routeKey = (method: string, path: string) => `${method.toUpperCase()} ${path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`;

/** `METHOD /path/{param}` of every route of each of the app's routers (HEAD, which GET implies, aside), in order. */
function appRouters(): string[][] {
  const app = createApp(testAppDeps(t.db.knex));
  const routers = app.middleware.map((mw) => (mw as { router?: Router }).router).filter((r): r is Router => r !== undefined);
  expect(routers.length).toBe(6); // open, people, sending, tracking, management, uploads
  return routers.map((router) => router.stack.flatMap((layer) => layer.methods
    .filter((method) => method !== 'HEAD' && method !== 'OPTIONS').map((method) => routeKey(method, String(layer.path)))));
}

function appRoutes(): Set<string> {
  return new Set(appRouters().flat());
}

function documentRoutes(): Set<string> {
  const routes = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths as Json)) {
    for (const method of Object.keys(item)) if (METHODS.includes(method)) routes.add(`${method.toUpperCase()} ${path}`);
  }
  return routes;
}

describe('the document and the routers agree', () => {
  test('the routers hold the route table, each route once, in a router of its access', () => {
    const [open, people, sending, tracking, management, uploads] = appRouters();
    const table = ROUTES.map((r) => routeKey(r.method, r.path));
    expect(new Set(table).size).toBe(table.length);
    // Table order within each router (the order @koa/router matches in).
    const of = (keep: (r: Route) => boolean) => ROUTES.filter(keep).map((r) => routeKey(r.method, r.path));
    expect(open).toEqual(of((r) => r.access === 'open' && !r.people));
    expect(people).toEqual(of((r) => r.people === true));
    expect(people).toEqual(['POST /auth/login', 'POST /auth/login/two-factor', 'POST /auth/logout', 'GET /auth/session', 'GET /auth/sessions', 'DELETE /auth/sessions/{id}',
      'POST /auth/two-factor', 'POST /auth/two-factor/confirm', 'DELETE /auth/two-factor', 'GET /auth/providers', 'POST /invitations/accept', 'POST /auth/password-reset', 'POST /auth/password-reset/confirm', 'POST /auth/setup']);
    expect(sending).toEqual(of((r) => r.access === 'secret' && r.largeBody === true));
    expect(tracking).toEqual(of((r) => r.access === 'secretOrPublic'));
    expect(management).toEqual(of((r) => r.access === 'secret' && !r.largeBody && !r.upload));
    expect(uploads).toEqual(['POST /contacts/imports/preview', 'POST /contacts/imports']);
    expect(sending).toEqual(['POST /v1/send']);
    expect(tracking).toEqual(['POST /v1/track']);
  });

  test('every route of the routers is in the document, and the document names no route that does not exist', () => {
    const app = appRoutes();
    const documented = documentRoutes();
    expect(app.size).toBeGreaterThan(60);
    expect([...app].filter((r) => !documented.has(r))).toEqual([]);
    expect([...documented].filter((r) => !app.has(r))).toEqual([]);
  });

  test('security: none on the open routes, a secret key or a session with its project everywhere else, public keys on POST /v1/track only, the session alone on /auth', () => {
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['projectHeader', 'publicKey', 'secretKey', 'sessionCookie']);
    for (const [path, item] of Object.entries(doc.paths as Json)) {
      for (const [method, op] of Object.entries(item as Json)) {
        const schemes = (op.security as Json[]).map((s) => Object.keys(s).sort().join('+')).sort();
        const open = ['/health', '/metrics', '/openapi.json', '/docs', '/docs/redoc.standalone.js', '/docs/reference.js', '/docs/guide', '/docs/guide.css', '/favicon.svg', '/favicon.ico',
          '/auth/login', '/auth/login/two-factor'].includes(path)
          // Single sign-on: the provider's answer and the flow cookie authorise (api/routes/auth.ts, people/oidc.ts).
          || ['/auth/providers', '/auth/oidc/login', '/auth/oidc/callback'].includes(path) || /^\/(unsubscribe|t|inbound-files)\//.test(path)
          // People's links: the token in the body authorises (api/routes/invitations.ts, accounts.ts).
          || ['/invitations/accept', '/auth/password-reset', '/auth/password-reset/confirm', '/auth/setup'].includes(path);
        const person = !open && path.startsWith('/auth/');
        const expected = open ? [] : person ? ['sessionCookie'] : path === '/v1/track' ? ['projectHeader+sessionCookie', 'publicKey', 'secretKey'] : ['projectHeader+sessionCookie', 'secretKey'];
        expect({ route: `${method} ${path}`, schemes }).toEqual({ route: `${method} ${path}`, schemes: expected });
        if (!open) expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(person ? ['401', '403'] : ['401', '403', '429']));
        // Each project operation says what it needs (projects/roles.ts), for tools and for people.
        if (!open && !person) {
          expect(op['x-herald-permission']).toMatch(/^(read|send|write|admin|owner)$/);
          expect(op.description).toContain(`Permission \`${op['x-herald-permission']}\``);
        }
      }
    }
  });

  test('Idempotency-Key where api/idempotency.ts honours it; links name real operations', () => {
    const withKey = Object.entries(doc.paths as Json).flatMap(([path, item]) => Object.entries(item as Json)
      .filter(([, op]) => (op.parameters ?? []).some((p: Json) => p.$ref === '#/components/parameters/IdempotencyKey')).map(([m]) => `${m} ${path}`));
    expect(withKey.sort()).toEqual(['post /v1/send', 'post /v1/track']);
    const ids = new Set(Object.values(doc.paths as Json).flatMap((item) => Object.values(item as Json).map((op) => op.operationId)));
    const links = Object.values(doc.paths as Json).flatMap((item) => Object.values(item as Json)
      .flatMap((op) => Object.values(op.responses as Json).flatMap((r: Json) => Object.values(r.links ?? {}) as Json[])));
    expect(links.length).toBeGreaterThan(20);
    for (const link of links) expect(ids).toContain(link.operationId);
  });
});

test('where joi-to-json alone would be false, the converter says what Joi accepts', () => {
  const send = doc.paths['/v1/send'].post.requestBody.content['application/json'].schema;
  // Free-form data: any keys of 1 to 100 characters, at most 200 (joi-to-json alone: no key at all).
  expect(send.properties.data).toMatchObject({ type: 'object', maxProperties: 200, propertyNames: { minLength: 1, maxLength: 100 }, additionalProperties: {} });
  expect(send.properties.headers).toMatchObject({ maxProperties: 50, additionalProperties: { type: 'string', maxLength: 2000 } });
  // A type-only alternative: string or mailbox object, as anyOf (joi-to-json alone: if/then/else, read as "anything").
  expect(send.properties.from.anyOf.map((s: Json) => s.type)).toEqual(['string', 'object']);
  // Required unless `template`: the field keeps its own type (joi-to-json alone: any type at all).
  expect(send.properties.subject).toMatchObject({ type: 'string', minLength: 1, maxLength: 998 });
  // A key-count rule: PATCH /settings needs at least one key.
  expect(doc.paths['/settings'].patch.requestBody.content['application/json'].schema.minProperties).toBe(1);
  // No regular expression keeps a flag inside its source.
  expect(JSON.stringify(doc)).not.toMatch(/"pattern":"[^"]*\/[a-z]+"/);
});

test('the document is valid OpenAPI 3.1 (@seriousme/openapi-schema-validator)', async () => {
  expect(doc.openapi).toBe('3.1.0');
  const dir = await mkdtemp(join(tmpdir(), 'herald-openapi-'));
  try {
    const file = join(dir, 'openapi.json');
    await writeFile(file, JSON.stringify(doc));
    // The validator is an ES module only; its own command line runs it outside Jest's module registry.
    const cli = join(dirname(require.resolve('@seriousme/openapi-schema-validator')), 'bin', 'validate-api-cli.js');
    const { stdout } = await promisify(execFile)(process.execPath, [cli, file]).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? String(err) }));
    expect(JSON.parse(stdout)).toEqual({ valid: true });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

describe('the reference shows what a person would send and see (issue 28)', () => {
  test('a real title, the package\'s version, and a description that says what Herald is, where the console and the guide are, and how to authenticate', () => {
    expect(doc.info.title).toBe('Herald API');
    expect(doc.info.version).toBe(HERALD_VERSION);
    expect(doc.info.version).toMatch(/^\d+\.\d+\.\d+/);
    for (const said of ['self-hostable email platform', '](app)', '](docs/guide)', 'Bearer sk_', 'Bearer pk_', 'POST /v1/track', 'herald_session', 'Herald-Project']) {
      expect(doc.info.description).toContain(said);
    }
  });

  /**
   * Every JSON media type of the document, request bodies and answers (the shared error answers too), with where it is
   * and the route that declares it.
   */
  function jsonMedia(): { what: string; at: string; media: Json; route?: Route; status?: string }[] {
    const byId = new Map(ROUTES.map((r) => [r.operationId, r]));
    const found: { what: string; at: string; media: Json; route?: Route; status?: string }[] = [];
    for (const [path, item] of Object.entries(doc.paths as Json)) {
      for (const [method, op] of Object.entries(item as Json)) {
        const route = byId.get(op.operationId);
        const body = op.requestBody?.content?.['application/json'];
        if (body) found.push({ what: `${method.toUpperCase()} ${path} (${op.operationId}) request body`, at: pointerOf('paths', path, method, 'requestBody', 'content', 'application/json'), media: body, route });
        for (const [status, response] of Object.entries(op.responses as Json)) {
          const media = response.content?.['application/json'];
          if (media) found.push({ what: `${method.toUpperCase()} ${path} (${op.operationId}) answer ${status}`, at: pointerOf('paths', path, method, 'responses', status, 'content', 'application/json'), media, route, status });
        }
      }
    }
    for (const [name, response] of Object.entries(doc.components.responses as Json)) {
      found.push({ what: `the error answer ${name}`, at: pointerOf('components', 'responses', name, 'content', 'application/json'), media: response.content['application/json'] });
    }
    return found;
  }

  // What Redoc (openapi-sampler) writes where a schema gives no example.
  const PLACEHOLDERS = new Set(['user@example.com', '2019-08-24T14:15:22Z', '2019-08-24', '14:15:22Z', '497f6eca-6276-4993-bfeb-53cbbbba6f08',
    'http://example.com', 'pa$$word', '/regex/', '192.168.0.1', 'example@example.com']);

  /** The paths of the placeholder strings in an example. */
  function placeholdersIn(value: unknown, at = ''): string[] {
    if (typeof value === 'string') return /^(string)+/.test(value) || PLACEHOLDERS.has(value) ? [`${at || '(the value)'} = ${JSON.stringify(value)}`] : [];
    if (Array.isArray(value)) return value.flatMap((v, i) => placeholdersIn(v, `${at}[${i}]`));
    if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => placeholdersIn(v, at ? `${at}.${k}` : k));
    return [];
  }

  test('every request body and every JSON answer carries a whole example, without placeholders, that its schema accepts', () => {
    const media = jsonMedia();
    expect(media.length).toBeGreaterThan(110);
    const problems: string[] = [];
    for (const { what, at, media: m } of media) {
      if (m.example === undefined) {
        const { missing } = exampleOf(m.schema, doc.components.schemas);
        problems.push(`${what} has no example: no example for ${missing.join(', ')}. Give those fields Joi's .example() where the schema is `
          + '(api/schemas/*.ts for requests, api/schemas/answers.ts for answers; api/schemas/common.ts EXAMPLE has ids, instants and addresses), '
          + 'or the whole body one (an answer\'s `example`, a body schema\'s .example()).');
        continue;
      }
      const placeholders = placeholdersIn(m.example);
      if (placeholders.length) problems.push(`${what}: its example has placeholders, not values a person would send or see: ${placeholders.join(', ')}`);
      try {
        answers.checkValue(`${at}/schema`, m.example, `${what}: the example`);
      } catch (err) {
        problems.push((err as Error).message);
      }
    }
    expect(problems).toEqual([]);
  });

  test('each request example passes the route\'s own Joi schema (a request Herald accepts), and each answer example its answer schema', () => {
    const options: Joi.ValidationOptions = { abortEarly: false, convert: true, stripUnknown: false };
    const problems: string[] = [];
    let requests = 0;
    let answered = 0;
    for (const { what, media, route, status } of jsonMedia()) {
      if (media.example === undefined) continue; // the test above names it
      let schema: Joi.Schema;
      if (!route) schema = errorAnswer;
      else if (status === undefined) {
        schema = route.body!;
        requests++;
        const refused = checkJsonValues(media.example);
        if (refused.length) problems.push(`${what}: ${JSON.stringify(refused)}`);
      } else {
        const answer = route.answers[Number(status)];
        if (!answer) schema = errorAnswer;
        else schema = answer.raw ?? successOf(answer.data!);
        answered++;
      }
      const { error } = schema.validate(media.example, options);
      if (error) problems.push(`${what}: Joi refuses its example: ${error.message}`);
    }
    expect(problems).toEqual([]);
    expect(requests).toBeGreaterThan(30);
    expect(answered).toBeGreaterThan(70);
  });

  test('POST /v1/send shows a real send: addresses, a subject and a body', () => {
    const send = doc.paths['/v1/send'].post;
    expect(send.requestBody.content['application/json'].example).toMatchObject({
      to: expect.stringMatching(/@example\.com/), from: expect.stringMatching(/@example\.com/), subject: expect.stringMatching(/\w+ \w+/), body: expect.stringMatching(/<p>/),
    });
    expect(send.responses['200'].content['application/json'].example.data.emails[0]).toMatchObject({ status: 'QUEUED', contact: { email: expect.stringMatching(/@example\.com$/) } });
  });

  test('GET /health: the documented answer is the real one', async () => {
    const res = await t.http().get('/health');
    expect(res.status).toBe(200);
    const documented = doc.paths['/health'].get.responses['200'].content['application/json'];
    expect(res.body).toEqual(documented.example);
    answers.check('GET', '/health', res);
    // The 503's example is the very value api/routes/system.ts answers when the database does not (test/api/health.test.ts).
    expect(doc.paths['/health'].get.responses['503'].content['application/json'].example).toEqual(UNHEALTHY);
  });
});

describe('real answers match their schemas in the document', () => {
  const http = () => t.http();

  test('a send, a track, a contacts page, an email with its timeline', async () => {
    const sent = await http().post('/v1/send').set(key).send({ to: 'Ada <ada@example.org>', from: 'hello@example.com', subject: 'Hi', body: '<p>Hello</p>' });
    answers.check('POST', '/v1/send', sent);
    // The request side too: a body Herald accepts, with free-form data, headers and an attachment, is one the document allows.
    const full = {
      to: [{ email: 'd@example.org', name: 'D' }, 'E <e@example.org>'], from: { email: 'hello@example.com', name: 'Herald' }, subject: 'Hi {{ n }}',
      body: '# Hi', type: 'markdown', reply: 'r@example.com', headers: { 'X-Campaign': 'spring' }, subscribed: true, track: { opens: true },
      attachments: [{ filename: 'a.txt', content: Buffer.from('hello').toString('base64'), contentType: 'text/plain' }],
      data: { n: 1, nested: { deep: [1, 2] }, once: { value: 'x', persistent: false } },
    };
    expect((await http().post('/v1/send').set(key).send(full)).status).toBe(200);
    answers.checkRequest('POST', '/v1/send', full);
    const twice = await http().post('/v1/send').set(key).send({ to: ['b@example.org', { email: 'c@example.org', name: 'C' }], from: 'hello@example.com', subject: 'Hi', body: 'x' });
    answers.check('POST', '/v1/send', twice);
    answers.check('POST', '/v1/track', await http().post('/v1/track').set(bearer(t.project.publicKey)).send({ email: 'ada@example.org', event: 'signed-up', data: { plan: 'pro' } }));
    answers.check('GET', '/contacts', await http().get('/contacts?limit=1').set(key));
    answers.check('GET', '/emails', await http().get('/emails').set(key));
    answers.check('GET', '/emails/{id}', await http().get(`/emails/${sent.body.data.emails[0].email}`).set(key));
    answers.check('GET', '/events', await http().get('/events').set(key));
    answers.check('GET', '/events/names', await http().get('/events/names').set(key));
  });

  test('errors: a 422, a 404, a 400, a 401, a 403, a 409', async () => {
    const invalid = await http().post('/contacts').set(key).send({ email: 'not an address', extra: 1 });
    expect(invalid.status).toBe(422);
    answers.check('POST', '/contacts', invalid);
    const missing = await http().get('/contacts/0190a3f1-0000-7000-8000-000000000000').set(key);
    expect(missing.status).toBe(404);
    answers.check('GET', '/contacts/{id}', missing);
    answers.check('GET', '/contacts', await http().get('/contacts?cursor=nonsense').set(key));
    answers.check('GET', '/templates', await http().get('/templates'));
    answers.check('POST', '/contacts', await http().post('/contacts').set(bearer(t.project.publicKey)).send({ email: 'x@example.org' }));
    const first = await http().post('/v1/track').set(key).set('Idempotency-Key', 'k-1').send({ email: 'i@example.org', event: 'a' });
    const other = await http().post('/v1/track').set(key).set('Idempotency-Key', 'k-1').send({ email: 'i@example.org', event: 'b' });
    expect([first.status, other.status]).toEqual([200, 409]);
    answers.check('POST', '/v1/track', other);
  });

  test('create, get, update, list and delete of each resource', async () => {
    const contact = await http().post('/contacts').set(key).send({ email: 'grace@example.org', data: { firstName: 'Grace' } });
    expect(contact.status).toBe(201);
    answers.check('POST', '/contacts', contact);
    answers.check('POST', '/contacts', await http().post('/contacts').set(key).send({ email: 'grace@example.org' }));
    answers.check('PATCH', '/contacts/{id}', await http().patch(`/contacts/${contact.body.data.id}`).set(key).send({ subscribed: true }));

    const template = await http().post('/templates').set(key).send({ name: 'Welcome', subject: 'Hi', body: 'Hello', type: 'MARKETING' });
    answers.check('POST', '/templates', template);
    answers.check('GET', '/templates/{id}', await http().get(`/templates/${template.body.data.id}`).set(key));
    answers.check('GET', '/templates', await http().get('/templates').set(key));

    const segment = await http().post('/segments').set(key).send({ name: 'VIP', type: 'STATIC' });
    answers.check('POST', '/segments', segment);
    answers.check('POST', '/segments/{id}/members', await http().post(`/segments/${segment.body.data.id}/members`).set(key).send({ emails: ['grace@example.org', 'new@example.org'] }));
    answers.check('DELETE', '/segments/{id}/members', await http().delete(`/segments/${segment.body.data.id}/members`).set(key).send({ emails: ['new@example.org'] }));
    answers.check('GET', '/segments/{id}/contacts', await http().get(`/segments/${segment.body.data.id}/contacts`).set(key));
    const condition = { logic: 'AND', groups: [{ filters: [{ field: 'data.firstName', operator: 'equals', value: 'Grace' }] }] };
    answers.check('POST', '/segments', await http().post('/segments').set(key).send({ name: 'Graces', type: 'DYNAMIC', condition }));
    answers.check('POST', '/segments/preview', await http().post('/segments/preview').set(key).send({ condition }));
    answers.check('GET', '/segments', await http().get('/segments').set(key));

    const campaign = await http().post('/campaigns').set(key).send({ name: 'Sale', subject: 'Sale', body: '<p>Sale</p>', from: 'news@example.com', audienceType: 'SEGMENT', segmentId: segment.body.data.id });
    expect(campaign.status).toBe(201);
    answers.check('POST', '/campaigns', campaign);
    answers.check('PATCH', '/campaigns/{id}', await http().patch(`/campaigns/${campaign.body.data.id}`).set(key).send({ description: null }));
    answers.check('GET', '/campaigns/{id}/stats', await http().get(`/campaigns/${campaign.body.data.id}/stats`).set(key));
    answers.check('GET', '/campaigns/{id}/stats', await http().get(`/campaigns/${campaign.body.data.id}/stats?series=day`).set(key));
    answers.check('POST', '/campaigns/audience', await http().post('/campaigns/audience').set(key).send({ audienceType: 'SEGMENT', segmentId: segment.body.data.id }));
    answers.check('POST', '/campaigns/{id}/cancel', await http().post(`/campaigns/${campaign.body.data.id}/cancel`).set(key));
    answers.check('GET', '/campaigns', await http().get('/campaigns').set(key));
    answers.check('DELETE', '/campaigns/{id}', await http().delete(`/campaigns/${campaign.body.data.id}`).set(key));

    const webhook = await http().post('/webhooks').set(key).send({ url: 'https://hooks.example.org/herald', events: ['email.sent'] });
    answers.check('POST', '/webhooks', webhook);
    answers.check('POST', '/webhooks/{id}/rotate-secret', await http().post(`/webhooks/${webhook.body.data.id}/rotate-secret`).set(key));
    answers.check('GET', '/webhooks/{id}/deliveries', await http().get(`/webhooks/${webhook.body.data.id}/deliveries`).set(key));
    answers.check('GET', '/webhooks', await http().get('/webhooks').set(key));
    answers.check('DELETE', '/webhooks/{id}', await http().delete(`/webhooks/${webhook.body.data.id}`).set(key));

    const definition = {
      name: 'Onboarding', trigger: { type: 'EVENT', event: 'signed-up' },
      steps: [
        { id: 'wait', type: 'DELAY', config: { amount: 1, unit: 'days' }, next: 'check' },
        { id: 'check', type: 'CONDITION', config: { filter: condition }, branches: { yes: 'mail', no: 'hook' } },
        { id: 'mail', type: 'SEND_EMAIL', config: { template: template.body.data.id } },
        { id: 'hook', type: 'WEBHOOK', config: { url: 'https://crm.example.org/h', headers: { 'X-Token': 't' }, body: [1, { a: 2 }] }, next: 'update' },
        { id: 'update', type: 'UPDATE_CONTACT', config: { data: { stage: 'nudged' } }, next: 'end' },
        { id: 'end', type: 'EXIT' },
      ],
    };
    const workflow = await http().post('/workflows').set(key).send(definition);
    expect(workflow.status).toBe(201);
    answers.check('POST', '/workflows', workflow);
    answers.checkRequest('POST', '/workflows', definition);
    answers.check('GET', '/workflows/{id}/executions', await http().get(`/workflows/${workflow.body.data.id}/executions`).set(key));
    answers.check('GET', '/workflows', await http().get('/workflows').set(key));

    const suppression = await http().post('/suppressions').set(key).send({ email: 'gone@example.org', note: 'asked' });
    answers.check('POST', '/suppressions', suppression);
    answers.check('GET', '/suppressions', await http().get('/suppressions').set(key));
    answers.check('DELETE', '/suppressions/{email}', await http().delete('/suppressions/gone@example.org').set(key));

    answers.check('GET', '/domains', await http().get('/domains').set(key));
    answers.check('GET', '/settings', await http().get('/settings').set(key));
    answers.check('PATCH', '/settings', await http().patch('/settings').set(key).send({ tracking: { send: { opens: true } } }));
    answers.checkRequest('PATCH', '/settings', { tracking: { send: { opens: true } } });
    answers.checkRequest('POST', '/contacts', { email: 'grace@example.org', data: { firstName: 'Grace', n: null } });
    answers.checkRequest('POST', '/campaigns', { name: 'Sale', subject: 'Sale', body: 'b', from: 'news@example.com', audienceType: 'FILTERED', audienceFilter: condition });
    const madeKey = await http().post('/keys').set(key).send({ name: 'CI', scope: 'sending', domains: ['example.com'] });
    answers.check('POST', '/keys', madeKey);
    answers.checkRequest('POST', '/keys', { name: 'CI', scope: 'sending', domains: ['example.com'] });
    answers.check('GET', '/keys', await http().get('/keys').set(key));
    answers.check('DELETE', '/keys/{id}', await http().delete(`/keys/${madeKey.body.data.id}`).set(key));
    answers.check('GET', '/audit-log', await http().get('/audit-log').set(key));
    answers.check('GET', '/health', await http().get('/health'));
    answers.check('GET', '/docs', await http().get('/docs'));
    expect(answers.checked.size).toBeGreaterThan(40);
  });
});
