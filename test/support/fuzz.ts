import http from 'node:http';
import { Worker } from 'node:worker_threads';
import { gzipSync } from 'node:zlib';
import type Koa from 'koa';
import fc from 'fast-check';
import { encodeCursor } from '../../api/pagination';
import { unsubscribeToken } from '../../mail/unsubscribe';
import { clickToken, openToken } from '../../tracking/links';

/**
 * Generators and checks of the API fuzz test (test/fuzz.test.ts, issue 13).
 *
 * A generated request is a compact, printable descriptor: what the server must not depend on (real ids, keys,
 * the project's sending domain) is a token, resolved against the live world only when the request is sent, so that
 * the same seed generates the same requests whatever ids the database handed out.
 *
 * - `⟦…⟧` inside a string is replaced by text: `⟦id:contact:own:3:upper⟧`, `⟦domain:own⟧`, `⟦cursor:…⟧`, `⟦unsub:…⟧`.
 * - a whole JSON string `"⟪…⟫"` is replaced by raw JSON text: `⟪deepobj:5000⟫`, `⟪num:1e400⟫`, `⟪proto⟫`, `⟪bigstr:70000⟫`.
 */

// ---------------------------------------------------------------------------------------------------------------
// The world: what tokens resolve against.

export const RESOURCE_TYPES = ['contact', 'template', 'segment', 'campaign', 'workflow', 'domain', 'execution', 'email', 'webhook', 'webhookDelivery', 'member', 'invitation', 'key', 'auditEntry',
  'contactImport', 'inboundDomain', 'inboundRoute', 'inboundMessage'] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];

export interface Pool {
  /** Seeded rows that the fuzz never deletes (it may edit them). */
  keep: string[];
  /** Rows made during the run: DELETE with an own id picks among these. */
  made: string[];
}

export interface FuzzProject {
  id: string;
  secretKey: string;
  publicKey: string;
  /** The project's verified sending domain. */
  domain: string;
  pools: Record<ResourceType, Pool>;
}

export interface FuzzWorld {
  projects: [FuzzProject, FuzzProject];
  /** A revoked secret key of project 0, and the secret key of a disabled project. */
  revokedKey: string;
  disabledKey: string;
  /** Installation secret (signs unsubscribe tokens). */
  secret: Buffer;
}

export const emptyPools = (): Record<ResourceType, Pool> =>
  Object.fromEntries(RESOURCE_TYPES.map((t) => [t, { keep: [], made: [] }])) as unknown as Record<ResourceType, Pool>;

// ---------------------------------------------------------------------------------------------------------------
// Routes, from the router itself.

export interface RouteKey {
  method: string;
  path: string;
  key: string;
}

/**
 * Every method and path the app's routers declare (@koa/router's `router.stack`), HEAD left out (Koa answers it from
 * GET). Read from the Koa app's middleware: each `router.routes()` dispatcher carries its router.
 */
export function appRoutes(app: Koa): RouteKey[] {
  const routes = new Map<string, RouteKey>();
  for (const mw of app.middleware as unknown as { router?: { stack: { path: string | RegExp; methods: string[] }[] } }[]) {
    for (const layer of mw.router?.stack ?? []) {
      if (typeof layer.path !== 'string') continue;
      for (const method of layer.methods) {
        if (method === 'HEAD') continue;
        const key = `${method} ${layer.path}`;
        routes.set(key, { method, path: layer.path, key });
      }
    }
  }
  return [...routes.values()].sort((a, b) => a.key.localeCompare(b.key));
}

// ---------------------------------------------------------------------------------------------------------------
// Values.

/** Dates around and beyond what JavaScript and PostgreSQL can hold, and ones that are not dates. */
export const ODD_DATES = [
  '0000-01-01T00:00:00Z', '-004714-01-01T00:00:00Z', '-004714-11-24T00:00:00Z', '-271821-04-20T00:00:00Z',
  '+275760-09-13T00:00:00.000Z', '+275760-09-13T00:00:00.001Z', '294277-01-01T00:00:00Z', '10000-01-01T00:00:00Z',
  '9999-12-31T23:59:59.999Z', '0001-01-01T00:00:00Z', '1970-01-01T00:00:00Z', '2999-01-01T00:00:00Z',
  '2024-02-30T00:00:00Z', '2024-13-01T00:00:00Z', '2024-01-01T25:00:00Z', '2024-01-01', '2024-01-01T00:00:00+23:59',
  'infinity', '-infinity', 'epoch', 'now', 'tomorrow', '',
];

/** A far-future date that every layer accepts: the normal `scheduledAt`. */
export const FUTURE_DATES = ['2099-01-01T00:00:00Z', '2031-06-15T12:30:00.000Z', '2040-02-29T23:59:59+02:00'];

const UUID_VARIANTS = ['upper', 'braces', 'brackets', 'parens', 'nohyphen', 'colons', 'urn', 'space', 'truncated', 'extra', 'mixed'] as const;
type UuidVariant = (typeof UUID_VARIANTS)[number];

export function uuidVariant(id: string, variant: string): string {
  switch (variant as UuidVariant) {
    case 'upper': return id.toUpperCase();
    case 'braces': return `{${id}}`;
    case 'brackets': return `[${id}]`;
    case 'parens': return `(${id})`;
    case 'nohyphen': return id.replace(/-/g, '');
    case 'colons': return id.replace(/-/g, ':');
    case 'urn': return `urn:uuid:${id}`;
    case 'space': return ` ${id} `;
    case 'truncated': return id.slice(0, 35);
    case 'extra': return `${id}a`;
    case 'mixed': return id.slice(0, 18).toUpperCase() + id.slice(18);
    default: return id;
  }
}

/** Malformed ids, as raw (already URL-encoded) path segments. */
const MALFORMED_PATH_IDS = [
  'abc', '0', '-1', 'null', 'undefined', '%00', 'a%00b', '%ED%A0%80', '%FF', '%ZZ', '%', '..', '%2E%2E', '%2F', 'a%2Fb',
  '%F0%9F%98%80', '%E2%80%AE', '*', '$', '%20', '__proto__', 'constructor', '1e400', 'x'.repeat(3000),
  '00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff', '00000000-0000-0000-0000-00000000000g',
];

/** Malformed ids inside a JSON body. */
const MALFORMED_BODY_IDS = ['abc', '', ' ', '\u0000', '\ud800', 'null', '00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff', 'x'.repeat(500)];

/** An id reference: a real row of the caller's project (own), of the other project, a random UUID, or junk. */
function idArb(type: ResourceType, context: 'path' | 'body', opts: { deleting?: boolean } = {}): fc.Arbitrary<{ text: string; kind: string }> {
  const own = opts.deleting ? 'ownMade' : 'own';
  // In bodies, ids go through Joi's guid() and then to PostgreSQL: non-canonical spellings matter more there.
  const variants = context === 'body' ? 25 : 12;
  return fc.oneof(
    { weight: 45, arbitrary: fc.nat(50).map((n) => ({ text: `⟦id:${type}:${own}:${n}⟧`, kind: 'own' })) },
    { weight: 12, arbitrary: fc.nat(50).map((n) => ({ text: `⟦id:${type}:other:${n}⟧`, kind: 'other' })) },
    { weight: 8, arbitrary: fc.tuple(fc.constantFrom(...RESOURCE_TYPES), fc.nat(50)).map(([t, n]) => ({ text: `⟦id:${t}:${own}:${n}⟧`, kind: t === type ? 'own' : 'ownOtherType' })) },
    { weight: 10, arbitrary: fc.uuid({ version: [4, 7] }).map((u) => ({ text: u, kind: 'random' })) },
    { weight: variants, arbitrary: fc.tuple(fc.nat(50), fc.constantFrom(...UUID_VARIANTS), fc.boolean()).map(([n, v, other]) => ({ text: `⟦id:${type}:${other ? 'other' : 'own'}:${n}:${v}⟧`, kind: `variant-${v}` })) },
    { weight: 13, arbitrary: fc.constantFrom(...(context === 'path' ? MALFORMED_PATH_IDS : MALFORMED_BODY_IDS)).map((t) => ({ text: t, kind: 'malformed' })) },
  );
}

const NASTY_STRINGS = [
  '', ' ', '\u0000', 'a\u0000b', '\ud800', 'x\udfffy', '\ud83d', '\udc00\ud800', '😀', '\u202e\u2066txt', '\r\n', 'a\r\nBcc: x@y.z',
  '\t', '%00', '\\', '"', "'; DROP TABLE contacts; --", '%_\\', '{{ x }}', '{% if %}', '<script>alert(1)</script>', '../../etc/passwd',
  'x'.repeat(300), 'é'.repeat(1100), '\uffff', '\ufeffbom', 'NaN', 'null', 'true', '0', '-1', '1e400', 'Infinity', '__proto__',
  'a@b', '@', 'ADA@EXAMPLE.COM', ' ada@example.org ', 'ada@example.org\u0000', 'ada@exa\u0000mple.org', 'ada@xn--80ak6aa92e.com',
  'ada@[127.0.0.1]', `${'a'.repeat(64)}@${'b'.repeat(63)}.com`, `${'a'.repeat(65)}@example.org`,
];

const NASTY_NUMBERS = [0, -0, -1, 1, 1.5, 0.1, 100, 101, 2 ** 31 - 1, 2 ** 31, -(2 ** 31) - 1, 2 ** 53, 2 ** 53 + 2, 1e308, -1e308, 5e-324, 1_000_001];

/** Raw JSON texts that JSON.stringify cannot produce. */
const RAW_TOKENS = [
  '⟪num:1e400⟫', '⟪num:-1e400⟫', '⟪num:1e-400⟫', '⟪num:-0⟫', '⟪num:123456789012345678901234567890⟫', '⟪num:0.30000000000000004440892098500626⟫',
  '⟪proto⟫', '⟪ctor⟫', '⟪deepobj:5000⟫', '⟪deeparr:5000⟫', '⟪deepobj:200⟫', '⟪deeparr:64⟫', '⟪bigstr:70000⟫', '⟪bigarr:20000⟫', '⟪bigobj:5000⟫',
  '⟪surrogates⟫', '⟪nulchars⟫',
];

const NASTY_KEYS = ['', ' ', '\u0000', 'a\u0000b', '\ud800', 'k\udfff', '__proto__', 'constructor', 'prototype', 'k'.repeat(101), 'k'.repeat(5000), 'a.b', '$where', '😀', '\u202e', 'toString', 'hasOwnProperty'];

export const nastyValueArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 30, arbitrary: fc.constantFrom<unknown>(...NASTY_STRINGS) },
  { weight: 10, arbitrary: fc.constantFrom<unknown>(...ODD_DATES) },
  { weight: 12, arbitrary: fc.constantFrom<unknown>(...NASTY_NUMBERS) },
  { weight: 15, arbitrary: fc.constantFrom<unknown>(...RAW_TOKENS) },
  { weight: 8, arbitrary: fc.constantFrom<unknown>(null, true, false, [], {}, [null], [''], { '': 1 }, [[[]]], { a: { b: { c: {} } } }) },
  { weight: 8, arbitrary: fc.tuple(fc.constantFrom(...RESOURCE_TYPES), fc.nat(20), fc.constantFrom('', ...UUID_VARIANTS)).map(([t, n, v]) => `⟦id:${t}:own:${n}${v ? `:${v}` : ''}⟧`) },
  { weight: 6, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 3, arbitrary: fc.uuid() },
);

export const nastyKeyArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...NASTY_KEYS) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }) },
);

// Liquid-ish texts. Render cost stays bounded (at most ~10,000 loop iterations); syntax errors and render errors included.
const LIQUID_BODIES_OK = [
  '<p>Hello {{ firstName }}</p>', '<p>{{ data.plan | upcase }}</p>', '{% if subscribed %}yes{% else %}no{% endif %}',
  '{% for i in (1..20) %}{{ i }},{% endfor %}', '{% for i in (1..100) %}{% for j in (1..100) %}.{% endfor %}{% endfor %}',
  '{{ "x" | append: "y" | size }}', '{% assign x = "a" %}{{ x }}', '<a href="{{ unsubscribeUrl }}">unsubscribe</a>',
  '{% raw %}{{ not rendered }}{% endraw %}', '{{ contact.email }} {{ email }}', '{% capture c %}{{ email }}{% endcapture %}{{ c | size }}',
  '{{ data | json }}', '{% liquid\necho email\n%}', '{{ "now" | date: "%Y" }}', '{{ data.x.y.z.w }}', '{{ a.b[0]["c"] }}',
  '{% cycle "a", "b" %}', '{% tablerow i in (1..5) %}{{ i }}{% endtablerow %}', '{% unless x %}u{% endunless %}', '{% case x %}{% when 1 %}one{% endcase %}',
  '{{ "%00" | url_decode }}', '{{ x | default: "\u0000" }}', '{% increment n %}{% decrement n %}', '<p>plain</p>', 'x',
];
const LIQUID_BODIES_BAD = [
  '{% include "header" %}', '{% render "x" %}', '{{ x | nosuchfilter }}', '{% if %}', '{{', '{% for %}', '{{ 1 | divided_by: 0 }}',
  '{% comment %}{{{% endcomment %}', '\u0000', '\ud800',
];
const LIQUID_SUBJECTS_OK = ['Hello {{ firstName }}', 'Plain subject', '{{ email }}', '{% if x %}a{% endif %}', '{{ x | upcase }}', 'Ünïcødé ✉', '{{ data.plan }}'];
const LIQUID_SUBJECTS_BAD = ['{{', '{{ x | nope }}', 'a\r\nBcc: x@example.org'];

