import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import fc from 'fast-check';
import type Koa from 'koa';
import pino from 'pino';
import request from 'supertest';
import { createApp } from '../api/app';
import { loadSessionConfig, type DnsConfig } from '../config';
import type { Engine } from '../engine/types';
import { createKey, createProject, revokeKey, setProjectDisabled } from '../projects/service';
import { addDomain } from '../domains/rows';
import { bearer, TEST_SECRET, testAppDeps } from './support/app';
import { createTestDatabase, type TestDatabase } from './support/db';
import { startDnsServer, type TestDnsServer } from './support/dns';
import {
  appRoutes, checkAnswer, closeAgent, curl, describeRequest, emptyPools, ghostTwin, percentile, requestArb, resolveRequest, ROUTE_GENERATORS,
  send, startHealthProbe, type Answer, type FuzzProject, type FuzzRequest, type FuzzWorld, type ResolvedRequest,
  type ResourceType, type RouteKey,
} from './support/fuzz';

/**
 * Issue 13: a fuzz test of Herald's own. Seeded and bounded: a few thousand generated requests over every route of
 * the app (read from its routers, so that a new route without a generator fails the test), mostly near-valid bodies
 * with one mutation each, odd headers and keys, ids of the caller's project, of the other project, random and malformed.
 * Every answer must be below 500 and in the spec's envelope; another project's id must answer as an id that exists
 * nowhere does (a twin request checks it); a health probe from another thread must answer all along. Then writes race
 * the delete of the row they touch, and at the end every list of both projects must still answer, page by page, and
 * each row by id (nothing stored that later breaks a read).
 *
 *   FUZZ_SEED=<n>       seed (default below; lane i uses seed + i)
 *   FUZZ_REQUESTS=<n>   requests in all (default 3000)
 *   FUZZ_LANES=<n>      concurrent lanes, each its own fc.assert (default 6)
 *   FUZZ_SURVEY=1       record every violation instead of stopping at the first of each lane, and print them by class
 *   FUZZ_RACES=<n>      write/delete races (default 90)
 *   FUZZ_DEBUG=1        also print each "clean" request (valid key, headers, query and unmutated body) that got a 4xx,
 *                       to see where the generators' valid bodies are not valid
 *
 * A failing lane prints fast-check's counterexample (shrunk) with a curl command. The same lane's requests come again
 * with FUZZ_SEED=<that lane's seed> FUZZ_LANES=1 (the database's state, and so some answers, may differ).
 */

const SEED = Number(process.env.FUZZ_SEED ?? 20261113);
const TOTAL = Number(process.env.FUZZ_REQUESTS ?? 3000);
const LANES = Math.max(1, Number(process.env.FUZZ_LANES ?? 6));
const SURVEY = process.env.FUZZ_SURVEY === '1';
/** Shrinking of a failure is bounded, so that a failing run stays short too. */
const MAX_SHRINKS = 40;

/** Accepts every start, cancel and signal and runs nothing: the fuzz is about the API, not the engine. */
const acceptingEngine: Engine = {
  kind: 'embedded',
  waits: 'parked',
  start: async () => undefined,
  cancel: async () => undefined,
  signal: async () => undefined,
  close: async () => undefined,
};

interface LoggedError {
  msg: string;
  err?: { type?: string; message?: string; code?: string; stack?: string };
}

/** Where in Herald's own code an error was thrown (or passed through): the first stack frame outside node_modules. */
function heraldFrame(e: LoggedError | undefined): string {
  const frame = e?.err?.stack?.split('\n').find((l) => /^\s+at /.test(l) && l.includes(process.cwd()) && !l.includes('node_modules'));
  return frame ? ` at ${frame.trim().replace(/^at /, '').replace(process.cwd() + '/', '')}` : '';
}