/** Mostly `good`, now and then `bad`. */
function mostly<T>(good: readonly T[], bad: readonly T[]): fc.Arbitrary<T> {
  return fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...good) }, { weight: 1, arbitrary: fc.constantFrom(...bad) });
}
const liquidBodyArb = mostly(LIQUID_BODIES_OK, LIQUID_BODIES_BAD);
const liquidSubjectArb = mostly(LIQUID_SUBJECTS_OK, LIQUID_SUBJECTS_BAD);

const EMAIL_LOCALS = ['ada', 'bob', 'c.y', 'dee+tag', 'Eve', 'f_o'];
const EMAIL_DOMAINS = ['example.org', 'example.net', 'Example.ORG', 'mail.example.org'];
export const emailArb: fc.Arbitrary<string> = fc.tuple(fc.constantFrom(...EMAIL_LOCALS), fc.nat(40), fc.constantFrom(...EMAIL_DOMAINS)).map(([l, n, d]) => `${l}${n}@${d}`);
const nameArb = mostly(['Ada', 'Bob Builder', 'Ünïcødé', "O'Brien", ''], ['x'.repeat(201), 'a\nb']);
const eventNameArb = fc.constantFrom('signup', 'purchase', 'page.view', 'Signup', 'a', 'e'.repeat(100), 'ünï', 'email.opened', 'contact.subscribed');
const dataArb: fc.Arbitrary<Record<string, unknown>> = fc.dictionary(
  fc.constantFrom('plan', 'firstName', 'age', 'tags', 'nested', 'x', 'score'),
  fc.oneof(
    fc.string({ maxLength: 10 }), fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.string({ maxLength: 4 }), { maxLength: 3 }), fc.constant({ a: { b: 1 } }),
    // Plunk's { value, persistent } entries, and near misses that are plain objects.
    fc.constantFrom({ value: 'v', persistent: false }, { value: 2, persistent: true }, { value: null }, { value: 'x', persistent: 'no' }, { value: 1, other: 2 }),
  ),
  { maxKeys: 4 },
);
const roleArb = mostly(['admin', 'member', 'viewer'], ['owner', 'OWNER', '', 'god']);
/** A link's token: well-shaped (43 base64url characters, unknown to the database) or not. */
const linkTokenArb = mostly(['A'.repeat(43), 'abcdefghijklmnopqrstuvwxyz0123456789_-ABCDE'], ['', 'short', 'A'.repeat(44), '!'.repeat(43), 'A'.repeat(42) + '\u0000']);
const totpCodeArb = mostly(['123456', '000000'], ['', '12345', '1234567', 'abcdef', ' 12 34 ']);
const passwordArb = mostly(['correct horse battery', 'x'.repeat(256)], ['', 'short', 'x'.repeat(257)]);
const textArb = mostly(['', 'a description', 'x'.repeat(1000)], ['x'.repeat(2001)]);

// Audience conditions (campaign audienceFilter, segment condition).
const ruleArb: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  fc.record({ field: fc.constant('email'), operator: fc.constantFrom('equals', 'contains', 'startsWith', 'endsWith', 'notContains'), value: fc.constantFrom('ada', '@example.org', '%', '_', '\\') }),
  fc.record({ field: fc.constant('email'), operator: fc.constantFrom('exists', 'notExists') }),
  fc.record({ field: fc.constant('subscribed'), operator: fc.constantFrom('equals', 'notEquals'), value: fc.boolean() }),
  fc.record({ field: fc.constantFrom('createdAt', 'updatedAt'), operator: fc.constantFrom('greaterThan', 'lessThan', 'greaterThanOrEqual'), value: fc.constantFrom('2024-01-01T00:00:00Z', '2030-01-01', ...ODD_DATES.slice(0, 12)) }),
  fc.record({ field: fc.constantFrom('createdAt', 'updatedAt', 'data.signupAt'), operator: fc.constantFrom('within', 'olderThan'), value: fc.constantFrom(1, 7, 1_000_000), unit: fc.constantFrom('minutes', 'hours', 'days') }),
  fc.record({ field: fc.constantFrom('data.plan', 'data.nested.a', 'data.age'), operator: fc.constantFrom('equals', 'notEquals'), value: fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean(), fc.constant({ a: 1 })) }),
  fc.record({ field: fc.constantFrom('data.age', 'data.score'), operator: fc.constantFrom('greaterThan', 'lessThanOrEqual'), value: fc.oneof(fc.integer(), fc.constantFrom(1e308, -1e308, 5e-324, '2024-01-01', '0000-01-01T00:00:00Z')) }),
  fc.record({ field: fc.constantFrom('data.plan', 'data.tags'), operator: fc.constantFrom('exists', 'notExists') }),
  fc.record({ field: fc.constantFrom('event.signup', 'event.purchase', 'event.😀'), operator: fc.constantFrom('triggered', 'notTriggered') }),
  fc.record({ field: fc.constantFrom('event.signup', 'event.purchase'), operator: fc.constantFrom('triggeredWithin', 'notTriggeredWithin'), value: fc.constantFrom(1, 30), unit: fc.constantFrom('days', 'hours') }),
  fc.record({ field: idArb('segment', 'body').map((r) => `segment.${r.text}`), operator: fc.constantFrom('memberOf', 'notMemberOf') }),
);
export const conditionArb: fc.Arbitrary<Record<string, unknown>> = fc.record({
  logic: fc.constantFrom('AND', 'OR'),
  groups: fc.array(fc.record({ filters: fc.array(ruleArb, { minLength: 1, maxLength: 3 }) }), { minLength: 1, maxLength: 2 }),
});

// Workflow steps: a chain, each naming the next.
const stepBodyArb: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  idArb('template', 'body').map((r) => ({ type: 'SEND_EMAIL', config: { template: r.text } })),
  fc.record({ amount: fc.constantFrom(1, 5, 60, 525_600, 525_601), unit: fc.constantFrom('minutes', 'hours', 'days') }).map((config) => ({ type: 'DELAY', config })),
  fc.record({ event: eventNameArb, timeout: fc.option(fc.record({ amount: fc.constantFrom(1, 30), unit: fc.constantFrom('hours', 'days') }), { nil: undefined }) })
    .map((config) => ({ type: 'WAIT_FOR_EVENT', config: config.timeout ? config : { event: config.event } })),
  fc.record({ data: dataArb.filter((d) => Object.keys(d).length > 0), subscribed: fc.boolean() }).map((config) => ({ type: 'UPDATE_CONTACT', config })),
  fc.record({ url: fc.constantFrom('http://127.0.0.1:9/hook', 'https://hooks.example.org/x?y=1'), method: fc.constantFrom('POST', 'PUT', 'GET'), headers: fc.constantFrom({}, { 'X-Token': 'abc' }) })
    .map((c) => ({ type: 'WEBHOOK', config: c.method === 'GET' ? c : { ...c, body: { hello: 'world' } } })),
  conditionArb.map((filter) => ({ type: 'CONDITION', config: { filter } })),
);
export const stepsArb: fc.Arbitrary<Record<string, unknown>[]> = fc.tuple(fc.array(stepBodyArb, { minLength: 1, maxLength: 4 }), fc.boolean()).map(([bodies, exit]) => {
  const ids = bodies.map((_, i) => `s${i + 1}`);
  const steps: Record<string, unknown>[] = bodies.map((b, i) => {
    const next = ids[i + 1] ?? (exit ? 'end' : null);
    return b.type === 'CONDITION' ? { id: ids[i], ...b, branches: { yes: next, no: null } } : { id: ids[i], ...b, ...(next ? { next } : {}) };
  });
  if (exit) steps.push({ id: 'end', type: 'EXIT' });
  return steps;
});

const mailboxArb: fc.Arbitrary<unknown> = fc.oneof(
  emailArb,
  fc.tuple(nameArb, emailArb).map(([name, email]) => `${name} <${email}>`),
  fc.tuple(nameArb, emailArb).map(([name, email]) => ({ name, email })),
);
const ownSenderArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('team@⟦domain:own⟧', 'News <news@⟦domain:own⟧>', 'x@sub.⟦domain:own⟧') },
  { weight: 2, arbitrary: fc.constant({ name: 'Team', email: 'team@⟦domain:own⟧' }) },
  { weight: 1, arbitrary: fc.constantFrom('team@⟦domain:other⟧', 'team@unverified.example', 'TEAM@⟦domain:own⟧') },
);
const attachmentArb = fc.record({
  filename: mostly(['a.pdf', 'b.txt', 'Ünïcødé.txt'], ['invoice.exe', 'invoice.exe.', 'x\u202eexe.pdf', 'a/b.txt', 'f'.repeat(300), '\u0000.txt', '..']),
  content: mostly(['aGVsbG8=', 'aGVsbG8', 'QUJD'.repeat(2000)], ['', '!!!', 'a']),
  contentType: fc.option(mostly(['application/pdf', 'text/plain'], ['bad type', 'a/b; c=d']), { nil: undefined }),
  disposition: fc.option(mostly(['attachment', 'inline'], ['evil']), { nil: undefined }),
}, { requiredKeys: ['filename', 'content'] });

/** Strips `undefined` members (fc.option's nil) so that bodies are plain JSON. */
function compact<T extends Record<string, unknown>>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
/** Absent two times in three. */
const nonEmpty = (o: object) => Object.keys(o).length > 0;
const opt = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> => fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: a });

const sendBodyArb: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  { weight: 3, arbitrary: fc.record({
    to: fc.oneof(mailboxArb, fc.array(mailboxArb, { minLength: 1, maxLength: 4 })),
    from: ownSenderArb,
    subject: liquidSubjectArb,
    body: liquidBodyArb,
    type: opt(mostly(['html', 'markdown'], ['text', 'Markdown'])),
    data: opt(dataArb),
    name: opt(nameArb),
    reply: opt(emailArb),
    subscribed: opt(fc.boolean()),
    headers: opt(mostly<Record<string, string>>([{ 'X-Campaign': 'spring' }, { 'X-Entity-Ref-ID': 'abc-123', 'X-Priority': '1' }], [{ 'X-B': 'c\r\nd' }, { Subject: 'x' }, { 'Content-Type': 'text/plain' }, { 'bad name': 'x' }])),
    attachments: opt(fc.array(attachmentArb, { minLength: 1, maxLength: 2 })),
  }).map(compact) },
  { weight: 1, arbitrary: fc.record({
    to: mailboxArb,
    template: idArb('template', 'body').map((r) => r.text),
    data: opt(dataArb),
    subject: opt(liquidSubjectArb),
  }).map(compact) },
);

const templateFields = {
  name: fc.constantFrom('Welcome', ' padded ', 'ü', 'n'.repeat(200)),
  description: textArb,
  subject: liquidSubjectArb,
  body: liquidBodyArb,
  from: fc.constantFrom<string | null>('team@⟦domain:own⟧', 'x@example.org', null),
  fromName: fc.constantFrom<string | null>('Team', '', null),
  replyTo: fc.constantFrom<string | null>('reply@example.org', null),
  type: fc.constantFrom('TRANSACTIONAL', 'MARKETING'),
  bodyType: mostly(['html', 'markdown'], ['text', 'HTML']),
};

const campaignAudienceArb: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  fc.constant({ audienceType: 'ALL' }),
  idArb('segment', 'body').map((r) => ({ audienceType: 'SEGMENT', segmentId: r.text })),
  conditionArb.map((audienceFilter) => ({ audienceType: 'FILTERED', audienceFilter })),
);
const campaignFields = {
  name: fc.constantFrom('Spring sale', 'n'.repeat(200), ' x '),
  description: fc.constantFrom<string | null>('d', '', null),
  subject: liquidSubjectArb,
  body: liquidBodyArb,
  from: mostly(['news@⟦domain:own⟧', 'news@sub.⟦domain:own⟧'], ['news@⟦domain:other⟧', 'news@unverified.example']),
  fromName: fc.constantFrom<string | null>('News', '', null),
  replyTo: fc.constantFrom<string | null>('reply@example.org', null),
  previewText: fc.constantFrom<string | null>('Three things, {{ email }}', '', null, 'Hi {{'),
};

/** An A/B campaign's variants and test (issue 32), mostly none; some with too few or too many variants, or a test out of range. */
const abArb = fc.oneof(
  { weight: 3, arbitrary: fc.constant({}) },
  fc.record({
    variants: fc.array(fc.record({ name: fc.constantFrom<string | null>('Question', '', null), subject: liquidSubjectArb, previewText: fc.constantFrom<string | null>('Pre', null), body: liquidBodyArb }, { requiredKeys: [] }), { minLength: 1, maxLength: 6 }),
    abTest: fc.record({ samplePercent: mostly([10, 50], [0, 51]), waitMinutes: mostly([10, 240, 10080], [5, 10081]), metric: mostly(['opens', 'clicks', 'manual'], ['views']) }),
  }, { requiredKeys: [] }),
);

// ---------------------------------------------------------------------------------------------------------------
// Per-route generators. Every route of the app needs one (the test fails otherwise).

type QueryPair = [string, string];
export interface RouteGen {
  /** Path parameters and what they refer to. */
  ids?: Record<string, ResourceType | 'unsubscribe' | 'address' | 'openToken' | 'clickToken' | 'index' | 'fileToken'>;
  /** Near-valid JSON body; absent: the route takes none (a stray body is still sent now and then). */
  body?: fc.Arbitrary<unknown>;
  /** Valid query parameters (URL-encoded when sent); the fuzz adds bad ones. */
  query?: fc.Arbitrary<QueryPair[]>;
  /** A successful answer is a page ({items, nextCursor, hasMore, total}). */
  list?: boolean;
  /** Successful answers add (`creates`) or remove (`deletes`) an id of this type in the caller's pool. */
  creates?: ResourceType;
  deletes?: ResourceType;
  /** Key types the route accepts: secret only (default), secret or public (/v1/track), none (open routes). */
  keys?: 'secret' | 'any' | 'none';
  /** Not JSON: the unsubscribe pages. */
  html?: boolean;
  /** Not JSON when it succeeds: the open pixel (a GIF) and the click redirect (a 302 with Location). */
  tracking?: 'pixel' | 'redirect';
  /** The API's own description: the OpenAPI document (JSON, not in the envelope), the reference and guide pages, their scripts, styles and icon. */
  reference?: 'document' | 'page' | 'script' | 'style' | 'icon' | 'metrics';
  /** Single sign-on (GET /auth/oidc/…): a 302 to the provider, to the console, or to its login page with an error code. */
  sso?: true;
  /** Not JSON when it succeeds: an email's message (message/rfc822, as an .eml attachment). */
  mime?: true;
  /** The body is a file (POST /contacts/imports): near-valid uploads with their media type instead of JSON. */
  upload?: fc.Arbitrary<{ contentType: string; text: string }>;
  /** Not JSON when it succeeds: a download whose Content-Type matches (CSV, JSON Lines, a file's bytes). */
  download?: RegExp;
}

const limitArb = fc.oneof({ weight: 8, arbitrary: fc.integer({ min: 1, max: 100 }).map(String) }, { weight: 1, arbitrary: fc.constantFrom('0', '101', '-1', 'abc', '1.5', '1e2', '', ' 5', '9'.repeat(400), '0x10') });
function cursorArb(type: ResourceType): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.tuple(fc.constantFrom('own', 'other'), fc.nat(50)).map(([k, n]) => `⟦cursor:${type}:${k}:${n}⟧`) },
    { weight: 1, arbitrary: fc.constantFrom('bm9wZQ', '', '%', 'x'.repeat(201), encodeCursor('00000000-0000-0000-0000-000000000000'),
      Buffer.from('v1:{00000000-0000-0000-0000-000000000000}').toString('base64url'), Buffer.from('v1:').toString('base64url'), Buffer.from('v1:\u0000').toString('base64url'),
      Buffer.from('v1:FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF').toString('base64url')) },
  );
}
function listQuery(type: ResourceType, extra: Record<string, fc.Arbitrary<string>> = {}): fc.Arbitrary<QueryPair[]> {
  const all: Record<string, fc.Arbitrary<string>> = { limit: limitArb, cursor: cursorArb(type), ...extra };
  return fc.record(Object.fromEntries(Object.entries(all).map(([k, a]) => [k, opt(a)])))
    .map((r) => Object.entries(r).filter((e): e is [string, string] => e[1] !== undefined));
}
const boolText = mostly(['true', 'false'], ['TRUE', '1', '0', 'yes', '']);
const dateText = fc.oneof({ weight: 2, arbitrary: fc.constantFrom('2024-01-01T00:00:00Z', '2030-01-01') }, { weight: 1, arbitrary: fc.constantFrom(...ODD_DATES) });

const webhookFields = {
  url: mostly(['https://hooks.example.org/herald', 'http://hooks.example.org:8080/in?x=1'], ['ftp://hooks.example.org/', 'not a url', 'https://u:p@hooks.example.org/', 'https://hooks.example.org/\r\nX: 1', `https://hooks.example.org/${'x'.repeat(2001)}`, '']),
  events: fc.oneof(
    { weight: 3, arbitrary: fc.subarray(['email.sent', 'email.failed', 'email.opened', 'contact.created', 'campaign.sent'], { minLength: 1 }) },
    { weight: 1, arbitrary: fc.constantFrom<unknown>([], ['email.nope'], 'email.sent', [1], null) },
  ),
  enabled: fc.oneof({ weight: 3, arbitrary: fc.boolean() }, { weight: 1, arbitrary: fc.constantFrom<unknown>('yes', null) }),
};

/** A small contact file, now and then broken: bad rows, a stray quote, NUL bytes, the wrong media type. */
const uploadArb: fc.Arbitrary<{ contentType: string; text: string }> = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(fc.array(emailArb, { minLength: 1, maxLength: 5 }), fc.constantFrom(',', ';')).map(([emails, d]) => ({
    contentType: 'text/csv', text: `Email${d}Plan${d}Seats\r\n${emails.map((e, i) => `${e}${d}${i % 2 ? 'pro' : 'free'}${d}${i}`).join('\r\n')}\r\n`,
  })) },
  { weight: 2, arbitrary: fc.array(emailArb, { minLength: 1, maxLength: 5 }).map((emails) => ({
    contentType: 'application/x-ndjson', text: emails.map((email) => JSON.stringify({ email, plan: 'pro' })).join('\n'),
  })) },
  { weight: 3, arbitrary: fc.constantFrom(
    { contentType: 'text/csv', text: 'Email,Plan\r\n"broken@example.org,pro\r\nok@example.org,free\r\n' },
    { contentType: 'text/csv', text: 'Email\r\nnot an address\r\na\u0000b@example.org\r\n' },
    { contentType: 'text/csv', text: '' },
    { contentType: 'text/csv', text: '\ufeffEmail\r\nbom@example.org\r\n' },
    { contentType: 'application/x-ndjson', text: '{"email":"a@example.org"}\n{not json}\n[1,2]\n' },
    { contentType: 'application/pdf', text: '%PDF-1.4' },
    { contentType: 'text/csv; charset=utf-16', text: 'Email\r\nx@example.org' },
  ) },
);
const importColumnsArb = mostly(
  [JSON.stringify([{ column: 'Email', to: 'email' }, { column: 'Plan', to: 'data', key: 'plan' }, { column: 'Seats', to: 'data', key: 'seats', type: 'number' }]), JSON.stringify([{ column: 'Email', to: 'email' }]), JSON.stringify([{ column: 'email', to: 'email' }])],
  ['[]', 'not json', JSON.stringify([{ column: 'Email', to: 'nowhere' }]), JSON.stringify([{ column: 'Plan', to: 'data' }]), JSON.stringify([{ column: 'Email', to: 'email' }, { column: 'Email', to: 'email' }]), '{}'],
);
const importQueryArb: fc.Arbitrary<QueryPair[]> = fc.record({
  columns: importColumnsArb, mode: opt(mostly(['create', 'update', 'upsert'], ['merge', ''])), data: opt(mostly(['merge', 'replace'], ['keep'])),
  subscribed: opt(boolText), resubscribe: opt(boolText), segmentId: opt(idArb('segment', 'body').map((r) => r.text)), name: opt(fc.constantFrom('customers.csv', '', 'x'.repeat(300))),
}).map((r) => Object.entries(r).filter((e): e is [string, string] => e[1] !== undefined));
const exportQueryArb: fc.Arbitrary<QueryPair[]> = fc.record({
  format: opt(mostly(['csv', 'jsonl'], ['xml', ''])),
  columns: opt(mostly(['email,subscribed,createdAt,data.plan', 'email'], ['', 'password', 'data.', ',,,', 'x'.repeat(11_000)])),
  segmentId: opt(idArb('segment', 'body').map((r) => r.text)),
  filter: opt(mostly([JSON.stringify({ logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] })], ['{', '[]', JSON.stringify({ logic: 'XOR', groups: [] })])),
}).map((r) => Object.entries(r).filter((e): e is [string, string] => e[1] !== undefined));
const inboundRouteFields = {
  match: mostly(['support@in1.⟦domain:own⟧', '*@in1.⟦domain:own⟧', 'help+*@in1.⟦domain:own⟧'], ['*@⟦domain:other⟧', 'nobody', '', '*@*', 'a\r\nb@in1.⟦domain:own⟧']),
  priority: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 0, max: 100 }) }, { weight: 1, arbitrary: fc.constantFrom<unknown>(-1, 100001, 1.5, '5', null) }),
  action: mostly(['store', 'webhook', 'reject'], ['forward', '']),
  endpointId: fc.oneof(idArb('webhook', 'body').map((r) => r.text as string | null), fc.constant(null)),
  rejectMessage: fc.constantFrom<string | null>('No such mailbox', '', null, 'a\r\n250 OK', 'x'.repeat(201)),
};