let db: TestDatabase;
let dns: TestDnsServer;
let app: Koa;
let server: Server;
let port: number;
let world: FuzzWorld;
let routes: RouteKey[];
/** The app's error log lines, by request id. */
const serverErrors = new Map<string, LoggedError>();
const otherLogLines: LoggedError[] = [];
const debugLines: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  dns = await startDnsServer();
  const dnsConfig: DnsConfig = { servers: [dns.address], timeoutMs: 300, tries: 1, verifyBudgetMs: 300, domainCheckIntervalMinutes: 60 };
  const log = pino({ level: 'warn' }, {
    write(line: string) {
      const entry = JSON.parse(line) as LoggedError & { requestId?: string };
      if (entry.requestId) serverErrors.set(entry.requestId, entry);
      else otherLogLines.push(entry);
    },
  });
  // No 429 is expected below: the API's rate limit and the failed-login throttle (its own tests: test/people) are high.
  const sessions = { ...loadSessionConfig({}), freeFailuresPerAccount: 1_000_000, freeFailuresPerAddress: 1_000_000 };
  // The health probe below checks liveness with 30 s per answer; the server waits as long for its database before a 503
  // (HEALTH_TIMEOUT_MS), where its own 2 s was once missed by a healthy server at load 10 on 2 cores (a `SELECT 1`).
  app = createApp(testAppDeps(db.knex, { log, engine: acceptingEngine, dns: dnsConfig, apiRateLimitPerMinute: 1_000_000, sessions, healthTimeoutMs: 30_000 }));
  server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  port = (server.address() as AddressInfo).port;
  routes = appRoutes(app);

  const projects = await Promise.all(['Fuzz A', 'Fuzz B'].map((name, i) => seedProject(name, `fuzz-${'ab'[i]}.example.com`)));
  const revoked = (await createKey(projects[0]!.id, 'secret'))!;
  await revokeKey(revoked.id);
  const disabled = await createProject('Fuzz disabled');
  await setProjectDisabled(disabled.id, true);
  world = { projects: [projects[0]!, projects[1]!], revokedKey: revoked.key, disabledKey: disabled.secretKey, secret: TEST_SECRET };
}, 60_000);

afterAll(async () => {
  closeAgent();
  await new Promise((r) => server.close(r));
  await dns.close();
  await db.close();
});