export const ROUTE_GENERATORS: Record<string, RouteGen> = {
  'GET /health': { keys: 'none' },
  'GET /unsubscribe/:token': { keys: 'none', ids: { token: 'unsubscribe' }, html: true },
  'POST /unsubscribe/:token': { keys: 'none', ids: { token: 'unsubscribe' }, html: true },
  'GET /t/o/:token': { keys: 'none', ids: { token: 'openToken' }, tracking: 'pixel' },
  'GET /t/c/:token': { keys: 'none', ids: { token: 'clickToken' }, tracking: 'redirect' },
  'GET /openapi.json': { keys: 'none', reference: 'document' },
  'GET /docs': { keys: 'none', reference: 'page' },
  'GET /docs/redoc.standalone.js': { keys: 'none', reference: 'script' },
  'GET /docs/reference.js': { keys: 'none', reference: 'script' },
  'GET /docs/guide': { keys: 'none', reference: 'page' },
  'GET /docs/guide.css': { keys: 'none', reference: 'style' },
  'GET /favicon.svg': { keys: 'none', reference: 'icon' },
  'GET /favicon.ico': { keys: 'none', reference: 'icon' },
  'GET /metrics': { keys: 'none', reference: 'metrics' },

  // People (issue 27): without a session cookie (the fuzz sends keys), every one but the login is a 401.
  'POST /auth/login': { keys: 'none', body: fc.record({ email: emailArb, password: fc.string({ minLength: 0, maxLength: 300 }) }) },
  'POST /auth/logout': { keys: 'none' },
  'GET /auth/session': { keys: 'none' },
  'GET /auth/sessions': { keys: 'none' },
  'DELETE /auth/sessions/:id': { keys: 'none', ids: { id: 'contact' } },
  'POST /auth/login/two-factor': {
    keys: 'none',
    body: fc.record({ challenge: linkTokenArb, code: opt(totpCodeArb), recoveryCode: opt(mostly(['abcde-fghij'], ['', 'x'.repeat(65)])) }).map(compact),
  },
  'POST /auth/two-factor': { keys: 'none' },
  'POST /auth/two-factor/confirm': { keys: 'none', body: fc.record({ code: totpCodeArb }) },
  'DELETE /auth/two-factor': { keys: 'none', body: fc.record({ password: opt(passwordArb), code: opt(totpCodeArb) }).map(compact) },
  'GET /auth/providers': { keys: 'none' },
  // SSO is off in the fuzz app: both land on the login page (unavailable), whatever the provider's answer seems to say.
  'GET /auth/oidc/login': { keys: 'none', sso: true },
  'GET /auth/oidc/callback': { keys: 'none', sso: true,
    query: fc.record({ code: opt(fc.string({ maxLength: 100 })), state: opt(fc.string({ maxLength: 100 })), error: opt(fc.constantFrom('access_denied', 'invalid_request', '', '<script>')) })
      .map((r) => Object.entries(r).filter((e): e is [string, string] => e[1] !== undefined)) },

  'POST /v1/send': { body: sendBodyArb, creates: 'contact' },
  'POST /v1/track': {
    keys: 'any',
    body: fc.record({ email: emailArb, event: eventNameArb, subscribed: opt(fc.boolean()), data: opt(dataArb) }).map(compact),
  },
  'POST /v1/verify': { body: fc.record({ email: fc.oneof(emailArb, fc.constantFrom('not-an-address', 'a@b', 'ada@gmial.com', 'x@localhost', '"quoted local"@example.org', 'ada@[192.0.2.1]', `${'a'.repeat(300)}@example.org`)) }) },

  'GET /contacts': { list: true, query: listQuery('contact', { subscribed: boolText, search: fc.constantFrom('ada', '%', '_', '\\', 'A%_\\', 'x'.repeat(254), 'x'.repeat(255), '\u0000', ' ', '@example.org') }) },
  'POST /contacts': { body: fc.record({ email: emailArb, subscribed: opt(fc.boolean()), data: opt(dataArb) }).map(compact), creates: 'contact' },
  'GET /contacts/:id': { ids: { id: 'contact' } },
  'PATCH /contacts/:id': { ids: { id: 'contact' }, body: fc.record({ subscribed: opt(fc.boolean()), data: opt(dataArb) }).map(compact).filter(nonEmpty) },
  'DELETE /contacts/:id': { ids: { id: 'contact' }, deletes: 'contact' },

  'GET /templates': { list: true, query: listQuery('template', { type: fc.constantFrom('TRANSACTIONAL', 'MARKETING', 'transactional', 'OTHER') }) },
  'POST /templates': { body: fc.record(templateFields, { requiredKeys: ['name', 'subject', 'body'] }), creates: 'template' },
  'GET /templates/:id': { ids: { id: 'template' } },
  'PATCH /templates/:id': { ids: { id: 'template' }, body: fc.record(templateFields, { requiredKeys: [] }).filter(nonEmpty) },
  'DELETE /templates/:id': { ids: { id: 'template' }, deletes: 'template' },
  'POST /templates/preview': {
    body: fc.record({
      subject: liquidSubjectArb, body: liquidBodyArb, bodyType: opt(templateFields.bodyType),
      contactId: opt(idArb('contact', 'body').map((r) => r.text)), data: opt(dataArb),
    }).map(compact),
  },
  'POST /templates/:id/test': {
    ids: { id: 'template' },
    body: fc.record({ to: opt(fc.array(emailArb, { minLength: 1, maxLength: 3 })), contactId: opt(idArb('contact', 'body').map((r) => r.text)), data: opt(dataArb) }).map(compact),
  },

  'GET /segments': { list: true, query: listQuery('segment') },
  'POST /segments': {
    body: fc.oneof(
      fc.record({ name: fc.constantFrom('VIP', 's'.repeat(200)), type: fc.constant('STATIC'), description: opt(textArb) }).map(compact),
      fc.record({ name: fc.constantFrom('Pro users', 'Ü'), type: fc.constant('DYNAMIC'), condition: conditionArb }),
    ),
    creates: 'segment',
  },
  'POST /segments/preview': { body: fc.record({ condition: conditionArb }) },
  'GET /segments/:id': { ids: { id: 'segment' } },
  'PATCH /segments/:id': { ids: { id: 'segment' }, body: fc.record({ name: fc.constantFrom('Renamed', ''), description: fc.constantFrom<string | null>('d', null), condition: conditionArb }, { requiredKeys: [] }).filter(nonEmpty) },
  'DELETE /segments/:id': { ids: { id: 'segment' }, deletes: 'segment' },
  'GET /segments/:id/contacts': { ids: { id: 'segment' }, list: true, query: listQuery('contact') },
  'POST /segments/:id/members': { ids: { id: 'segment' }, body: fc.record({ emails: fc.array(emailArb, { minLength: 1, maxLength: 5 }) }) },
  'DELETE /segments/:id/members': { ids: { id: 'segment' }, body: fc.record({ emails: fc.array(emailArb, { minLength: 1, maxLength: 5 }) }) },

  'GET /campaigns': { list: true, query: listQuery('campaign', { status: fc.constantFrom('DRAFT', 'SCHEDULED', 'SENT', 'draft', 'NOPE') }) },
  'POST /campaigns': {
    body: fc.tuple(fc.record(campaignFields, { requiredKeys: ['name', 'subject', 'body', 'from'] }), campaignAudienceArb, abArb).map(([f, a, ab]) => ({ ...f, ...a, ...ab })),
    creates: 'campaign',
  },
  'GET /campaigns/:id': { ids: { id: 'campaign' } },
  'PATCH /campaigns/:id': {
    ids: { id: 'campaign' },
    body: fc.tuple(fc.record(campaignFields, { requiredKeys: [] }), fc.option(campaignAudienceArb, { nil: undefined })).map(([f, a]) => ({ ...f, ...(a ?? {}) })).filter(nonEmpty),
  },
  'DELETE /campaigns/:id': { ids: { id: 'campaign' }, deletes: 'campaign' },
  'POST /campaigns/:id/send': { ids: { id: 'campaign' }, body: fc.oneof(fc.constant({}), fc.record({ scheduledAt: fc.oneof(fc.constantFrom(...FUTURE_DATES), fc.constantFrom(...ODD_DATES)) })) },
  'POST /campaigns/:id/cancel': { ids: { id: 'campaign' } },
  'POST /campaigns/:id/test': { ids: { id: 'campaign' }, body: fc.record({ emails: fc.array(emailArb, { minLength: 1, maxLength: 3 }), variant: mostly(['A', 'B'], ['E', 'z']) }, { requiredKeys: ['emails'] }) },
  'POST /campaigns/:id/winner': { ids: { id: 'campaign' }, body: fc.record({ variant: mostly(['A', 'B'], ['E', 'z', '']) }) },
  'GET /campaigns/:id/stats': { ids: { id: 'campaign' }, query: fc.option(mostly(['hour', 'day'], ['week', 'HOUR', '']), { nil: undefined }).map((v): QueryPair[] => (v === undefined ? [] : [['series', v]])) },
  'POST /campaigns/audience': { body: campaignAudienceArb },

  'GET /events': {
    list: true,
    query: listQuery('contact', {
      name: eventNameArb, contactId: idArb('contact', 'body').map((r) => r.text), since: dateText, until: dateText,
    }),
  },
  'GET /events/names': {},

  'GET /suppressions': { list: true, query: listQuery('contact', { reason: fc.constantFrom('hard_bounce', 'complaint', 'manual', 'unsubscribed', 'HARD_BOUNCE', '') }) },
  'POST /suppressions': { body: fc.record({ email: emailArb, reason: opt(fc.constantFrom('hard_bounce', 'complaint', 'manual', 'other')), note: opt(textArb) }).map(compact) },
  'DELETE /suppressions/:email': { ids: { email: 'address' } },
  'GET /emails': {
    list: true,
    query: listQuery('email', {
      status: fc.constantFrom('QUEUED', 'SENT', 'sent', 'FAILED', 'CANCELLED', 'SENDING', 'SUPPRESSED', 'BOUNCED', 'X', '', 'SENT,FAILED'),
      to: fc.oneof(emailArb, fc.constantFrom('', 'not-an-address', 'x'.repeat(300))),
      campaignId: idArb('campaign', 'body').map((r) => r.text), contactId: idArb('contact', 'body').map((r) => r.text), since: dateText, until: dateText,
    }),
  },
  'GET /emails/:id': { ids: { id: 'email' } },
  'GET /emails/:id/raw': { ids: { id: 'email' }, mime: true },
  'GET /stats/overview': { query: fc.array(fc.tuple(fc.constant('days'), mostly(['7', '30', '90'], ['8', '0', '-7', '7.5', 'week', '', '9'.repeat(40)])), { maxLength: 1 }) },
  'GET /settings': {},
  'PATCH /settings': {
    body: fc.record({
      tracking: fc.record({ send: opt(fc.record({ opens: opt(fc.boolean()), clicks: opt(fc.boolean()) }).map(compact)), campaigns: opt(fc.record({ opens: opt(fc.boolean()), clicks: opt(fc.boolean()) }).map(compact)) }).map(compact),
      requireTwoFactor: opt(fc.boolean()),
    }),
  },
  'GET /webhooks': { list: true, query: listQuery('webhook') },
  'POST /webhooks': { body: fc.record(webhookFields, { requiredKeys: ['url', 'events'] }), creates: 'webhook' },
  'GET /webhooks/:id': { ids: { id: 'webhook' } },
  'PATCH /webhooks/:id': { ids: { id: 'webhook' }, body: fc.record(webhookFields, { requiredKeys: [] }).filter(nonEmpty) },
  'DELETE /webhooks/:id': { ids: { id: 'webhook' }, deletes: 'webhook' },
  'POST /webhooks/:id/rotate-secret': { ids: { id: 'webhook' } },
  'GET /webhooks/:id/deliveries': { ids: { id: 'webhook' }, list: true, query: listQuery('webhookDelivery') },
  'POST /webhooks/:id/deliveries/:deliveryId/redeliver': { ids: { id: 'webhook', deliveryId: 'webhookDelivery' } },

  'GET /workflows': { list: true, query: listQuery('workflow', { enabled: boolText }) },
  'POST /workflows': {
    body: fc.record({
      name: fc.constantFrom('Onboarding', 'w'.repeat(200)), description: opt(textArb), enabled: opt(fc.boolean()),
      trigger: fc.record({ type: fc.constant('EVENT'), event: eventNameArb }), steps: stepsArb, allowReentry: opt(fc.boolean()),
    }).map(compact),
    creates: 'workflow',
  },
  'GET /workflows/:id': { ids: { id: 'workflow' } },
  'PATCH /workflows/:id': {
    ids: { id: 'workflow' },
    body: fc.record({ name: fc.constant('Renamed'), enabled: fc.boolean(), trigger: fc.record({ type: fc.constant('EVENT'), event: eventNameArb }), steps: stepsArb, allowReentry: fc.boolean() }, { requiredKeys: [] }).filter(nonEmpty),
  },
  'DELETE /workflows/:id': { ids: { id: 'workflow' }, deletes: 'workflow' },
  'GET /workflows/:id/executions': {
    ids: { id: 'workflow' }, list: true,
    query: listQuery('execution', { status: fc.constantFrom('RUNNING', 'WAITING', 'running', 'X'), contactId: idArb('contact', 'body').map((r) => r.text) }),
  },
  'GET /workflows/:id/executions/:executionId': { ids: { id: 'workflow', executionId: 'execution' } },
  'POST /workflows/:id/executions/:executionId/cancel': { ids: { id: 'workflow', executionId: 'execution' } },

  'GET /domains': { list: true, query: listQuery('domain', { status: fc.constantFrom('PENDING', 'VERIFIED', 'FAILED', 'pending') }) },
  'POST /domains': {
    body: fc.record({ domain: fc.oneof(
      fc.tuple(fc.constantFrom('mail', 'news', 'bücher', 'x'), fc.nat(30), fc.constantFrom('example.com', 'example.co.uk', 'test-fuzz.org')).map(([a, n, b]) => `${a}${n}.${b}`),
      fc.constantFrom('co.uk', 'localhost', '192.0.2.1', '-bad-.com', 'a..b.com', '⟦domain:own⟧', '⟦domain:other⟧', `${'a'.repeat(64)}.com`, 'EXAMPLE.COM.'),
    ) }),
    creates: 'domain',
  },
  'GET /domains/:id': { ids: { id: 'domain' } },
  'DELETE /domains/:id': { ids: { id: 'domain' }, deletes: 'domain' },
  'POST /domains/:id/verify': { ids: { id: 'domain' } },

  // People: members and invitations (a key acts as an admin), and the open routes of people's links.
  'GET /keys': { list: true, query: listQuery('key') },
  'POST /keys': {
    body: fc.record({
      name: mostly(['CI', 'Newsletter tool'], ['', 'x'.repeat(201), ' ', 'a\u0000b']),
      scope: mostly(['full', 'sending'], ['admin', '', 'FULL']),
      domains: fc.oneof(fc.constant(['⟦domain:own⟧']), fc.constant([]), fc.constant(['not a domain']), fc.constant('example.com')),
    }, { requiredKeys: ['name'] }),
    creates: 'key',
  },
  'DELETE /keys/:id': { ids: { id: 'key' }, deletes: 'key' },
  'GET /audit-log': {
    list: true,
    query: listQuery('auditEntry', {
      operation: mostly(['deleteContact', 'createKey'], ['', 'x'.repeat(300)]),
      resourceType: mostly(['contact', 'key'], ['', 'nope']),
      resourceId: fc.constantFrom('⟦id:contact:own:0⟧', 'not-a-uuid', ''),
      actor: fc.constantFrom('⟦id:contact:own:0⟧', 'not-a-uuid'),
      since: dateText,
      until: dateText,
    }),
  },
  'GET /members': { list: true },
  'PATCH /members/:userId': { ids: { userId: 'member' }, body: fc.record({ role: roleArb }) },
  'DELETE /members/:userId': { ids: { userId: 'member' } },
  'POST /invitations': { body: fc.record({ email: emailArb, role: roleArb }), creates: 'invitation' },
  'GET /invitations': { list: true },
  'DELETE /invitations/:id': { ids: { id: 'invitation' }, deletes: 'invitation' },
  'POST /invitations/accept': { keys: 'none', body: fc.record({ token: linkTokenArb, name: nameArb, password: passwordArb }) },
  'POST /auth/password-reset': { keys: 'none', body: fc.record({ email: emailArb }) },
  'POST /auth/password-reset/confirm': { keys: 'none', body: fc.record({ token: linkTokenArb, password: passwordArb }) },
  'POST /auth/setup': { keys: 'none', body: fc.record({ token: linkTokenArb, email: emailArb, name: nameArb, password: passwordArb }) },

  // Contacts in bulk: imports (the body is the file, the options in the query), exports and a contact's data.
  'POST /contacts/imports/preview': { upload: uploadArb },
  'POST /contacts/imports': { upload: uploadArb, query: importQueryArb, creates: 'contactImport' },
  'GET /contacts/imports': { list: true, query: listQuery('contactImport') },
  'GET /contacts/imports/:id': { ids: { id: 'contactImport' } },
  'GET /contacts/imports/:id/errors': { ids: { id: 'contactImport' }, download: /^text\/csv/ },
  'POST /contacts/imports/:id/cancel': { ids: { id: 'contactImport' } },
  'GET /contacts/export': { query: exportQueryArb, download: /^(text\/csv|application\/x-ndjson)/ },
  'GET /contacts/:id/export': { ids: { id: 'contact' }, download: /^application\/json/ },

  // Inbound mail: domains, routes, and what arrived (none in the fuzz's world: own ids of messages are unknown ones).
  'GET /inbound/domains': { list: true, query: listQuery('inboundDomain') },
  'POST /inbound/domains': {
    body: fc.record({ domain: fc.oneof(
      fc.tuple(fc.constantFrom('in', 'reply', 'x'), fc.nat(30)).map(([a, n]) => `${a}${n}.⟦domain:own⟧`),
      fc.constantFrom('in.⟦domain:other⟧', 'localhost', '192.0.2.1', 'a..b.com', 'co.uk', `${'a'.repeat(64)}.com`),
    ) }),
    creates: 'inboundDomain',
  },
  'GET /inbound/domains/:id': { ids: { id: 'inboundDomain' } },
  'DELETE /inbound/domains/:id': { ids: { id: 'inboundDomain' }, deletes: 'inboundDomain' },
  'POST /inbound/domains/:id/verify': { ids: { id: 'inboundDomain' } },
  'GET /inbound/routes': { list: true, query: listQuery('inboundRoute', { domainId: idArb('inboundDomain', 'body').map((r) => r.text) }) },
  'POST /inbound/routes': { body: fc.record(inboundRouteFields, { requiredKeys: ['match', 'action'] }), creates: 'inboundRoute' },
  'GET /inbound/routes/:id': { ids: { id: 'inboundRoute' } },
  'PATCH /inbound/routes/:id': { ids: { id: 'inboundRoute' }, body: fc.record(inboundRouteFields, { requiredKeys: [] }).filter(nonEmpty) },
  'DELETE /inbound/routes/:id': { ids: { id: 'inboundRoute' }, deletes: 'inboundRoute' },
  'GET /inbound': {
    list: true,
    query: listQuery('inboundMessage', {
      route: idArb('inboundRoute', 'body').map((r) => r.text), from: fc.oneof(emailArb, fc.constantFrom('', 'not-an-address')),
      to: fc.oneof(emailArb, fc.constantFrom('', 'x'.repeat(400))), since: dateText, until: dateText,
    }),
  },
  'GET /inbound/:id': { ids: { id: 'inboundMessage' } },
  'GET /inbound/:id/raw': { ids: { id: 'inboundMessage' }, download: /^message\/rfc822/ },
  'GET /inbound/:id/attachments/:n': { ids: { id: 'inboundMessage', n: 'index' }, download: /./ },
  'GET /inbound-files/:token': { keys: 'none', ids: { token: 'fileToken' }, download: /./ },
};

// ---------------------------------------------------------------------------------------------------------------
// Mutation of a near-valid body.

type Json = unknown;
type PathStep = string | number;

function paths(value: Json, max = 60): PathStep[][] {
  const out: PathStep[][] = [];
  const walk = (v: Json, p: PathStep[]) => {
    if (out.length >= max || p.length > 5) return;
    out.push(p);
    if (Array.isArray(v)) v.forEach((x, i) => walk(x, [...p, i]));
    else if (v && typeof v === 'object') for (const k of Object.keys(v)) walk((v as Record<string, Json>)[k], [...p, k]);
  };
  walk(value, []);
  return out;
}

function getAt(v: Json, p: PathStep[]): Json {
  return p.reduce<Json>((acc, k) => (acc as Record<string, Json>)?.[k as string], v);
}

function setAt(root: Json, p: PathStep[], value: Json): Json {
  if (p.length === 0) return value;
  const parent = getAt(root, p.slice(0, -1)) as Record<string, Json>;
  parent[p[p.length - 1] as string] = value;
  return root;
}

export interface Mutation {
  op: 'none' | 'drop' | 'set' | 'addKey' | 'replace' | 'deep' | 'taint' | 'retype';
  at: number;
  value: unknown;
  key: string;
  taint: string;
}

const TAINTS = ['\u0000', '\ud800', '\udfff', '\r\n', '⟪bigstr:70000⟫', ' ', '\u202e', '😀'];

export const mutationArb: fc.Arbitrary<Mutation> = fc.record({
  op: fc.oneof(
    { weight: 34, arbitrary: fc.constant('none' as const) },
    { weight: 8, arbitrary: fc.constant('drop' as const) },
    { weight: 20, arbitrary: fc.constant('set' as const) },
    { weight: 8, arbitrary: fc.constant('addKey' as const) },
    { weight: 4, arbitrary: fc.constant('replace' as const) },
    { weight: 6, arbitrary: fc.constant('deep' as const) },
    { weight: 12, arbitrary: fc.constant('taint' as const) },
    { weight: 8, arbitrary: fc.constant('retype' as const) },
  ),
  at: fc.nat(),
  value: nastyValueArb,
  key: nastyKeyArb,
  taint: fc.constantFrom(...TAINTS),
});

function retype(v: Json): Json {
  if (typeof v === 'string') return v.length ? 42 : [];
  if (typeof v === 'number') return String(v);
  if (typeof v === 'boolean') return v ? 'true' : 0;
  if (Array.isArray(v)) return Object.fromEntries(v.map((x, i) => [String(i), x]));
  if (v && typeof v === 'object') return Object.values(v);
  return 'null';
}