/** A project with a verified sending domain and one or two rows of everything, made through the API itself. */
async function seedProject(name: string, domain: string): Promise<FuzzProject> {
  const created = await createProject(name);
  const key = bearer(created.secretKey);
  const pools = emptyPools();
  const http = () => request(server);
  const post = async (path: string, body: object, type?: ResourceType) => {
    const res = await http().post(path).set(key).send(body);
    if (res.status >= 300) throw new Error(`seeding ${path}: ${res.status} ${JSON.stringify(res.body)}`);
    if (type) pools[type].keep.push(res.body.data.id);
    return res.body.data;
  };
  pools.domain.keep.push((await addDomain(created.id, domain, true))!.id);
  // Members to change and remove (accounts made here: accepting invitations is the open routes' business).
  for (const role of ['admin', 'member', 'viewer'] as const) {
    const [user] = await db.knex('users').insert({ email: `${role}@${domain}`, name: role }).returning<{ id: string }[]>('id');
    await db.knex('memberships').insert({ project_id: created.id, user_id: user!.id, role });
    pools.member.keep.push(user!.id);
  }
  await post('/invitations', { email: `invited@${domain}`, role: 'viewer' }, 'invitation');
  // A key of its own to revoke (never the fuzzer's: that one is not in the pool).
  await post('/keys', { name: 'seeded', scope: 'sending' }, 'key');
  // Before the contacts: their contact.created deliveries are the webhook's (never sent: no worker runs here).
  await post('/webhooks', { url: `https://hooks.${domain}/herald`, events: ['contact.created', 'email.sent'] }, 'webhook');
  const contact = await post('/contacts', { email: `seed@${domain}`, data: { plan: 'pro', firstName: 'Ada' } }, 'contact');
  await post('/contacts', { email: 'second@example.org', subscribed: false }, 'contact');
  const template = await post('/templates', { name: 'Welcome', subject: 'Hi {{ firstName }}', body: '<p>Hello {{ email }}</p>', from: `team@${domain}` }, 'template');
  const vip = await post('/segments', { name: 'VIP', type: 'STATIC' }, 'segment');
  await post(`/segments/${vip.id}/members`, { emails: [contact.email] });
  await post('/segments', { name: 'Pro', type: 'DYNAMIC', condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] } }, 'segment');
  const campaign = { name: 'Spring', subject: 'Hi {{ data.firstName }}', body: '<p>Sale</p>', from: `news@${domain}` };
  await post('/campaigns', { ...campaign, audienceType: 'ALL' }, 'campaign');
  await post('/campaigns', { ...campaign, audienceType: 'SEGMENT', segmentId: vip.id }, 'campaign');
  await post('/workflows', {
    name: 'Onboarding', enabled: true, trigger: { type: 'EVENT', event: 'signup' },
    steps: [{ id: 's1', type: 'SEND_EMAIL', config: { template: template.id }, next: 's2' }, { id: 's2', type: 'DELAY', config: { amount: 1, unit: 'days' } }],
  }, 'workflow');
  await post('/v1/track', { email: contact.email, event: 'signup', data: { source: 'seed' } });
  pools.execution.keep.push(...(await db.knex('automation_executions').where({ project_id: created.id }).pluck('id')));
  await post('/v1/send', { to: contact.email, from: `team@${domain}`, subject: 'Receipt', body: '<p>Thanks</p>' });
  pools.email.keep.push(...(await db.knex('emails').where({ project_id: created.id }).pluck('id')));
  pools.webhookDelivery.keep.push(...(await db.knex('webhook_deliveries').where({ project_id: created.id }).pluck('id')));
  // An import (its file stored; no worker runs here, so it stays queued), an inbound domain and a route of it.
  const upload = await http().post('/contacts/imports').set(key).query({ columns: JSON.stringify([{ column: 'Email', to: 'email' }]) })
    .set('Content-Type', 'text/csv').send(`Email\r\nimported@${domain}\r\n`);
  if (upload.status !== 202 && upload.status !== 201) throw new Error(`seeding /contacts/imports: ${upload.status} ${JSON.stringify(upload.body)}`);
  pools.contactImport.keep.push(upload.body.data.id);
  await post('/inbound/domains', { domain: `in1.${domain}` }, 'inboundDomain');
  await post('/inbound/routes', { match: `*@in1.${domain}`, action: 'store' }, 'inboundRoute');
  return { id: created.id, secretKey: created.secretKey, publicKey: created.publicKey, domain, pools };
}

test('every route of the app has a generator, and every generator a route', () => {
  const keys = routes.map((r) => r.key);
  expect(keys.length).toBeGreaterThan(40);
  expect(keys.filter((k) => !ROUTE_GENERATORS[k])).toEqual([]);
  expect(Object.keys(ROUTE_GENERATORS).filter((k) => !keys.includes(k))).toEqual([]);
});

interface Violation {
  req: FuzzRequest;
  resolved: ResolvedRequest;
  answer: Answer;
  problems: string[];
  serverError?: LoggedError;
  shrinking: boolean;
}

interface Stats {
  requests: number;
  shrinkRequests: number;
  /** Twins of requests with another project's id (the tenancy check). */
  twins: number;
  status: Map<number, number>;
  byRoute: Map<string, Map<number, number>>;
  violations: Violation[];
  /** Oddities that are not failures: a page whose total is below its item count (page and count are two queries). */
  notes: string[];
}

const bump = <K>(m: Map<K, number>, k: K) => m.set(k, (m.get(k) ?? 0) + 1);

/** Sends one generated request, checks the answer and keeps the world's pools up to date. */
async function exchange(req: FuzzRequest, stats: Stats, shrinking: boolean): Promise<Violation | undefined> {
  const resolved = resolveRequest(world, req);
  const answer = await send(port, resolved);
  const gen = ROUTE_GENERATORS[req.route];
  const problems = checkAnswer(req, gen, answer);
  const ok = answer.status >= 200 && answer.status < 300;
  // Tenancy: another project's id is never found (decisions.md: 404, never 403). Whatever else the request holds, it
  // answers as the same request with an id that exists nowhere does.
  if (req.idKinds.includes('other') && !gen?.html && req.route !== 'off-route') {
    if (ok) problems.push(`another project's id answered ${answer.status}`);
    else if (req.auth === 'secret') {
      const twin = await send(port, ghostTwin(world, req, resolved));
      stats.twins++;
      if (twin.status !== answer.status) problems.push(`another project's id answered ${answer.status}, an id that exists nowhere ${twin.status}`);
    }
  }
  if (shrinking) {
    stats.shrinkRequests++; // not in the histograms, which are the run's
  } else {
    stats.requests++;
    bump(stats.status, answer.status);
    bump(stats.byRoute.get(req.route) ?? stats.byRoute.set(req.route, new Map()).get(req.route)!, answer.status);
  }

  const page = (answer.json as { data?: { items?: unknown[]; total?: number } } | undefined)?.data;
  if (gen?.list && ok && Array.isArray(page?.items) && typeof page.total === 'number' && page.total < page.items.length) {
    stats.notes.push(`${req.route}: total ${page.total} below ${page.items.length} items`);
  }
  const project = world.projects[req.project];
  const data = (answer.json as { data?: Record<string, unknown> } | undefined)?.data;
  if (ok && req.auth === 'secret' && data && gen?.creates) {
    const made = project.pools[gen.creates].made;
    if (req.route === 'POST /v1/send') made.push(...((data.emails as { contact: { id: string } }[] | undefined) ?? []).map((e) => e.contact.id));
    else if (typeof data.id === 'string') made.push(data.id);
    if (made.length > 300) made.splice(0, made.length - 300);
  }
  if (answer.status === 204 && gen?.deletes) {
    const id = resolved.url.split('/')[2];
    const made = project.pools[gen.deletes].made;
    const at = made.indexOf(id ?? '');
    if (at >= 0) made.splice(at, 1);
  }
  if (process.env.FUZZ_DEBUG && req.clean && answer.status >= 400) debugLines.push(`${req.route} ${answer.status} ${String(JSON.stringify((answer.json as { error?: unknown } | undefined)?.error)).slice(0, 300)} :: ${describeRequest(req).slice(0, 400)}`);
  if (problems.length === 0) return undefined;
  const requestId = answer.headers['x-request-id'];
  const violation: Violation = { req, resolved, answer, problems, serverError: typeof requestId === 'string' ? serverErrors.get(requestId) : undefined, shrinking };
  stats.violations.push(violation);
  return violation;
}

function explain(v: Violation): string {
  const server = v.serverError ? ` — server log: ${v.serverError.msg}: ${v.serverError.err?.type ?? ''} ${v.serverError.err?.code ?? ''} ${v.serverError.err?.message ?? ''}${heraldFrame(v.serverError)}` : '';
  return `${v.problems.join('; ')} (answered ${v.answer.status})${server}\n  ${describeRequest(v.req)}\n  ${curl(port, v.resolved)}\n  answer: ${v.answer.text.slice(0, 300)}`;
}

/**
 * The class of a violation: the status and what went wrong, the server's error when it logged one (for a database
 * error, PostgreSQL's message without the statement), with ids and numbers blurred. Routes are listed per class.
 */
function violationClass(v: Violation): string {
  const blur = (s: string) => s.replace(/[0-9a-f]{8}[-:]?[0-9a-f]{4}[-:]?[0-9a-f]{4}[-:]?[0-9a-f]{4}[-:]?[0-9a-f]{12}/gi, '<uuid>').replace(/\d+/g, 'N').slice(0, 200);
  const e = v.serverError?.err;
  if (!v.serverError) return `${v.answer.status}: ${v.problems.map(blur).join('; ')}`;
  const message = (e?.message ?? v.serverError.msg).split(' - ').at(-1)!;
  return `${v.answer.status}: ${blur(`${e?.type ?? ''}${e?.code ? ` ${e.code}` : ''}: ${message}`)}`;
}