/** Applies one mutation to a copy of `body`; returns the result and a short label of what was done. */
export function mutate(body: Json, m: Mutation): { value: Json; label: string } {
  if (m.op === 'none') return { value: body, label: 'valid' };
  const root = structuredClone(body);
  const all = paths(root);
  const pick = all[m.at % all.length] ?? [];
  const where = pick.join('.') || '<body>';
  switch (m.op) {
    case 'drop': {
      const keyed = all.filter((p) => p.length > 0);
      const p = keyed[m.at % Math.max(1, keyed.length)];
      if (!p) return { value: root, label: 'valid' };
      const parent = getAt(root, p.slice(0, -1));
      if (Array.isArray(parent)) parent.splice(p[p.length - 1] as number, 1);
      else delete (parent as Record<string, Json>)[p[p.length - 1] as string];
      return { value: root, label: `drop ${p.join('.')}` };
    }
    case 'set':
      return { value: setAt(root, pick, m.value), label: `set ${where}` };
    case 'addKey': {
      const objects = all.filter((p) => { const v = getAt(root, p); return v !== null && typeof v === 'object' && !Array.isArray(v); });
      const p = objects[m.at % Math.max(1, objects.length)] ?? [];
      const target = getAt(root, p);
      if (target === null || typeof target !== 'object' || Array.isArray(target)) return { value: { [m.key]: m.value }, label: 'addKey <body>' };
      Object.defineProperty(target, m.key, { value: m.value, enumerable: true, writable: true, configurable: true });
      return { value: root, label: `addKey ${p.join('.') || '<body>'}` };
    }
    case 'replace':
      return { value: m.value, label: 'replace <body>' };
    case 'deep': {
      const deep = m.at % 3 === 0 ? '⟪deeparr:5000⟫' : '⟪deepobj:5000⟫';
      if (root !== null && typeof root === 'object' && !Array.isArray(root)) {
        const r = root as Record<string, Json>;
        if (r.data && typeof r.data === 'object') (r.data as Record<string, Json>).deep = deep;
        else if ('data' in r || m.at % 2 === 0) r.data = { deep };
        else setAt(root, pick.length ? pick : ['deep'], deep);
        return { value: root, label: 'deep nesting' };
      }
      return { value: deep, label: 'deep nesting' };
    }
    case 'taint': {
      const strings = all.filter((p) => typeof getAt(root, p) === 'string');
      const p = strings[m.at % Math.max(1, strings.length)];
      if (!p) return { value: setAt(root, pick, m.taint), label: `taint ${where}` };
      const s = getAt(root, p) as string;
      const tainted = m.taint.startsWith('⟪') ? m.taint : [m.taint + s, s + m.taint, s.slice(0, 2) + m.taint + s.slice(2)][m.at % 3]!;
      return { value: setAt(root, p, tainted), label: `taint ${p.join('.') || '<body>'}` };
    }
    case 'retype':
      return { value: setAt(root, pick, retype(getAt(root, pick))), label: `retype ${where}` };
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Requests.

export const AUTH_VARIANTS = ['secret', 'public', 'none', 'basic', 'malformed', 'unknown', 'revoked', 'disabled', 'lowercase', 'doubled', 'swapped', 'tab'] as const;
export type AuthVariant = (typeof AUTH_VARIANTS)[number];

export type BodySpec =
  | { kind: 'none' }
  | { kind: 'json'; value: unknown }
  /** Raw text (latin1 `\xNN` escapes become those bytes when `bytes` is set). */
  | { kind: 'text'; text: string; bytes?: boolean }
  /** A file, sent as it is with its media type (an upload route's body). */
  | { kind: 'upload'; contentType: string; text: string };

export const HEADER_VARIANTS = [
  'normal', 'ct-charset', 'ct-latin1', 'ct-utf16', 'ct-text', 'ct-form', 'ct-none', 'ct-vnd', 'ct-weird', 'ct-multipart',
  'ce-gzip-plain', 'ce-deflate-plain', 'ce-br-plain', 'ce-gzip-real', 'ce-gzip-truncated', 'ce-unknown', 'ce-identity', 'ce-double',
  'chunked', 'idem-key', 'idem-reused', 'idem-odd', 'reqid-sane', 'reqid-odd', 'accept-xml', 'expect',
] as const;
export type HeaderVariant = (typeof HEADER_VARIANTS)[number];

export interface FuzzRequest {
  route: string;
  method: string;
  /** Path with tokens; path segments of ids are URL-encoded when resolved. */
  path: string;
  /** Query pairs (tokens allowed in values); `raw` pieces are appended as they are. */
  query: QueryPair[];
  rawQuery: string;
  project: 0 | 1;
  auth: AuthVariant;
  headers: HeaderVariant;
  body: BodySpec;
  /** What was done to the request, for the report: mutation, id kinds, header variant. */
  label: string;
  /** Valid key, normal headers, no junk query and no mutation (its generated values may still be refused). */
  clean: boolean;
  /** Kinds of the ids in the path (own, other, random, malformed, …). */
  idKinds: string[];
}

const RAW_BODIES: BodySpec[] = [
  { kind: 'text', text: '' }, { kind: 'text', text: '{' }, { kind: 'text', text: '{"email": "a@b.c",' }, { kind: 'text', text: 'null' },
  { kind: 'text', text: '[]' }, { kind: 'text', text: '"string"' }, { kind: 'text', text: '1e400' }, { kind: 'text', text: '{"a":1}{"b":2}' },
  { kind: 'text', text: '\ufeff{"email":"bom@example.org"}' }, { kind: 'text', text: '{"email":"a@example.org","email":{"x":1}}' },
  { kind: 'text', text: '{"email":"\\ud800@example.org"}' }, { kind: 'text', text: '{"data":{"\\u0000":"\\u0000"}}' },
  { kind: 'text', text: '{"email":"\xff\xfe@example.org"}', bytes: true }, { kind: 'text', text: '\xc0\xaf', bytes: true },
  { kind: 'text', text: `${'['.repeat(100_000)}${']'.repeat(100_000)}` }, { kind: 'text', text: `{"data":${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}}` },
  { kind: 'text', text: ' '.repeat(50_000) + '{}' }, { kind: 'text', text: 'email=a%40b.c' }, { kind: 'text', text: '{"__proto__":{"isAdmin":true}}' },
  { kind: 'text', text: '{"constructor":{"prototype":{"polluted":1}}}' }, { kind: 'text', text: '{"email":"a@example.org"}\u0000' },
];

const QUERY_JUNK = ['colour=red', 'limit=1&limit=2', '=x', '&&&', 'a%ZZ=1', 'limit=%00', '__proto__=1', 'constructor[prototype]=1', 'limit[]=1', `q=${'x'.repeat(5000)}`, 'search=%ED%A0%80', 'cursor=%FF', '%00=1'];

const authArb: fc.Arbitrary<AuthVariant> = fc.oneof(
  { weight: 80, arbitrary: fc.constant('secret' as const) },
  { weight: 20, arbitrary: fc.constantFrom(...AUTH_VARIANTS.filter((a) => a !== 'secret')) },
);
const headerArb: fc.Arbitrary<HeaderVariant> = fc.oneof(
  { weight: 65, arbitrary: fc.constant('normal' as const) },
  { weight: 35, arbitrary: fc.constantFrom(...HEADER_VARIANTS.filter((h) => h !== 'normal')) },
);

function pathWithIds(path: string, ids: Record<string, { text: string; kind: string }>): string {
  return path.replace(/:([A-Za-z]+)/g, (_, name: string) => ids[name]?.text ?? 'x');
}

function unsubArb(): fc.Arbitrary<{ text: string; kind: string }> {
  return fc.tuple(fc.constantFrom('own', 'own', 'other', 'random', 'withEmail', 'tampered', 'truncated', 'extraDot', 'garbage', 'empty', ...NON_CANONICAL), fc.nat(50))
    .map(([k, n]) => ({ text: `⟦unsub:${k}:${n}⟧`, kind: k }));
}

/** An email address in a path (the suppression list's DELETE), URL-encoded, well-formed or not. */
function addressArb(): fc.Arbitrary<{ text: string; kind: string }> {
  return fc.oneof(
    { weight: 3, arbitrary: emailArb.map((e) => ({ text: encodeURIComponent(e), kind: 'address' })) },
    { weight: 1, arbitrary: fc.constantFrom('not-an-address', '%00', 'a%40', `${'x'.repeat(300)}%40example.org`, 'ADA%40EXAMPLE.ORG', '%E2%80%AE%40example.org').map((text) => ({ text, kind: 'address' })) },
  );
}

/** Open and click tokens: signed for an email that is not there (own or another project's), altered, or no token at all. */
function trackTokenArb(kind: 'o' | 'c'): fc.Arbitrary<{ text: string; kind: string }> {
  return fc.tuple(fc.constantFrom('own', 'real', 'other', 'tampered', 'truncated', 'swapped', 'evil', 'garbage', 'empty', ...NON_CANONICAL, ...NON_CANONICAL), fc.nat(50))
    .map(([k, n]) => ({ text: `⟦track:${kind}:${k}:${n}⟧`, kind: k }));
}

/**
 * Other spellings of a valid token (of a real email or contact of the caller's project) that Node's lenient base64url
 * decoder reads as the same bytes (issue 26): each must be a 404 that records nothing, like any bad token.
 */
export const NON_CANONICAL = ['ncPadded', 'ncSuffix', 'ncSpace', 'ncAlphabet', 'ncLastChar'] as const;
const isRespelling = (kind: string) => (NON_CANONICAL as readonly string[]).includes(kind);
const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** The token `valid` respelt as `kind` says (a NON_CANONICAL kind); the spelling always differs from `valid`. */
export function respell(valid: string, kind: string, n: number): string {
  const [payload, sig] = valid.split('.') as [string, string];
  const std = (x: string) => encodeURIComponent(x.replace(/-/g, '+').replace(/_/g, '/'));
  switch (kind) {
    case 'ncPadded': return n % 2 ? `${payload}.${sig}==` : `${payload}=.${sig}`;
    case 'ncSuffix': return `${payload}.${sig}${['!', '=', '%21', '*'][n % 4]}`;
    case 'ncSpace': return `${payload}.${sig}%20`;
    // The +/ alphabet where the token has a - or _; otherwise (rare) padding.
    case 'ncAlphabet': return /[-_]/.test(sig) ? `${payload}.${std(sig)}` : /[-_]/.test(payload) ? `${std(payload)}.${sig}` : `${payload}.${sig}=`;
    case 'ncLastChar': {
      // The last of 27 characters carries 4 bits and 2 unused ones: 3 other characters decode to the same bytes.
      const i = B64URL.indexOf(sig[sig.length - 1]!);
      return `${payload}.${sig.slice(0, -1)}${B64URL[(i & ~3) | (((i & 3) + 1 + (n % 3)) % 4)]}`;
    }
    default: throw new Error(`not a respelling: ${kind}`);
  }
}

/** Requests for one route of the app. */
export function routeRequestArb(route: RouteKey): fc.Arbitrary<FuzzRequest> {
  const gen = ROUTE_GENERATORS[route.key];
  if (!gen) throw new Error(`no generator for ${route.key}`);
  const idArbs: Record<string, fc.Arbitrary<{ text: string; kind: string }>> = {};
  for (const [name, type] of Object.entries(gen.ids ?? {})) {
    idArbs[name] = type === 'unsubscribe' ? unsubArb() : type === 'address' ? addressArb() : type === 'openToken' ? trackTokenArb('o') : type === 'clickToken' ? trackTokenArb('c')
      : type === 'index' ? fc.constantFrom('0', '1', '1000', '1001', '-1', 'x', '1.5', '9'.repeat(30)).map((text) => ({ text, kind: 'index' }))
      : type === 'fileToken' ? fc.constantFrom('x', 'a.b', '%00', 'x'.repeat(3000), 'eyJhIjoxfQ.AAAA', '..').map((text) => ({ text, kind: 'token' }))
      : idArb(type, 'path', { deleting: route.method === 'DELETE' && gen.deletes !== undefined && name === 'id' });
  }
  const bodyArb: fc.Arbitrary<{ body: BodySpec; label: string; valid: boolean }> = gen.upload
    ? fc.oneof(
      { weight: 85, arbitrary: gen.upload.map((u) => ({ body: { kind: 'upload' as const, ...u }, label: `upload ${u.contentType}`, valid: true })) },
      { weight: 5, arbitrary: fc.constant({ body: { kind: 'json' as const, value: { email: 'a@example.org' } }, label: 'JSON instead of a file', valid: false }) },
      { weight: 5, arbitrary: fc.constantFrom(...RAW_BODIES).map((body) => ({ body, label: 'raw body', valid: false })) },
      { weight: 5, arbitrary: fc.constant({ body: { kind: 'none' as const }, label: 'no body', valid: false }) },
    )
    : gen.body
    ? fc.oneof(
      { weight: 92, arbitrary: fc.tuple(gen.body, mutationArb).map(([b, m]) => { const { value, label } = mutate(b, m); return { body: { kind: 'json' as const, value }, label, valid: m.op === 'none' }; }) },
      { weight: 5, arbitrary: fc.constantFrom(...RAW_BODIES).map((body) => ({ body, label: 'raw body', valid: false })) },
      { weight: 3, arbitrary: fc.constant({ body: { kind: 'none' as const }, label: 'no body', valid: false }) },
    )
    : fc.oneof(
      { weight: 90, arbitrary: fc.constant({ body: { kind: 'none' as const }, label: 'no body', valid: true }) },
      { weight: 5, arbitrary: fc.constantFrom<BodySpec>({ kind: 'json', value: {} }, { kind: 'json', value: { x: '\u0000' } }, { kind: 'json', value: '⟪deepobj:5000⟫' }).map((body) => ({ body, label: 'stray body', valid: true })) },
      { weight: 5, arbitrary: fc.constantFrom(...RAW_BODIES).map((body) => ({ body, label: 'stray raw body', valid: false })) },
    );
  const queryArb: fc.Arbitrary<{ pairs: QueryPair[]; raw: string; valid: boolean }> = fc.oneof(
    { weight: 80, arbitrary: (gen.query ?? fc.constant<QueryPair[]>([])).map((pairs) => ({ pairs, raw: '', valid: true })) },
    { weight: 20, arbitrary: fc.tuple(gen.query ?? fc.constant<QueryPair[]>([]), fc.constantFrom(...QUERY_JUNK)).map(([pairs, raw]) => ({ pairs, raw, valid: false })) },
  );
  return fc.record({
    ids: fc.record(idArbs),
    body: bodyArb,
    query: queryArb,
    project: fc.oneof({ weight: 3, arbitrary: fc.constant(0 as const) }, { weight: 1, arbitrary: fc.constant(1 as const) }),
    auth: gen.keys === 'none' ? fc.constant('none' as const) : authArb,
    headers: headerArb,
  }).map((r) => {
    const idKinds = Object.values(r.ids).map((i) => i.kind);
    return withToString({
      route: route.key,
      method: route.method,
      path: pathWithIds(route.path, r.ids),
      query: r.query.pairs,
      rawQuery: r.query.raw,
      project: r.project,
      auth: r.auth,
      headers: r.headers,
      body: r.body.body,
      label: [r.body.label, r.headers !== 'normal' ? r.headers : '', r.auth !== 'secret' && gen.keys !== 'none' ? `auth:${r.auth}` : '', r.query.valid ? '' : 'bad query', ...idKinds.map((k) => `id:${k}`)].filter(Boolean).join(', '),
      clean: r.body.valid && r.query.valid && r.headers === 'normal' && (r.auth === 'secret' || gen.keys === 'none'),
      idKinds,
    });
  });
}

const OFF_PATHS = ['/nope', '/v2/send', '/contacts/', '//contacts', '/CONTACTS', '/Contacts/x', '/contacts/a/b', '/health/', '/v1/send/', '/v1', '/', '/%ZZ', '/%00',
  '/contacts/..%2F..%2Fhealth', '/unsubscribe', '/unsubscribe/', '/segments/preview/x', '/.env', '/robots.txt', `/${'a'.repeat(4000)}`];

/** Requests beside the routes: unknown paths, methods a path does not have, OPTIONS and HEAD. */
export function offRouteArb(routes: RouteKey[]): fc.Arbitrary<FuzzRequest> {
  const templates = [...new Set(routes.map((r) => r.path))];
  return fc.record({
    method: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'TRACE', 'PROPFIND'),
    path: fc.oneof(
      fc.constantFrom(...OFF_PATHS).map((path) => ({ path, template: '' })),
      fc.constantFrom(...templates).map((template) => ({ path: template.replace(/:[A-Za-z]+/g, '00000000-0000-4000-8000-000000000000'), template })),
    ),
    auth: fc.constantFrom<AuthVariant>('secret', 'none'),
    body: fc.constantFrom<BodySpec>({ kind: 'none' }, { kind: 'json', value: { email: 'a@example.org' } }),
  }).map((r) => {
    // A method the path has after all: then it is that route, and answers as that route does.
    const route = routes.find((x) => x.path === r.path.template && x.method === r.method)?.key ?? 'off-route';
    return withToString({
      route, method: r.method, path: r.path.path, query: [], rawQuery: '', project: 0, auth: r.auth, headers: 'normal', body: r.body,
      label: 'off-route', clean: false, idKinds: [],
    });
  });
}

/**
 * Any request: a route of the app, weighted towards those that take a body or a query (where most of the input is),
 * and now and then one beside the routes.
 */
export function requestArb(routes: RouteKey[]): fc.Arbitrary<FuzzRequest> {
  const weight = (r: RouteKey) => (ROUTE_GENERATORS[r.key]?.body ? 3 : ROUTE_GENERATORS[r.key]?.query ? 2 : 1);
  return fc.oneof(
    { weight: 97, arbitrary: fc.oneof(...routes.map((r) => ({ weight: weight(r), arbitrary: routeRequestArb(r) }))) },
    { weight: 3, arbitrary: offRouteArb(routes) },
  );
}

function withToString(req: FuzzRequest): FuzzRequest {
  Object.defineProperty(req, fc.toStringMethod, { value: () => describeRequest(req), enumerable: false });
  return req;
}

const short = (s: string, n = 300) => (s.length > n ? `${s.slice(0, n)}…(${s.length} chars)` : s);

/** One line: method, path, query, key, header variant, body (JSON, escapes visible). */
export function describeRequest(req: FuzzRequest): string {
  const q = [...req.query.map(([k, v]) => `${k}=${v}`), req.rawQuery].filter(Boolean).join('&');
  const body = req.body.kind === 'none' ? '' : req.body.kind === 'json' ? ` body=${short(jsonText(req.body.value))}`
    : req.body.kind === 'upload' ? ` upload(${req.body.contentType})=${short(JSON.stringify(req.body.text))}` : ` rawBody=${short(JSON.stringify(req.body.text))}`;
  return `${req.method} ${short(req.path, 120)}${q ? `?${short(q, 200)}` : ''} [project ${req.project}, key ${req.auth}, headers ${req.headers}]${body}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Resolution of tokens against the world, and sending.

/** JSON text of a value, with `⟪…⟫` raw tokens expanded (but not `⟦…⟧` ones). */
function jsonText(value: unknown): string {
  return JSON.stringify(value) ?? 'null';
}

function rawJson(token: string): string {
  const [kind, arg] = token.split(':');
  const n = Number(arg);
  switch (kind) {
    case 'num': return arg!;
    case 'proto': return '{"__proto__":{"polluted":true}}';
    case 'ctor': return '{"constructor":{"prototype":{"polluted":true}}}';
    case 'deepobj': return `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
    case 'deeparr': return `${'['.repeat(n)}1${']'.repeat(n)}`;
    case 'bigstr': return JSON.stringify('x'.repeat(n));
    case 'bigarr': return `[${Array.from({ length: n }, (_, i) => i).join(',')}]`;
    case 'bigobj': return `{${Array.from({ length: n }, (_, i) => `"k${i}":${i}`).join(',')}}`;
    case 'surrogates': return '"\\ud800\\udc00\\udc00\\ud800"';
    case 'nulchars': return '"\\u0000\\u0000"';
    default: return 'null';
  }
}