function report(stats: Stats, probes: { status: number; ms: number; error?: string }[], seconds: number): string {
  const lines: string[] = [];
  const histogram = [...stats.status].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}:${n}`).join(' ');
  lines.push(`fuzz: seed ${SEED} (${LANES} lanes, seeds ${SEED}..${SEED + LANES - 1}), ${stats.requests} requests over ${stats.byRoute.size - (stats.byRoute.has('off-route') ? 1 : 0)} routes`
    + ` (+${stats.twins} tenancy twins, +${stats.shrinkRequests} while shrinking) in ${seconds.toFixed(1)} s${SURVEY ? ', survey mode' : ''}`);
  lines.push(`fuzz: status histogram ${histogram}`);
  const latencies = probes.map((p) => p.ms).sort((a, b) => a - b);
  const failed = probes.filter((p) => p.status !== 200);
  lines.push(`fuzz: health probe ${probes.length} probes, ${failed.length} not 200; latency p50 ${percentile(latencies, 0.5).toFixed(1)} ms, p99 ${percentile(latencies, 0.99).toFixed(1)} ms, max ${percentile(latencies, 1).toFixed(1)} ms`);
  const perRoute = [...stats.byRoute].sort((a, b) => a[0].localeCompare(b[0]))
    .map(([r, m]) => `${r} ${[...m].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}:${n}`).join(' ')}`);
  lines.push(`fuzz: by route\n  ${perRoute.join('\n  ')}`);
  if (stats.violations.length) {
    const classes = new Map<string, Violation[]>();
    for (const v of stats.violations) {
      const k = violationClass(v);
      classes.set(k, [...(classes.get(k) ?? []), v]);
    }
    lines.push(`fuzz: ${stats.violations.length} violations in ${classes.size} classes`);
    for (const [cls, vs] of [...classes].sort((a, b) => b[1].length - a[1].length)) {
      const size = (v: Violation) => (v.resolved.bodyText?.length ?? 0) + v.resolved.url.length;
      const sample = [...vs].sort((a, b) => size(a) - size(b))[0]!;
      const routeCounts = new Map<string, number>();
      for (const v of vs) bump(routeCounts, v.req.route);
      const labels = [...new Set(vs.map((v) => v.req.label))].slice(0, 8).join(' | ');
      lines.push(`- [${vs.length}×] ${cls}\n  routes: ${[...routeCounts].map(([r, n]) => `${r} (${n})`).join(', ')}\n  labels: ${labels}\n  smallest: ${explain(sample).replace(/\n/g, '\n  ')}`);
      if (SURVEY) {
        // The smallest request of each route, in one line each: where the class shows.
        for (const route of routeCounts.keys()) {
          const s = vs.filter((v) => v.req.route === route).sort((a, b) => size(a) - size(b))[0]!;
          lines.push(`    ${describeRequest(s.req).slice(0, 400)}${heraldFrame(s.serverError)}`);
        }
      }
    }
  }
  if (stats.notes.length) lines.push(`fuzz: ${stats.notes.length} notes (not failures): ${stats.notes.slice(0, 5).join('; ')}`);
  if (otherLogLines.length) lines.push(`fuzz: ${otherLogLines.length} warning/error log lines outside requests, e.g. ${otherLogLines.slice(0, 3).map((l) => `${l.msg}: ${l.err?.message ?? ''}`).join(' | ')}`);
  return lines.join('\n');
}

test(`seeded fuzz over every route: no 5xx, every answer in the envelope, health answers meanwhile (${TOTAL} requests)`, async () => {
  const stats: Stats = { requests: 0, shrinkRequests: 0, twins: 0, status: new Map(), byRoute: new Map(), violations: [], notes: [] };
  const requests = fc.limitShrink(requestArb(routes), MAX_SHRINKS);
  const perLane = Math.ceil(TOTAL / LANES);

  // Liveness, not latency (its p50, p99 and max are printed): each probe has 30 s, which only a stuck server misses; a
  // 5-s bound was missed once by a healthy one at load 10 on 2 cores (5,019 ms).
  const probe = startHealthProbe(port, 50, 30_000);
  const started = performance.now();
  const lanes = await Promise.allSettled(Array.from({ length: LANES }, async (_, lane) => {
    let shrinking = false;
    await fc.assert(fc.asyncProperty(requests, async (req) => {
      const v = await exchange(req, stats, shrinking);
      if (v && !SURVEY) {
        shrinking = true;
        const error = new Error(explain(v));
        error.stack = error.message; // fast-check prints it: the explanation is what a reader needs, not our stack
        throw error;
      }
    }), { seed: SEED + lane, numRuns: perLane, includeErrorInReport: true });
  }));
  const seconds = (performance.now() - started) / 1000;
  const probes = await probe.stop();
  console.log(report(stats, probes, seconds));
  if (debugLines.length) console.log(debugLines.join('\n'));

  const failures = lanes.flatMap((l, i) => (l.status === 'rejected' ? [`lane ${i} (seed ${SEED + i}): ${(l.reason as Error).message}`] : []));
  expect(failures).toEqual([]);
  // Survey mode: one line per class (the report above has a reproducer of each).
  expect([...new Set(stats.violations.map(violationClass))]).toEqual([]);
  // The probe answered all along: every GET /health (each given 30 s) answered 200.
  expect(probes.length).toBeGreaterThan(0);
  expect(probes.filter((p) => p.status !== 200).map((p) => `${p.status} ${p.error ?? ''}`)).toEqual([]);
  // The fuzz reached every route, and enough requests got through keys, rate limit and validation to mean something.
  if (stats.requests >= 20 * routes.length) {
    expect(routes.map((r) => r.key).filter((k) => !stats.byRoute.has(k))).toEqual([]);
    const succeeded = [...stats.status].filter(([s]) => s >= 200 && s < 300).reduce((n, [, c]) => n + c, 0);
    expect(succeeded).toBeGreaterThan(stats.requests / 10);
    expect(stats.status.get(429) ?? 0).toBe(0);
  }
}, 300_000);

/**
 * Races the fuzz meets only now and then, met on purpose: a write that touches a row while the row is deleted. Each
 * pair is set up on fresh rows, then both requests go at once (the delete a few milliseconds later or sooner); both
 * answers must be below 500 and in the envelope. Bounded and seeded like the rest.
 */