export interface Resolver {
  world: FuzzWorld;
}

function pick<T>(list: T[], n: number): T | undefined {
  return list.length ? list[n % list.length] : undefined;
}

const NIL = '00000000-0000-4000-8000-000000000000';
/** An id no row has: stands in for another project's id in the twin request of the tenancy check. */
export const GHOST = '01a20000-0000-7000-8000-00000000dead';

/** The text a `⟦…⟧` token stands for, for a request of project `p`; `ghost`: another project's ids become GHOST. */
export function resolveToken(world: FuzzWorld, p: 0 | 1, token: string, ghost = false): string {
  const parts = token.split(':');
  const own = world.projects[p];
  const other = world.projects[p === 0 ? 1 : 0];
  switch (parts[0]) {
    case 'domain': return (parts[1] === 'other' ? other : own).domain;
    case 'id': {
      const [, type, kind, n, variant] = parts as [string, ResourceType, string, string, string | undefined];
      const pool = (kind === 'other' ? other : own).pools[type];
      const list = kind === 'ownMade' ? pool.made : [...pool.keep, ...pool.made];
      const id = ghost && kind === 'other' ? GHOST : pick(list, Number(n)) ?? NIL;
      return variant ? uuidVariant(id, variant) : id;
    }
    case 'cursor': {
      const [, type, kind, n] = parts as [string, ResourceType, string, string];
      const pool = (kind === 'other' ? other : own).pools[type];
      return encodeCursor(pick([...pool.keep, ...pool.made], Number(n)) ?? NIL);
    }
    case 'unsub': {
      const [, kind, n] = parts as [string, string, string];
      const contact = pick([...own.pools.contact.keep, ...own.pools.contact.made], Number(n)) ?? NIL;
      const valid = unsubscribeToken(world.secret, { projectId: own.id, contactId: contact });
      switch (kind) {
        case 'own': return valid;
        case 'other': return unsubscribeToken(world.secret, { projectId: other.id, contactId: pick(other.pools.contact.keep, Number(n)) ?? NIL });
        case 'random': return unsubscribeToken(world.secret, { projectId: own.id, contactId: '0190a000-0000-7000-8000-000000000001' });
        case 'withEmail': return unsubscribeToken(world.secret, { projectId: own.id, contactId: contact, emailId: '0190a000-0000-7000-8000-0000000000e1' });
        case 'tampered': return `${valid.slice(0, -2)}${valid.endsWith('AA') ? 'BB' : 'AA'}`;
        case 'truncated': return valid.slice(0, Number(n) % valid.length);
        case 'extraDot': return `${valid}.x`;
        case 'garbage': return ['%00', '%ZZ', 'a.b', '..', '.', 'x'.repeat(3000), '%ED%A0%80.%FF'][Number(n) % 7]!;
        default: return isRespelling(kind) ? respell(valid, kind, Number(n)) : '';
      }
    }
    case 'track': {
      const [, which, kind, n] = parts as [string, 'o' | 'c', string, string];
      const emailId = `0190a000-0000-7000-8000-${String(Number(n)).padStart(12, '0')}`;
      const sign = (projectId: string, url = 'https://example.org/landing') => (which === 'o' ? openToken(world.secret, { projectId, emailId }) : clickToken(world.secret, { projectId, emailId, url }));
      const valid = sign(own.id);
      switch (kind) {
        case 'own': return valid;
        case 'other': return sign(other.id);
        case 'tampered': return `${valid.slice(0, -2)}${valid.endsWith('AA') ? 'BB' : 'AA'}`;
        case 'truncated': return valid.slice(0, Number(n) % valid.length);
        case 'swapped': return which === 'o' ? clickToken(world.secret, { projectId: own.id, emailId, url: 'https://example.org/' }) : openToken(world.secret, { projectId: own.id, emailId });
        case 'evil': return sign(own.id, ['javascript:alert(1)', 'https://evil.example/\r\nSet-Cookie: x=1', '//evil.example', 'data:text/html,x'][Number(n) % 4]);
        case 'garbage': return ['%00', '%ZZ', 'a.b', '..', '.', 'x'.repeat(3000), '%ED%A0%80.%FF'][Number(n) % 7]!;
        default: {
          // A token of one of the project's real emails: canonical ('real': found), or respelt (a 404 all the same).
          const real = pick(own.pools.email.keep, Number(n)) ?? NIL;
          const token = which === 'o' ? openToken(world.secret, { projectId: own.id, emailId: real }) : clickToken(world.secret, { projectId: own.id, emailId: real, url: 'https://example.org/landing' });
          if (kind === 'real') return token;
          return isRespelling(kind) ? respell(token, kind, Number(n)) : '';
        }
      }
    }
    default: return token;
  }
}

export interface ResolvedRequest {
  method: string;
  /** Path and query. */
  url: string;
  /** The path alone. */
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  chunked: boolean;
  /** The body as text, for the report. */
  bodyText?: string;
}

function resolveText(world: FuzzWorld, p: 0 | 1, text: string, encode: (s: string) => string, ghost = false): string {
  return text.replace(/⟦([^⟧]*)⟧/g, (_, t: string) => encode(resolveToken(world, p, t, ghost)));
}

/**
 * The same request with another project's ids in its path replaced by an id that exists nowhere (same spelling
 * variant): tenancy means the two cannot be told apart.
 */
export function ghostTwin(world: FuzzWorld, req: FuzzRequest, resolved: ResolvedRequest): ResolvedRequest {
  const path = resolveText(world, req.project, req.path, encodePathText, true);
  return { ...resolved, path, url: path + resolved.url.slice(resolved.path.length) };
}

/** JSON-safe text of a resolved token (ids and domains need no escaping, but variants may hold spaces or braces). */
const inJson = (s: string) => JSON.stringify(s).slice(1, -1);

function encodePathText(s: string): string {
  // Already-encoded literals (%00, %ZZ …) stay as they are; anything else is encoded.
  return /^[A-Za-z0-9%._~:@!$&'()*+,;=-]*$/.test(s) && !/[{}[\] ]/.test(s) ? s : encodeURIComponent(s);
}

/** encodeURIComponent, except that a lone surrogate is sent as its WTF-8 bytes (encodeURIComponent throws on it). */
function encodeQuery(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && s.charCodeAt(i + 1) >= 0xdc00 && s.charCodeAt(i + 1) <= 0xdfff;
    if (pair) { out += encodeURIComponent(s.slice(i, i + 2)); i++; continue; }
    if (c >= 0xd800 && c <= 0xdfff) {
      out += [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
      continue;
    }
    out += encodeURIComponent(s[i]!);
  }
  return out;
}

let idemCounter = 0;

export function resolveRequest(world: FuzzWorld, req: FuzzRequest): ResolvedRequest {
  const p = req.project;
  const project = world.projects[p];
  const path = resolveText(world, p, req.path, encodePathText);
  const query = [
    ...req.query.map(([k, v]) => `${encodeQuery(k)}=${encodeQuery(resolveText(world, p, v, (s) => s))}`),
    ...(req.rawQuery ? [req.rawQuery] : []),
  ].join('&');
  const headers: Record<string, string> = {};
  const key = req.auth === 'public' ? project.publicKey : project.secretKey;
  switch (req.auth) {
    case 'secret': case 'public': headers.Authorization = `Bearer ${key}`; break;
    case 'none': break;
    case 'basic': headers.Authorization = `Basic ${key}`; break;
    case 'malformed': headers.Authorization = 'Bearer sk_short'; break;
    case 'unknown': headers.Authorization = `Bearer sk_${'A'.repeat(40)}`; break;
    case 'revoked': headers.Authorization = `Bearer ${world.revokedKey}`; break;
    case 'disabled': headers.Authorization = `Bearer ${world.disabledKey}`; break;
    case 'lowercase': headers.Authorization = `bearer ${key}`; break;
    case 'doubled': headers.Authorization = `Bearer ${key} Bearer ${key}`; break;
    case 'swapped': headers.Authorization = `Bearer ${key.startsWith('sk_') ? 'pk_' : 'sk_'}${key.slice(3)}`; break;
    case 'tab': headers.Authorization = `Bearer\t${key}\t`; break;
  }

  let text: string | undefined;
  let bytes: Buffer | undefined;
  if (req.body.kind === 'json') {
    text = resolveText(world, p, jsonText(req.body.value).replace(/"⟪([^⟫"]*)⟫"/g, (_, t: string) => rawJson(t)), inJson);
    bytes = Buffer.from(text, 'utf8');
  } else if (req.body.kind === 'text') {
    text = req.body.text;
    bytes = Buffer.from(text, req.body.bytes ? 'latin1' : 'utf8');
  } else if (req.body.kind === 'upload') {
    text = req.body.text;
    bytes = Buffer.from(text, 'utf8');
  }
  if (bytes) headers['Content-Type'] = req.body.kind === 'upload' ? req.body.contentType : 'application/json';
  let chunked = false;
  switch (req.headers) {
    case 'normal': break;
    case 'ct-charset': headers['Content-Type'] = 'application/json; charset=utf-8'; break;
    case 'ct-latin1': headers['Content-Type'] = 'application/json; charset=iso-8859-1'; break;
    case 'ct-utf16': headers['Content-Type'] = 'application/json; charset=utf-16'; break;
    case 'ct-text': headers['Content-Type'] = 'text/plain'; break;
    case 'ct-form': headers['Content-Type'] = 'application/x-www-form-urlencoded'; break;
    case 'ct-none': delete headers['Content-Type']; break;
    case 'ct-vnd': headers['Content-Type'] = 'application/vnd.api+json'; break;
    case 'ct-weird': headers['Content-Type'] = 'application/json;;;charset="'; break;
    case 'ct-multipart': headers['Content-Type'] = 'multipart/form-data; boundary=x'; break;
    case 'ce-gzip-plain': headers['Content-Encoding'] = 'gzip'; break;
    case 'ce-deflate-plain': headers['Content-Encoding'] = 'deflate'; break;
    case 'ce-br-plain': headers['Content-Encoding'] = 'br'; break;
    case 'ce-gzip-real': headers['Content-Encoding'] = 'gzip'; if (bytes) bytes = gzipSync(bytes); break;
    case 'ce-gzip-truncated': headers['Content-Encoding'] = 'gzip'; if (bytes) bytes = gzipSync(bytes).subarray(0, 12); break;
    case 'ce-unknown': headers['Content-Encoding'] = 'x-compress-9000'; break;
    case 'ce-identity': headers['Content-Encoding'] = 'identity'; break;
    case 'ce-double': headers['Content-Encoding'] = 'gzip, gzip'; if (bytes) bytes = gzipSync(gzipSync(bytes)); break;
    // Explicit, or Node's client sends a GET's or DELETE's body unframed (and the server reads it as the next request).
    case 'chunked': chunked = true; if (bytes) headers['Transfer-Encoding'] = 'chunked'; break;
    case 'idem-key': headers['Idempotency-Key'] = `fuzz-${++idemCounter}`; break;
    case 'idem-reused': headers['Idempotency-Key'] = 'fuzz-reused-key'; break;
    case 'idem-odd': headers['Idempotency-Key'] = ['x'.repeat(5000), ' ', 'é', '\t'][idemCounter++ % 4]!; break;
    case 'reqid-sane': headers['X-Request-Id'] = `fuzz-${idemCounter++}`; break;
    case 'reqid-odd': headers['X-Request-Id'] = ['a b', 'x'.repeat(200), 'é', '<script>', ''][idemCounter++ % 5]!; break;
    case 'accept-xml': headers.Accept = 'application/xml'; break;
    case 'expect': headers.Expect = '100-continue'; break;
  }
  const url = `${path}${query ? `?${query}` : ''}`;
  return { method: req.method, url, path, headers, body: bytes, chunked, bodyText: text };
}

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json?: unknown;
  /** The client could not complete the exchange (no answer, reset, timeout). */
  error?: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
export const closeAgent = () => agent.destroy();

/**
 * Sends one request on a keep-alive connection; never throws. A reset of a reused connection is retried once on a new
 * one: the server may close an idle keep-alive connection just as the client reuses it (the race Node's documentation
 * describes), which says nothing about the request.
 */
export async function send(port: number, r: ResolvedRequest, timeoutMs = 30_000): Promise<Answer> {
  const first = await sendOnce(port, r, timeoutMs, agent);
  return first.retry ? sendOnce(port, r, timeoutMs, false) : first;
}

function sendOnce(port: number, r: ResolvedRequest, timeoutMs: number, via: http.Agent | false): Promise<Answer & { retry?: boolean }> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (a: Answer & { retry?: boolean }) => { if (!settled) { settled = true; resolve(a); } };
    let req: http.ClientRequest;
    try {
      req = http.request({
        host: '127.0.0.1', port, method: r.method, path: r.url, agent: via, timeout: timeoutMs,
        headers: { ...r.headers, ...(r.body && !r.chunked ? { 'Content-Length': String(r.body.length) } : {}) },
      }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (e) => done({ status: res.statusCode ?? 0, headers: res.headers, text: '', error: `response: ${e.message}` }));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          if (/json/.test(res.headers['content-type'] ?? '') && text) {
            try { json = JSON.parse(text); } catch { json = undefined; }
          }
          done({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      });
    } catch (err) {
      done({ status: 0, headers: {}, text: '', error: `client refused to send: ${(err as Error).message}` });
      return;
    }
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (e: NodeJS.ErrnoException) => done({ status: 0, headers: {}, text: '', error: e.message, retry: req.reusedSocket && e.code === 'ECONNRESET' }));
    if (r.body && r.chunked) {
      const mid = Math.floor(r.body.length / 2);
      req.write(r.body.subarray(0, mid));
      req.end(r.body.subarray(mid));
    } else {
      req.end(r.body);
    }
  });
}

/** A curl command that repeats a resolved request (bodies over 2,000 characters are described, not spelled out). */
export function curl(port: number, r: ResolvedRequest): string {
  const h = Object.entries(r.headers).map(([k, v]) => ` -H '${k}: ${short(v, 80)}'`).join('');
  const body = r.bodyText === undefined ? '' : r.bodyText.length > 2000 ? ` --data-binary '${r.bodyText.slice(0, 200)}…' (${r.bodyText.length} chars)` : ` --data-binary ${JSON.stringify(r.bodyText)}`;
  return `curl -X ${r.method} 'http://127.0.0.1:${port}${short(r.url, 300)}'${h}${body}`;
}

// ---------------------------------------------------------------------------------------------------------------
// What every answer must be.

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const ERROR_KEYS = new Set(['code', 'message', 'statusCode', 'requestId', 'errors', 'suggestion']);
const TOP_ERROR_KEYS = new Set(['success', 'error', 'timestamp', 'code', 'message', 'time']);

/** Problems with an answer (empty when it is fine). */
export function checkAnswer(req: FuzzRequest, gen: RouteGen | undefined, a: Answer): string[] {
  const problems: string[] = [];
  if (a.error) return [`no answer: ${a.error}`];
  if (a.status >= 500) problems.push(`status ${a.status}`);
  // A respelt tracking or unsubscribe token is no token (issue 26): a 404, never the pixel, a redirect or a page.
  if (req.idKinds.some(isRespelling) && req.method !== 'OPTIONS' && a.status !== 404) problems.push(`a non-canonical token answered ${a.status}`);
  const requestId = a.headers['x-request-id'];
  if (typeof requestId !== 'string' || !requestId) problems.push('no X-Request-Id header');
  if (req.method === 'HEAD') return problems;
  const ok = a.status >= 200 && a.status < 300;
  if (!ok) {
    if (gen?.html && a.status === 404 && /text\/html/.test(String(a.headers['content-type']))) return problems; // the "link not valid" page
    if (gen?.sso && a.status === 302) {
      const location = String(a.headers.location ?? '');
      if (!/^(\/app\/(login\?error=[a-z_]+)?|https?:\/\/.+)$/.test(location)) problems.push(`sso redirect to ${short(location, 80)}`);
      return problems;
    }
    if (gen?.tracking === 'redirect' && a.status === 302) {
      const location = String(a.headers.location ?? '');
      if (!/^https?:\/\//.test(location)) problems.push(`redirect to ${short(location, 80)}`);
      return problems;
    }
    const b = a.json as { success?: unknown; error?: Record<string, unknown>; timestamp?: unknown; code?: unknown; message?: unknown; time?: unknown } | undefined;
    if (!b || typeof b !== 'object') return [...problems, `error answer is not JSON: ${short(a.text, 120)}`];
    if (b.success !== false) problems.push('error answer without success:false');
    const e = b.error;
    if (!e || typeof e !== 'object') return [...problems, 'error answer without error object'];
    if (typeof e.code !== 'string' || !e.code) problems.push('error.code is not a string');
    if (typeof e.message !== 'string') problems.push('error.message is not a string');
    if (e.statusCode !== a.status) problems.push(`error.statusCode ${String(e.statusCode)} is not the HTTP status ${a.status}`);
    if (e.requestId !== requestId) problems.push('error.requestId is not X-Request-Id');
    const extra = Object.keys(e).filter((k) => !ERROR_KEYS.has(k));
    if (extra.length) problems.push(`error has unknown keys ${extra.join(', ')}`);
    if (e.errors !== undefined && !(Array.isArray(e.errors) && e.errors.every((x: Record<string, unknown>) => typeof x?.field === 'string' && typeof x.message === 'string' && typeof x.code === 'string'))) {
      problems.push('error.errors items are not {field, message, code}');
    }
    if (typeof b.timestamp !== 'string' || !ISO.test(b.timestamp)) problems.push('timestamp is not an ISO date-time');
    // The second error shape beside the envelope (api/middleware/errorHandler.ts): code = HTTP status, message = error.message, time = epoch ms.
    if (b.code !== a.status) problems.push(`top-level code ${String(b.code)} is not the HTTP status ${a.status}`);
    if (b.message !== e.message) problems.push('top-level message is not error.message');
    if (typeof b.time !== 'number' || b.time !== Date.parse(String(b.timestamp))) problems.push('time is not the epoch ms of timestamp');
    const extraTop = Object.keys(b).filter((k) => !TOP_ERROR_KEYS.has(k));
    if (extraTop.length) problems.push(`error answer has unknown keys ${extraTop.join(', ')}`);
    if (a.status === 422 && e.code !== 'VALIDATION_ERROR') problems.push('422 without VALIDATION_ERROR');
    return problems;
  }
  if (req.method === 'OPTIONS') return problems; // the router's Allow answer
  if (a.status === 204) {
    if (a.text !== '') problems.push('204 with a body');
    if (req.method !== 'DELETE') problems.push(`204 on ${req.method}`);
    return problems;
  }
  if (req.method === 'GET' && /^\/health\/?$/i.test(req.path)) {
    if ((a.json as { status?: unknown } | undefined)?.status !== 'ok') problems.push('health answer is not {status:"ok"}');
    return problems;
  }
  if (gen?.html) {
    if (!/text\/html/.test(String(a.headers['content-type']))) problems.push('unsubscribe page is not HTML');
    return problems;
  }
  if (gen?.reference) {
    const type = String(a.headers['content-type']);
    const expected = {
      document: /^application\/json/, page: /^text\/html/, script: /^application\/javascript/, style: /^text\/css/, icon: /^image\/svg\+xml/, metrics: /^text\/plain/,
    }[gen.reference];
    if (!expected.test(type)) problems.push(`${req.route} answered ${type}`);
    if (gen.reference === 'document' && (a.json as { openapi?: unknown } | undefined)?.openapi !== '3.1.0') problems.push('GET /openapi.json is not the OpenAPI 3.1 document');
    return problems;
  }
  if (gen?.mime) {
    if (a.headers['content-type'] !== 'message/rfc822') problems.push(`the message answered ${String(a.headers['content-type'])}`);
    if (!/^attachment; filename="[0-9a-f-]{36}\.eml"$/.test(String(a.headers['content-disposition']))) problems.push(`the message's Content-Disposition is ${String(a.headers['content-disposition'])}`);
    if (!/^Message-ID: /im.test(a.text)) problems.push('the message has no Message-ID');
    return problems;
  }
  if (gen?.download) {
    if (!gen.download.test(String(a.headers['content-type']))) problems.push(`${req.route} answered ${String(a.headers['content-type'])}`);
    return problems;
  }
  if (gen?.tracking) {
    if (gen.tracking !== 'pixel' || a.headers['content-type'] !== 'image/gif') problems.push(`tracking answered ${a.status} ${String(a.headers['content-type'])}`);
    return problems;
  }
  const b = a.json as { success?: unknown; data?: Record<string, unknown> } | undefined;
  if (!b || typeof b !== 'object') return [...problems, `success answer is not JSON: ${short(a.text, 120)}`];
  if (b.success !== true) problems.push('success answer without success:true');
  if (!b.data || typeof b.data !== 'object') return [...problems, 'success answer without a data object'];
  if (gen?.list) {
    const d = b.data;
    if (!Array.isArray(d.items)) problems.push('list without items[]');
    if (!(d.nextCursor === null || typeof d.nextCursor === 'string')) problems.push('list nextCursor is not a string or null');
    if (typeof d.hasMore !== 'boolean') problems.push('list hasMore is not a boolean');
    // (Not `total >= items.length`: the page and the count are two queries, and a write between them may make total smaller.)
    if (typeof d.total !== 'number' || !Number.isInteger(d.total) || d.total < 0) problems.push('list total is not a count');
  }
  if (gen?.creates && req.method === 'POST' && !['POST /v1/send'].includes(req.route)) {
    if (typeof b.data.id !== 'string') problems.push('created resource without id');
    // POST /contacts answers 200 for an update; an import is accepted (202) and runs as engine work.
    const created = req.route === 'POST /contacts/imports' ? 202 : 201;
    if (req.route !== 'POST /contacts' && a.status !== created) problems.push(`create answered ${a.status}, not ${created}`);
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------------------------
// The health probe: a worker thread of its own, so that its timing does not depend on the event loop under test.

export interface ProbeResult {
  status: number;
  ms: number;
  error?: string;
}

const PROBE_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const { port, intervalMs, timeoutMs } = workerData;
const results = [];
let stopped = false;
parentPort.on('message', (m) => { if (m === 'stop') stopped = true; });
function probe() {
  return new Promise((resolve) => {
    const started = process.hrtime.bigint();
    let settled = false;
    const done = (status, error) => {
      if (settled) return;
      settled = true;
      resolve({ status, error, ms: Number(process.hrtime.bigint() - started) / 1e6 });
    };
    const req = http.get({ host: '127.0.0.1', port, path: '/health', agent: false, timeout: timeoutMs }, (res) => {
      res.resume();
      res.on('end', () => done(res.statusCode));
      res.on('error', (e) => done(0, e.message));
    });
    req.on('timeout', () => req.destroy(new Error('no answer within ' + timeoutMs + ' ms')));
    req.on('error', (e) => done(0, e.message));
  });
}
(async () => {
  while (!stopped) {
    const t0 = Date.now();
    results.push(await probe());
    const wait = intervalMs - (Date.now() - t0);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  parentPort.postMessage(results);
})();
`;

/** Starts probing GET /health every `intervalMs`; `stop()` ends it and answers every probe's outcome. */
export function startHealthProbe(port: number, intervalMs = 50, timeoutMs = 5000): { stop(): Promise<ProbeResult[]> } {
  const worker = new Worker(PROBE_CODE, { eval: true, workerData: { port, intervalMs, timeoutMs } });
  const results = new Promise<ProbeResult[]>((resolve, reject) => {
    worker.once('message', (r: ProbeResult[]) => resolve(r));
    worker.once('error', reject);
  });
  return {
    async stop() {
      worker.postMessage('stop');
      const r = await results;
      await worker.terminate();
      return r;
    },
  };
}

export function percentile(sorted: number[], q: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}