const RACES: Record<string, { setup: (api: Api, n: number) => Promise<string>; write: (id: string, n: number) => Call; remove: (id: string) => Call }> = {
  'POST /v1/track × DELETE /workflows/:id (the workflow the event triggers)': {
    setup: async (api) => (await api(['POST', '/workflows', { name: 'race', enabled: true, trigger: { type: 'EVENT', event: 'race' }, steps: [{ id: 'a', type: 'DELAY', config: { amount: 1, unit: 'days' } }] }])).id,
    write: (_, n) => ['POST', '/v1/track', { email: `race-w${n}@example.org`, event: 'race' }],
    remove: (id) => ['DELETE', `/workflows/${id}`],
  },
  'POST /segments/:id/members × DELETE /segments/:id': {
    setup: async (api) => (await api(['POST', '/segments', { name: 'race', type: 'STATIC' }])).id,
    write: (id, n) => ['POST', `/segments/${id}/members`, { emails: [`race-m${n}@example.org`] }],
    remove: (id) => ['DELETE', `/segments/${id}`],
  },
  'POST /v1/track × DELETE /contacts/:id (the contact tracked)': {
    setup: async (api, n) => (await api(['POST', '/contacts', { email: `race-t${n}@example.org` }])).id,
    write: (_, n) => ['POST', '/v1/track', { email: `race-t${n}@example.org`, event: 'race-track' }],
    remove: (id) => ['DELETE', `/contacts/${id}`],
  },
  'POST /v1/send × DELETE /contacts/:id (the recipient)': {
    setup: async (api, n) => (await api(['POST', '/contacts', { email: `race-s${n}@example.org` }])).id,
    write: (_, n) => ['POST', '/v1/send', { to: `race-s${n}@example.org`, from: `race@${world.projects[0].domain}`, subject: 'Race', body: '<p>race</p>' }],
    remove: (id) => ['DELETE', `/contacts/${id}`],
  },
  'PATCH /contacts/:id × DELETE /contacts/:id': {
    setup: async (api, n) => (await api(['POST', '/contacts', { email: `race-p${n}@example.org` }])).id,
    write: (id) => ['PATCH', `/contacts/${id}`, { data: { plan: 'race' } }],
    remove: (id) => ['DELETE', `/contacts/${id}`],
  },
  'PATCH /campaigns/:id × DELETE /campaigns/:id': {
    setup: async (api) => (await api(['POST', '/campaigns', { name: 'race', subject: 'Race', body: '<p>race</p>', from: `race@${world.projects[0].domain}`, audienceType: 'ALL' }])).id,
    write: (id) => ['PATCH', `/campaigns/${id}`, { name: 'renamed' }],
    remove: (id) => ['DELETE', `/campaigns/${id}`],
  },
  'PATCH /segments/:id × DELETE /segments/:id': {
    setup: async (api) => (await api(['POST', '/segments', { name: 'race', type: 'STATIC' }])).id,
    write: (id) => ['PATCH', `/segments/${id}`, { name: 'renamed' }],
    remove: (id) => ['DELETE', `/segments/${id}`],
  },
  'PATCH /workflows/:id × DELETE /workflows/:id': {
    setup: async (api) => (await api(['POST', '/workflows', { name: 'race', trigger: { type: 'EVENT', event: 'race-patch' }, steps: [{ id: 'a', type: 'EXIT' }] }])).id,
    write: (id) => ['PATCH', `/workflows/${id}`, { name: 'renamed' }],
    remove: (id) => ['DELETE', `/workflows/${id}`],
  },
  'POST /campaigns/:id/send × DELETE /campaigns/:id': {
    setup: async (api) => (await api(['POST', '/campaigns', { name: 'race', subject: 'Race', body: '<p>race</p>', from: `race@${world.projects[0].domain}`, audienceType: 'ALL' }])).id,
    write: (id) => ['POST', `/campaigns/${id}/send`, {}],
    remove: (id) => ['DELETE', `/campaigns/${id}`],
  },
};
type Call = [method: string, path: string, body?: object];
type Api = (call: Call) => Promise<{ id: string }>;

test('racing a delete: a write to a row being deleted answers below 500, in the envelope', async () => {
  const key = world.projects[0].secretKey;
  // The races send from the project's domain: verified again here, since the seeded fuzz before may have re-checked it
  // against the test DNS (POST /domains/:id/verify), which fails it; whether it did depends on the route set.
  await addDomain(world.projects[0].id, world.projects[0].domain, true);
  const toRequest = ([method, path, body]: Call): ResolvedRequest => ({
    method, url: path, path, chunked: false,
    headers: { Authorization: `Bearer ${key}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    ...(body ? { body: Buffer.from(JSON.stringify(body)), bodyText: JSON.stringify(body) } : {}),
  });
  const api: Api = async (call) => {
    const a = await send(port, toRequest(call));
    if (a.status >= 300) throw new Error(`race setup ${call[0]} ${call[1]}: ${a.status} ${a.text.slice(0, 200)}`);
    return (a.json as { data: { id: string } }).data;
  };
  const asRequest = (call: Call, route: string): FuzzRequest => ({
    route, method: call[0], path: call[1], query: [], rawQuery: '', project: 0, auth: 'secret', headers: 'normal',
    body: call[2] ? { kind: 'json', value: call[2] } : { kind: 'none' }, label: 'race', clean: true, idKinds: [],
  });
  let n = 0;
  const seen = new Map<string, Map<string, number>>();
  const problems: string[] = [];
  await fc.assert(fc.asyncProperty(fc.constantFrom(...Object.keys(RACES)), fc.integer({ min: -3, max: 3 }), async (name, lead) => {
    const race = RACES[name]!;
    const i = n++;
    const id = await race.setup(api, i);
    const write = race.write(id, i);
    const remove = race.remove(id);
    const later = (call: Call, ms: number) => new Promise((r) => setTimeout(r, ms)).then(() => send(port, toRequest(call)));
    const [w, d] = await Promise.all([later(write, Math.max(0, -lead)), later(remove, Math.max(0, lead))]);
    const outcome = `${w.status}/${d.status}`;
    seen.set(name, (seen.get(name) ?? new Map()).set(outcome, (seen.get(name)?.get(outcome) ?? 0) + 1));
    const found = [
      ...checkAnswer(asRequest(write, `${write[0]} ${write[1].replace(/[0-9a-f-]{36}/, ':id')}`), undefined, w).map((p) => `${write[0]} ${write[1]}: ${p}`),
      ...checkAnswer(asRequest(remove, `${remove[0]} ${remove[1].replace(/[0-9a-f-]{36}/, ':id')}`), undefined, d).map((p) => `${remove[0]} ${remove[1]}: ${p}`),
    ];
    if (found.length) {
      const log = [w, d].map((a) => serverErrors.get(String(a.headers['x-request-id']))).filter(Boolean)
        .map((e) => `${e!.err?.type ?? ''} ${e!.err?.code ?? ''} ${(e!.err?.message ?? '').split(' - ').at(-1)}${heraldFrame(e)}`);
      const message = `${name}: write ${w.status}, delete ${d.status}${log.length ? ` — server log: ${log.join(' | ')}` : ''}`;
      if (SURVEY) problems.push(message); // one line per outcome (they hold no ids)
      else throw Object.assign(new Error(`${message}\n  ${found.join('\n  ')}`), { stack: message });
    }
  }), { seed: SEED, numRuns: Number(process.env.FUZZ_RACES ?? 90), includeErrorInReport: true }).catch((err: Error) => problems.push(err.message));
  console.log(`fuzz: races ${n} (seed ${SEED}): ${[...seen].map(([k, m]) => `${k.split(' (')[0]} → ${[...m].map(([o, c]) => `${o}:${c}`).join(' ')}`).join('; ')}`);
  expect([...new Set(problems)]).toEqual([]);
}, 120_000);

test('afterwards every list of both projects still answers, page by page, and so does each row', async () => {
  const failures: string[] = [];
  const get = async (key: string, path: string) => {
    const res = await request(server).get(path).set(bearer(key));
    if (res.status !== 200) failures.push(`GET ${path} → ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
    return res;
  };
  let reads = 0;
  for (const project of world.projects) {
    for (const list of ['/contacts', '/segments', '/campaigns', '/templates', '/workflows', '/events', '/domains', '/emails', '/webhooks']) {
      let cursor: string | null = null;
      const ids: string[] = [];
      for (let page = 0; page < 100; page++) {
        const res = await get(project.secretKey, `${list}?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
        reads++;
        if (res.status !== 200) break;
        ids.push(...(res.body.data.items as { id: string }[]).map((i) => i.id));
        cursor = res.body.data.nextCursor;
        if (!cursor) break;
      }
      if (list === '/events') continue;
      for (const id of ids) {
        await get(project.secretKey, `${list}/${id}`);
        reads++;
        const sub = { '/segments': '/contacts', '/campaigns': '/stats', '/workflows': '/executions', '/webhooks': '/deliveries' }[list as '/segments'];
        if (sub) { await get(project.secretKey, `${list}/${id}${sub}`); reads++; }
      }
    }
    await get(project.secretKey, '/events/names');
  }
  console.log(`fuzz: afterwards ${reads} reads of lists and rows, ${failures.length} failed`);
  expect(failures).toEqual([]);
}, 120_000);
