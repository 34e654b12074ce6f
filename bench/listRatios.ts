/**
 * Latency as ratios (issue 33, point 3): the p99 of every list call the console makes, and of GET /emails with each
 * filter and at deep cursors, beside the p99 of GET /health timed the same way in the same run, with 1,000,000 emails
 * and 1,000,000 contacts in the project. The bar: each call's p99 ≤ 1.5 × /health's.
 *
 *   npx tsx bench/listRatios.ts          (npm run bench:list-ratios)
 *
 * The data: bench/lib/consoleSeed.ts (BENCH_CONTACTS contacts, default 1,000,000; BENCH_EMAILS emails, default
 * 1,000,000, over 90 days, with their ~1.4 events each, the per-name totals and the daily rollup; BENCH_OTHER of
 * each, default 100,000, in another project), then what the other lists read (bench/lib/listSeed.ts): four segments
 * (two dynamic over `data.*` and events, a static one with BENCH_STATIC_MEMBERS members, default 100,000, one over
 * subscriptions), templates, a workflow with BENCH_EXECUTIONS executions (default 200,000), a webhook endpoint with
 * BENCH_DELIVERIES deliveries (default 200,000) and their attempts, BENCH_INBOUND received messages (default 20,000),
 * the suppressions of the seed's bounces and complaints, an audit log of BENCH_AUDIT entries (default 20,000); the
 * small resources through the API, the many rows by INSERT … SELECT. Then VACUUM ANALYZE.
 *
 * The Herald API runs as `npm run api` runs it (startHerald, roles api) in a child process. This process is the one
 * client (Node's fetch, or node:http with BENCH_CLIENT=http; one keep-alive connection, one request at a time) and asks, in each round, every case once,
 * each next to a GET /health: /health then the call in even rounds, the call then /health in odd ones, the order of
 * the cases rotating by round. So /health is timed exactly as every call is (same client, same connection, same
 * headers, from before the request to the end of the body) and at the same moments: a change of the machine's load hits
 * both alike. BENCH_ROUNDS rounds (default 1,000) after BENCH_WARMUP_ROUNDS (default 20): a call's p99 is then its
 * 10th slowest request; at 300 rounds it was the 3rd, and 5 to 10 of the 64 calls crossed the bar one way or the other
 * from one run of the same code to the next (BENCHMARKS.md section 61). A deep cursor is one of the first
 * BENCH_DEEP_POSITIONS (default 300) of the seed's 1,000 random positions of its list, each visited about three times:
 * visited once each, every request read pages from disk that no run had read before (p99 27-218 ms; section 61).
 *
 * Printed: each call's p50, p99 and max; its p99 ÷ the p99 of all /health requests of the run (the ratio the bar is
 * about) with its 95 % interval (ratioIntervals), and the p99 of the /health requests made next to that call (the same moments, as a check); the machine's
 * steal (/proc/stat) and load average over the measures. Every answer is checked: 200, JSON with items (non-empty
 * where the seed says so).
 *
 * Environment: the sizes above, BENCH_ROUNDS, BENCH_WARMUP_ROUNDS, BENCH_DEEP_POSITIONS, BENCH_NODE_ARGS (the API process's node flags, e.g.
 * `--trace-gc` with BENCH_CHILD_STDOUT=1), BENCH_TRACE=file (every measured request: when, how long, which call), BENCH_ONLY (substrings, comma-separated: only the cases whose name
 * has one of them), BENCH_CLIENT (fetch, the default; http; or both: two tables from the same run), BENCH_COMPARE_NODE_ARGS and BENCH_COMPARE_TREE (a second API process with these node options, or from that checkout, asked in turn with the first: two tables from the same run), BENCH_CPU_PROF=1 (a V8 profile of the API), BENCH_PG_STAT=1 (PostgreSQL's statements per measured call), BENCH_LOG_LEVEL (default warn), BENCH_JSON=file, BENCH_CLUSTER_DIR=dir (the cluster lives there and is
 * kept, with what the run needs of its seed in list-ratios.json: the next run with the same dir skips the seed, ~8
 * minutes, and migrates it to the code's schema), BENCH_TREE=dir (the API from another checkout, e.g. the code before a
 * change, on the same database: its migrations must be the same).
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { encodeCursor } from '../api/pagination';
import { addDomain } from '../domains/rows';
import { createProject } from '../projects/service';
import { printTopStatements, resetStatements, startCluster } from './lib/cluster';
import { seedConsoleProject, withIndexesAfter } from './lib/consoleSeed';
import { startHeraldChild } from './lib/herald';
import { seedListExtras } from './lib/listSeed';
import { cpuProfileArgs, machine, runBench, stealSince, type Child } from './lib/proc';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1_000_000);
const EMAILS = Number(process.env.BENCH_EMAILS ?? 1_000_000);
const OTHER = Number(process.env.BENCH_OTHER ?? 100_000);
const SIZES = {
  staticMembers: Number(process.env.BENCH_STATIC_MEMBERS ?? 100_000),
  executions: Number(process.env.BENCH_EXECUTIONS ?? 200_000),
  deliveries: Number(process.env.BENCH_DELIVERIES ?? 200_000),
  inbound: Number(process.env.BENCH_INBOUND ?? 20_000),
  audit: Number(process.env.BENCH_AUDIT ?? 20_000),
};
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1000);
const DEEP_POSITIONS = Number(process.env.BENCH_DEEP_POSITIONS ?? 300);
const WARMUP = Number(process.env.BENCH_WARMUP_ROUNDS ?? 20);
const ONLY = process.env.BENCH_ONLY;
type Client = 'http' | 'fetch';
const CLIENT = (process.env.BENCH_CLIENT ?? 'fetch') as Client | 'both';
if (!['http', 'fetch', 'both'].includes(CLIENT)) throw new Error(`BENCH_CLIENT: http, fetch or both, not ${CLIENT}`);
/**
 * A second API process on the same database, started with these node options (BENCH_NODE_ARGS are the first's) and/or
 * from another checkout (BENCH_COMPARE_TREE; BENCH_TREE is the first's).
 */
const COMPARE_NODE_ARGS = process.env.BENCH_COMPARE_NODE_ARGS ?? (process.env.BENCH_COMPARE_TREE !== undefined ? '' : undefined);
const COMPARE_TREE = process.env.BENCH_COMPARE_TREE;
if (COMPARE_NODE_ARGS !== undefined && CLIENT === 'both') throw new Error('BENCH_COMPARE_NODE_ARGS and BENCH_CLIENT=both: one comparison at a time');
/** One way of timing the calls: a client, and the API process it asks. */
interface Instrument { name: string; client: Client; port: number }
const apiName = (which: string, tree: string | undefined, args: string[]) => `${which} API, of ${tree ?? 'this checkout'}${args.length ? ` with node options [${args.join(' ')}]` : ''}`;
const DAYS = 90;
const BAR = 1.5;

interface Case {
  page: string;
  name: string;
  /** The path and query of request `i`. */
  path: (i: number) => string;
  /** The answer must list something. */
  nonEmpty?: boolean;
}

/**
 * How sure a call's ratio is: a 95 % interval of (its p99 ÷ /health's p99) by resampling the run's rounds (a round's
 * sample of the call with the /health requests of the same round, drawn together: the same moments), BOOTSTRAP times,
 * from a fixed seed. A p99 of 1,000 requests is their 10th slowest, and on this machine a tenth of them take a stall of
 * 4-8 ms (BENCHMARKS.md section 71): subsets of 1,000 /health requests of one run had p99s from 0.65 to 1.64 × the
 * p99 of all of them. A call whose interval lies wholly above the bar is over it whatever the draw; one whose interval
 * holds the bar crosses it or not from one run to the next.
 */
const BOOTSTRAP = 300;
function ratioIntervals(calls: readonly (readonly number[])[], healthByRound: readonly (readonly number[])[]): [number, number][] {
  let state = 0x9e3779b9;
  const random = () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const n = healthByRound.length;
  const q99 = (xs: Float64Array) => pct(xs.sort(), 99);
  const ratios = calls.map(() => [] as number[]);
  for (let b = 0; b < BOOTSTRAP; b++) {
    // One draw of the rounds for every call: each call's requests of those rounds, and all their /health requests.
    const drawn = Array.from({ length: n }, () => Math.floor(random() * n));
    const health = new Float64Array(drawn.reduce((sum, r) => sum + healthByRound[r]!.length, 0));
    let k = 0;
    for (const r of drawn) for (const x of healthByRound[r]!) health[k++] = x;
    const hp99 = q99(health);
    calls.forEach((call, ci) => ratios[ci]!.push(q99(Float64Array.from(drawn, (r) => call[r]!)) / hp99));
  }
  return ratios.map((rs) => {
    rs.sort((x, y) => x - y);
    return [pct(rs, 2.5), pct(rs, 97.5)];
  });
}

const pct = (sorted: ArrayLike<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);

/** What a run needs of the seeded database: kept beside a kept cluster (BENCH_CLUSTER_DIR) for the next run. */
interface Seeded {
  projectId: string;
  secretKey: string;
  campaignIds: string[];
  otherCampaigns: string[];
  ids: { proSegment: string; openedSegment: string; staticSegment: string; workflow: string; endpoint: string; inboundDomain: string };
  counts: Record<string, number | string>;
  deep: Record<'emails' | 'failed' | 'sent' | 'campaign' | 'contacts' | 'unsubscribed' | 'events' | 'opened' | 'pro' | 'members' | 'executions' | 'deliveries' | 'suppressions' | 'inbound' | 'audit', string[]>;
  contacts: { id: string; email: string }[];
}

runBench('bench:list-ratios', 90 * 60_000, async () => {
  const keepDir = process.env.BENCH_CLUSTER_DIR;
  const cluster = await startCluster('list-ratios', {}, keepDir ? { keepDir } : {});
  const children: Child[] = [];
  try {
    console.log(`machine: ${machine(cluster.version)}`);
    const { knex } = cluster;
    const stateFile = keepDir ? path.join(keepDir, 'list-ratios.json') : undefined;
    const reused = stateFile && fs.existsSync(stateFile) ? JSON.parse(fs.readFileSync(stateFile, 'utf8')) as Seeded : undefined;
    let project: { id: string; secretKey: string } | undefined;
    let seededCampaigns: string[] = [];
    if (!reused) {
      project = await createProject('Bench lists');
      const other = await createProject('Bench lists, another project');
      console.log(`seeding ${CONTACTS} contacts and ${EMAILS} emails over ${DAYS} days (and ${OTHER} of each in another project) …`);
      const seedStarted = performance.now();
      const { result: seeded, indexMs } = await withIndexesAfter(knex, ['contacts', 'emails', 'events'], async (db) => {
        const mine = await seedConsoleProject(db, project!.id, { contacts: CONTACTS, emails: EMAILS, days: DAYS, seed: 'a' });
        await seedConsoleProject(db, other.id, { contacts: OTHER, emails: OTHER, days: DAYS, seed: 'b' });
        return mine;
      });
      seededCampaigns = seeded.campaignIds;
      console.log(`seeded in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s (${Object.entries(seeded.timings).map(([k, v]) => `${k} ${(v / 1000).toFixed(1)} s`).join(', ')}; indexes after the load ${(indexMs / 1000).toFixed(1)} s)`);
      await addDomain(project.id, 'example.com', true);
      await addDomain(project.id, 'news.example.com', true);
      await addDomain(project.id, 'shop.example', false);
    } else {
      console.log(`reusing the seeded database in ${keepDir}`);
    }

    const apiEnv = { PORT: '0', API_RATE_LIMIT_PER_MINUTE: '1000000000', LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn' };
    const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
    const herald = startHeraldChild('herald api', cluster, 'api', apiEnv, [...cpuProfileArgs(), ...nodeArgs], process.env.BENCH_TREE);
    children.push(herald);
    const port = (await herald.ready).port as number;
    const headers = { authorization: `Bearer ${reused?.secretKey ?? project!.secretKey}` };
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const json = await res.json() as { data: { id: string } };
      if (res.status !== 201 && res.status !== 200) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(json)}`);
      return json.data;
    };

    const seed = async (p: { id: string; secretKey: string }): Promise<Seeded> => {
      // The small resources, as a person makes them.
      const extrasStarted = performance.now();
      for (let t = 1; t <= 12; t++) await post('/templates', { name: `Template ${t}`, subject: `Subject ${t} for {{ data.firstName }}`, body: `<p>Hello {{ data.firstName }}, number ${t}.</p>` });
      const proSegment = await post('/segments', { name: 'Pro customers', type: 'DYNAMIC', condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] } });
      const openedSegment = await post('/segments', { name: 'Opened in the last 30 days', type: 'DYNAMIC', condition: { logic: 'AND', groups: [{ filters: [{ field: 'event.email.opened', operator: 'triggeredWithin', value: 30, unit: 'days' }] }] } });
      await post('/segments', { name: 'Unsubscribed', type: 'DYNAMIC', condition: { logic: 'AND', groups: [{ filters: [{ field: 'subscribed', operator: 'equals', value: false }] }] } });
      const staticSegment = await post('/segments', { name: 'Imported list', type: 'STATIC' });
      const workflow = await post('/workflows', { name: 'Welcome', enabled: false, trigger: { type: 'EVENT', event: 'signed-up' }, steps: [{ id: 'wait', type: 'DELAY', config: { amount: 1, unit: 'days' }, next: null }] });
      const endpoint = await post('/webhooks', { url: 'https://hooks.example.com/herald', events: ['email.sent', 'email.failed', 'email.bounced', 'email.opened', 'email.clicked', 'email.complained'] });
      const inboundDomain = await post('/inbound/domains', { domain: 'in.example.com' });
      const route = await post('/inbound/routes', { match: 'support@in.example.com', action: 'store' });
      const extraTimings = await seedListExtras(knex, p.id, { staticSegmentId: staticSegment.id, workflowId: workflow.id, endpointId: endpoint.id, routeId: route.id }, SIZES);
      const vacuumStarted = performance.now();
      await knex.raw('VACUUM ANALYZE');
      console.log(`the other lists' rows in ${((performance.now() - extrasStarted) / 1000).toFixed(1)} s (${Object.entries(extraTimings).map(([k, v]) => `${k} ${(v / 1000).toFixed(1)} s`).join(', ')}), VACUUM ANALYZE ${((performance.now() - vacuumStarted) / 1000).toFixed(1)} s`);
      const counts = (await knex.raw(
        `SELECT (SELECT count(*) FROM contacts WHERE project_id = :p)::int AS contacts, (SELECT count(*) FROM emails WHERE project_id = :p)::int AS emails,
                (SELECT count(*) FROM events WHERE project_id = :p)::int AS events, (SELECT count(*) FROM suppressions WHERE project_id = :p)::int AS suppressions,
                (SELECT count(*) FROM automation_executions WHERE project_id = :p)::int AS executions, (SELECT count(*) FROM webhook_deliveries WHERE project_id = :p)::int AS deliveries,
                (SELECT count(*) FROM inbound_messages WHERE project_id = :p)::int AS inbound, (SELECT count(*) FROM audit_log WHERE project_id = :p)::int AS audit,
                pg_size_pretty(pg_database_size(current_database())) AS size`, { p: p.id })).rows[0] as Record<string, number | string>;

      // Positions for the deep cursors: random rows among those a filter matches (a page far into the list).
      const ids = async (sql: string, bindings: unknown[]) =>
        ((await knex.raw(`${sql} ORDER BY random() LIMIT 1000`, bindings as never[])).rows as { id: string }[]).map((r) => r.id);
      const deep = {
        emails: await ids('SELECT id FROM emails WHERE project_id = ?', [p.id]),
        failed: await ids("SELECT id FROM emails WHERE project_id = ? AND status = 'FAILED'", [p.id]),
        sent: await ids("SELECT id FROM emails WHERE project_id = ? AND status = 'SENT'", [p.id]),
        campaign: await ids('SELECT id FROM emails WHERE project_id = ? AND campaign_id = ?', [p.id, seededCampaigns[3]]),
        contacts: await ids('SELECT id FROM contacts WHERE project_id = ?', [p.id]),
        unsubscribed: await ids('SELECT id FROM contacts WHERE project_id = ? AND NOT subscribed', [p.id]),
        events: await ids('SELECT id FROM events WHERE project_id = ?', [p.id]),
        opened: await ids("SELECT id FROM events WHERE project_id = ? AND name = 'email.opened'", [p.id]),
        pro: await ids("SELECT id FROM contacts WHERE project_id = ? AND data->>'plan' = 'pro'", [p.id]),
        members: await ids('SELECT contact_id AS id FROM segment_members WHERE project_id = ? AND segment_id = ?', [p.id, staticSegment.id]),
        executions: await ids('SELECT id FROM automation_executions WHERE project_id = ? AND automation_id = ?', [p.id, workflow.id]),
        deliveries: await ids('SELECT id FROM webhook_deliveries WHERE endpoint_id = ?', [endpoint.id]),
        suppressions: await ids('SELECT id FROM suppressions WHERE project_id = ?', [p.id]),
        inbound: await ids('SELECT id FROM inbound_messages WHERE project_id = ?', [p.id]),
        audit: await ids('SELECT id FROM audit_log WHERE project_id = ?', [p.id]),
      };
      const contacts = (await knex.raw('SELECT id, email FROM contacts WHERE project_id = ? ORDER BY md5(id::text) LIMIT 100', [p.id])).rows as { id: string; email: string }[];
      const otherCampaigns = ((await knex.raw('SELECT id FROM campaigns WHERE project_id <> ?', [p.id])).rows as { id: string }[]).map((r) => r.id);
      return {
        projectId: p.id, secretKey: p.secretKey, campaignIds: seededCampaigns, otherCampaigns, counts, deep, contacts,
        ids: { proSegment: proSegment.id, openedSegment: openedSegment.id, staticSegment: staticSegment.id, workflow: workflow.id, endpoint: endpoint.id, inboundDomain: inboundDomain.id },
      };
    };
    const state = reused ?? await seed(project!);
    if (stateFile && !reused) fs.writeFileSync(stateFile, JSON.stringify(state));
    const { counts, deep, contacts, otherCampaigns } = state;
    const seeded = { campaignIds: state.campaignIds };
    const proSegment = { id: state.ids.proSegment };
    const openedSegment = { id: state.ids.openedSegment };
    const staticSegment = { id: state.ids.staticSegment };
    const workflow = { id: state.ids.workflow };
    const endpoint = { id: state.ids.endpoint };
    const inboundDomain = { id: state.ids.inboundDomain };
    console.log(`the project: ${Object.entries(counts).map(([k, v]) => `${k} ${v}`).join(', ')}`);

    const at = <T>(list: T[], i: number) => list[i % list.length]!;
    const cursor = (list: string[], i: number) => `cursor=${encodeCursor(at(list.slice(0, DEEP_POSITIONS), i))}`;
    // The seed's own "now" (its newest email), not the clock's: a kept cluster's emails and events span the 90 days before
    // it was seeded, and the time filters below would find nothing in it a day later.
    const now = ((await knex.raw('SELECT max(created_at) AS t FROM emails WHERE project_id = ?', [state.projectId])).rows[0].t as Date).getTime();
    const today = Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), new Date(now).getUTCDate());
    const day = (i: number) => new Date(today - (1 + (i % 80)) * 86_400_000);
    const oneDay = (i: number) => `since=${day(i).toISOString()}&until=${new Date(day(i).getTime() + 86_400_000).toISOString()}`;
    const E = '/emails?limit=50';

    const allCases: Case[] = [
      // GET /emails: each filter, first pages and deep cursors (bench:emails' cases, on this seed), as the Emails page asks.
      { page: 'Emails', name: 'emails: no filter, first page', path: () => E, nonEmpty: true },
      { page: 'Emails', name: 'emails: no filter, deep cursor', path: (i) => `${E}&${cursor(deep.emails, i)}`, nonEmpty: true },
      { page: 'Emails', name: 'emails: status=FAILED (2 %), first page', path: () => `${E}&status=FAILED`, nonEmpty: true },
      { page: 'Emails', name: 'emails: status=FAILED, deep cursor', path: (i) => `${E}&status=FAILED&${cursor(deep.failed, i)}` },
      { page: 'Emails', name: 'emails: status=SENT (96 %), deep cursor', path: (i) => `${E}&status=SENT&${cursor(deep.sent, i)}` },
      { page: 'Emails', name: 'emails: status=QUEUED (0.2 %)', path: () => `${E}&status=QUEUED`, nonEmpty: true },
      { page: 'Emails', name: 'emails: to=one recipient', path: (i) => `${E}&to=${encodeURIComponent(at(contacts, i).email)}`, nonEmpty: true },
      { page: 'Emails', name: 'emails: campaignId (30,000), first page', path: (i) => `${E}&campaignId=${at(seeded.campaignIds, i)}`, nonEmpty: true },
      { page: 'Emails', name: 'emails: campaignId, deep cursor', path: (i) => `${E}&campaignId=${seeded.campaignIds[3]}&${cursor(deep.campaign, i)}` },
      { page: 'Emails', name: 'emails: since/until one day (11,000)', path: (i) => `${E}&${oneDay(i)}`, nonEmpty: true },
      { page: 'Emails', name: 'emails: one day and status=FAILED', path: (i) => `${E}&status=FAILED&${oneDay(i)}` },
      { page: 'Emails', name: 'emails: since the last 12 hours', path: () => `${E}&since=${new Date(now - 43_200_000).toISOString()}`, nonEmpty: true },
      { page: 'Emails', name: 'emails: another project\'s campaign (nothing)', path: (i) => `${E}&campaignId=${at(otherCampaigns, i)}` },
      { page: 'Contact', name: 'emails: contactId', path: (i) => `${E}&contactId=${at(contacts, i).id}`, nonEmpty: true },
      // Overview.
      { page: 'Overview', name: 'stats/overview?days=30', path: () => '/stats/overview?days=30' },
      { page: 'Overview', name: 'emails?limit=1', path: () => '/emails?limit=1', nonEmpty: true },
      { page: 'Overview', name: 'domains?limit=1&status=VERIFIED', path: () => '/domains?limit=1&status=VERIFIED', nonEmpty: true },
      // Contacts.
      { page: 'Contacts', name: 'contacts: first page', path: () => '/contacts?limit=50', nonEmpty: true },
      { page: 'Contacts', name: 'contacts: deep cursor', path: (i) => `/contacts?limit=50&${cursor(deep.contacts, i)}` },
      { page: 'Contacts', name: 'contacts: subscribed=false', path: () => '/contacts?limit=50&subscribed=false', nonEmpty: true },
      { page: 'Contacts', name: 'contacts: subscribed=false, deep cursor', path: (i) => `/contacts?limit=50&subscribed=false&${cursor(deep.unsubscribed, i)}` },
      { page: 'Contacts', name: 'contacts: search one address', path: (i) => `/contacts?limit=50&search=${encodeURIComponent(at(contacts, i).email)}`, nonEmpty: true },
      { page: 'Contacts', name: 'contacts: search part of an address', path: (i) => `/contacts?limit=50&search=${at(contacts, i).email.split('@')[0]!.slice(0, 9)}`, nonEmpty: true },
      { page: 'Contacts', name: 'contacts: search grace (2.5 %)', path: () => '/contacts?limit=50&search=grace', nonEmpty: true },
      { page: 'Contacts', name: 'contacts: picker (limit 6, search)', path: (i) => `/contacts?limit=6&search=${at(contacts, i).email.slice(0, 5)}`, nonEmpty: true },
      { page: 'Contacts', name: 'contacts/imports', path: () => '/contacts/imports?limit=50' },
      // Events.
      { page: 'Events', name: 'events: first page', path: () => '/events?limit=50', nonEmpty: true },
      { page: 'Events', name: 'events: deep cursor', path: (i) => `/events?limit=50&${cursor(deep.events, i)}` },
      { page: 'Events', name: 'events: name=email.opened', path: () => '/events?limit=50&name=email.opened', nonEmpty: true },
      { page: 'Events', name: 'events: name=email.opened, deep cursor', path: (i) => `/events?limit=50&name=email.opened&${cursor(deep.opened, i)}` },
      { page: 'Events', name: 'events: since/until one day', path: (i) => `/events?limit=50&${oneDay(i)}`, nonEmpty: true },
      { page: 'Contact', name: 'events: contactId', path: (i) => `/events?limit=50&contactId=${at(contacts, i).id}` },
      { page: 'Events', name: 'events/names', path: () => '/events/names', nonEmpty: true },
      // Segments.
      { page: 'Segments', name: 'segments (limit 50)', path: () => '/segments?limit=50', nonEmpty: true },
      { page: 'Segments', name: 'segments (limit 100: the pickers)', path: () => '/segments?limit=100', nonEmpty: true },
      { page: 'Segment', name: 'segments/:id/contacts: data.plan=pro (333,000)', path: () => `/segments/${proSegment.id}/contacts?limit=50`, nonEmpty: true },
      { page: 'Segment', name: 'segments/:id/contacts: pro, deep cursor', path: (i) => `/segments/${proSegment.id}/contacts?limit=50&${cursor(deep.pro, i)}` },
      { page: 'Segment', name: 'segments/:id/contacts: opened in 30 days (limit 10)', path: () => `/segments/${openedSegment.id}/contacts?limit=10`, nonEmpty: true },
      { page: 'Segment', name: 'segments/:id/contacts: static', path: () => `/segments/${staticSegment.id}/contacts?limit=50`, nonEmpty: true },
      { page: 'Segment', name: 'segments/:id/contacts: static, deep cursor', path: (i) => `/segments/${staticSegment.id}/contacts?limit=50&${cursor(deep.members, i)}` },
      // Campaigns, templates, automations.
      { page: 'Campaigns', name: 'campaigns (limit 25)', path: () => '/campaigns?limit=25', nonEmpty: true },
      { page: 'Campaigns', name: 'campaigns?status=SENT', path: () => '/campaigns?limit=25&status=SENT', nonEmpty: true },
      { page: 'Templates', name: 'templates (limit 50)', path: () => '/templates?limit=50', nonEmpty: true },
      { page: 'Templates', name: 'templates (limit 100: the pickers)', path: () => '/templates?limit=100', nonEmpty: true },
      { page: 'Automations', name: 'workflows', path: () => '/workflows?limit=50', nonEmpty: true },
      { page: 'Automation', name: 'executions: first page', path: () => `/workflows/${workflow.id}/executions?limit=50`, nonEmpty: true },
      { page: 'Automation', name: 'executions: status=WAITING', path: () => `/workflows/${workflow.id}/executions?limit=50&status=WAITING`, nonEmpty: true },
      { page: 'Automation', name: 'executions: deep cursor', path: (i) => `/workflows/${workflow.id}/executions?limit=50&${cursor(deep.executions, i)}` },
      // Webhooks.
      { page: 'Webhooks', name: 'webhooks', path: () => '/webhooks?limit=50', nonEmpty: true },
      { page: 'Webhook', name: 'webhooks/:id/deliveries: first page', path: () => `/webhooks/${endpoint.id}/deliveries?limit=25`, nonEmpty: true },
      { page: 'Webhook', name: 'webhooks/:id/deliveries: deep cursor', path: (i) => `/webhooks/${endpoint.id}/deliveries?limit=25&${cursor(deep.deliveries, i)}` },
      // Suppressions, domains, inbound.
      { page: 'Suppressions', name: 'suppressions: first page', path: () => '/suppressions?limit=50', nonEmpty: true },
      { page: 'Suppressions', name: 'suppressions: reason=hard_bounce', path: () => '/suppressions?limit=50&reason=hard_bounce', nonEmpty: true },
      { page: 'Suppressions', name: 'suppressions: deep cursor', path: (i) => `/suppressions?limit=50&${cursor(deep.suppressions, i)}` },
      { page: 'Domains', name: 'domains', path: () => '/domains?limit=50', nonEmpty: true },
      { page: 'Inbound', name: 'inbound: first page', path: () => '/inbound?limit=50', nonEmpty: true },
      { page: 'Inbound', name: 'inbound: deep cursor', path: (i) => `/inbound?limit=50&${cursor(deep.inbound, i)}` },
      { page: 'Inbound', name: 'inbound/domains', path: () => '/inbound/domains?limit=50', nonEmpty: true },
      { page: 'Inbound', name: 'inbound/routes', path: () => `/inbound/routes?limit=50&domainId=${inboundDomain.id}`, nonEmpty: true },
      // Settings.
      { page: 'Settings', name: 'keys', path: () => '/keys?limit=50', nonEmpty: true },
      { page: 'Settings', name: 'members', path: () => '/members' },
      { page: 'Settings', name: 'invitations', path: () => '/invitations' },
      { page: 'Settings', name: 'audit-log: first page', path: () => '/audit-log?limit=50', nonEmpty: true },
      { page: 'Settings', name: 'audit-log: deep cursor', path: (i) => `/audit-log?limit=50&${cursor(deep.audit, i)}` },
    ];
    const cases = ONLY ? allCases.filter((c) => ONLY.split(',').some((part) => c.name.includes(part))) : allCases;

    // The instrument: Node's fetch (BENCH_CLIENT=fetch, the default and the client of every earlier section) or
    // node:http on one keep-alive socket (BENCH_CLIENT=http), or both in the same run. fetch spends 1.4 ms of the
    // client's CPU a request against node:http's 0.6, on the cores the API and PostgreSQL run on; but a lighter client
    // takes the same fixed time off the call and off /health, so it leaves the tails (the machine's stalls) as they
    // are and the ratios no lower (BENCHMARKS.md section 74).
    //
    // With BENCH_COMPARE_NODE_ARGS or BENCH_COMPARE_TREE, a second API process (other node options, or another
    // checkout's code) on the same database, each call asked of one then of the other (the order alternating), so that
    // both tables come from the same moments.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const viaHttp = (port: number, path: string) => new Promise<{ status: number; body: Buffer }>((resolve, reject) => {
      http.get({ host: '127.0.0.1', port, path, headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      }).on('error', reject);
    });
    const viaFetch = async (port: number, path: string) => {
      const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers });
      return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
    };
    const clientNames: Record<Client, string> = { http: 'node:http', fetch: "Node's fetch" };
    const clients: Instrument[] = CLIENT === 'both'
      ? (['http', 'fetch'] as const).map((client) => ({ name: clientNames[client], client, port }))
      : [{ name: COMPARE_NODE_ARGS === undefined ? clientNames[CLIENT] : apiName('the first', process.env.BENCH_TREE, nodeArgs), client: CLIENT, port }];
    if (COMPARE_NODE_ARGS !== undefined) {
      const compareArgs = COMPARE_NODE_ARGS.split(' ').filter(Boolean);
      const other = startHeraldChild('herald api (compared)', cluster, 'api', apiEnv, compareArgs, COMPARE_TREE ?? process.env.BENCH_TREE);
      children.push(other);
      clients.push({ name: apiName('the second', COMPARE_TREE ?? process.env.BENCH_TREE, compareArgs), client: CLIENT as Client, port: (await other.ready).port as number });
    }
    const ask = async (client: Instrument, path: string) => {
      const started = performance.now();
      const { status, body } = await (client.client === 'fetch' ? viaFetch : viaHttp)(client.port, path);
      return { at: started, ms: performance.now() - started, status, body };
    };
    // BENCH_TRACE=file: every measured request as a line `at ms case` (at: ms since the measures began; case: the
    // case's index, -1 for /health), to see whether the slow ones come together in time (the machine) or alone (the call).
    // With two instruments (BENCH_CLIENT=both, a compared API), the first's requests alone.
    const trace: string[] = [];
    let traceZero = 0;
    const traced = (at: number, ms: number, ci: number) => { if (process.env.BENCH_TRACE) trace.push(`${(at - traceZero).toFixed(3)} ${ms.toFixed(3)} ${ci}`); };
    const health = async (client: Instrument) => {
      const r = await ask(client, '/health');
      if (r.status !== 200) throw new Error(`/health: ${r.status}`);
      return { ms: r.ms, at: r.at };
    };
    const call = async (client: Instrument, c: Case, i: number) => {
      const path = c.path(i);
      const r = await ask(client, path);
      if (r.status !== 200) throw new Error(`${c.name} (${path}): ${r.status} ${r.body.toString().slice(0, 300)}`);
      const data = JSON.parse(r.body.toString()).data as { items?: unknown[]; series?: unknown[] };
      const list = data.items ?? data.series;
      if (c.nonEmpty && (!list || list.length === 0)) throw new Error(`${c.name} (${path}): an empty answer`);
      return { ms: r.ms, at: r.at, bytes: r.body.length };
    };

    // Each instrument's measures: with two, every call and its /health are asked by one then by the other (the order
    // alternating by round), so that both tables come from the same moments of the same run.
    const measures = clients.map(() => ({ times: cases.map(() => [] as number[]), beside: cases.map(() => [] as number[]), allHealth: [] as number[] }));
    const bytes = cases.map(() => 0);
    let steal0 = stealSince();
    let load0 = os.loadavg()[0]!;
    const loads: number[] = [];
    const measureStarted = Date.now();
    for (let round = 0; round < WARMUP + ROUNDS; round++) {
      if (round === WARMUP) {
        steal0 = stealSince();
        load0 = os.loadavg()[0]!;
        traceZero = performance.now();
        await resetStatements(cluster); // BENCH_PG_STAT=1: the warm-up's statements not counted
      }
      for (let k = 0; k < cases.length; k++) {
        const ci = (k + round) % cases.length;
        const c = cases[ci]!;
        for (let j = 0; j < clients.length; j++) {
          const x = (j + Math.floor(round / 2)) % clients.length;
          const client = clients[x]!;
          let h: { ms: number; at: number };
          let r: { ms: number; at: number; bytes: number };
          if (round % 2 === 0) {
            h = await health(client);
            r = await call(client, c, round);
          } else {
            r = await call(client, c, round);
            h = await health(client);
          }
          if (round >= WARMUP) {
            const m = measures[x]!;
            m.times[ci]!.push(r.ms);
            m.beside[ci]!.push(h.ms);
            m.allHealth.push(h.ms);
            bytes[ci] = r.bytes;
            if (x === 0) {
              traced(h.at, h.ms, -1);
              traced(r.at, r.ms, ci);
            }
          }
        }
      }
      if (round >= WARMUP) loads.push(os.loadavg()[0]!);
      if (round === WARMUP) {
        // A first look (the first measured round), slowest first: where the time goes before the run is over.
        const first = cases.map((c, ci) => ({ name: c.name, ms: measures[0]!.times[ci]![0]! })).sort((a, b) => b.ms - a.ms).slice(0, 12);
        console.log(`first measured round, slowest: ${first.map((f) => `${f.name} ${f.ms.toFixed(0)} ms`).join('; ')}`);
      }
      if ((round + 1) % 10 === 0) console.log(`round ${round + 1} of ${WARMUP + ROUNDS} (${((Date.now() - measureStarted) / 1000).toFixed(0)} s), load ${os.loadavg()[0]!.toFixed(1)}`);
    }
    const steal = stealSince(steal0.at).share;
    if (cluster.pgStat) {
      console.log(`\nPostgreSQL's statements per measured call (BENCH_PG_STAT=1; each call and its /health, by ${clients.length} instrument(s)):`);
      await printTopStatements(cluster, ROUNDS * cases.length * clients.length, 15);
    }

    console.log(`\nthe project: ${Object.entries(counts).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    console.log(`${ROUNDS} rounds after ${WARMUP} of warm-up; in each, every call once beside one GET /health${clients.length > 1 ? ', by each client' : ''}; ${clients.length > 1 ? 'two instruments' : 'one client'} (${clients.map((c) => c.name).join(', then ')}), one connection each, one request at a time`);
    console.log(`steal during the measures: ${(steal * 100).toFixed(1)} % of the machine's CPU time; load average ${load0.toFixed(1)} at the start, ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)} during`);
    const reports = clients.map((client, x) => {
      const { times, beside, allHealth } = measures[x]!;
      const h = sorted(allHealth);
      const hp50 = pct(h, 50);
      const hp99 = pct(h, 99);
      // The /health requests of each measured round (cases.length of them, in order), for ratioIntervals.
      const healthByRound = Array.from({ length: ROUNDS }, (_, r) => allHealth.slice(r * cases.length, (r + 1) * cases.length));
      const intervals = ratioIntervals(times, healthByRound);
      const rows = cases.map((c, ci) => {
        const t = sorted(times[ci]!);
        const b = sorted(beside[ci]!);
        const interval = intervals[ci]!;
        return { page: c.page, name: c.name, p50: pct(t, 50), p99: pct(t, 99), max: t[t.length - 1]!, ratio: pct(t, 99) / hp99, interval, besideP99: pct(b, 99), bytes: bytes[ci]! };
      });
      if (clients.length > 1) console.log(`\n### timed by ${client.name}`);
      console.log(`\nGET /health, all ${h.length} requests of the run: p50 ${hp50.toFixed(2)} ms, p99 ${hp99.toFixed(2)} ms, max ${h[h.length - 1]!.toFixed(2)} ms`);
      console.log('\n| page | call | p50 ms | p99 ms | max ms | **p99 ÷ /health p99** | 95 % interval | /health p99 beside it, ms | answer bytes |');
      console.log('|---|---|---|---|---|---|---|---|---|');
      console.log(`| – | GET /health | ${hp50.toFixed(2)} | ${hp99.toFixed(2)} | ${h[h.length - 1]!.toFixed(2)} | 1.00 | – | – | – |`);
      for (const r of rows) console.log(`| ${r.page} | ${r.name} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.max.toFixed(2)} | ${r.ratio > BAR ? '**' : ''}${r.ratio.toFixed(2)}${r.ratio > BAR ? '**' : ''} | ${r.interval[0].toFixed(2)}–${r.interval[1].toFixed(2)} | ${r.besideP99.toFixed(2)} | ${r.bytes} |`);
      const missed = rows.filter((r) => r.ratio > BAR);
      const surelyOver = rows.filter((r) => r.interval[0] > BAR);
      const surelyWithin = rows.filter((r) => r.interval[1] <= BAR);
      console.log(`\n${client.name}: ${rows.length - missed.length} of ${rows.length} calls within ${BAR} × /health's p99${missed.length ? `; over it: ${missed.map((r) => `${r.name} (${r.ratio.toFixed(2)})`).join(', ')}` : ''}`);
      console.log(`${client.name}, by their 95 % intervals: ${surelyWithin.length} within the bar whatever the draw, ${surelyOver.length} over it whatever the draw${surelyOver.length ? ` (${surelyOver.map((r) => r.name).join(', ')})` : ''}, ${rows.length - surelyWithin.length - surelyOver.length} either way`);
      return { client: client.name, health: { p50: hp50, p99: hp99 }, rows };
    });
    if (process.env.BENCH_TRACE) fs.writeFileSync(process.env.BENCH_TRACE, `${cases.map((c, ci) => `# ${ci} ${c.name}`).join('\n')}\n${trace.join('\n')}\n`);
    if (process.env.BENCH_JSON) fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify({ machine: machine(cluster.version), counts, sizes: SIZES, rounds: ROUNDS, steal, loads: [Math.min(...loads), Math.max(...loads)], ...reports[0]!, clients: reports }, null, 2));
  } finally {
    await Promise.all(children.map((ch) => ch.stop()));
    await cluster.stop();
  }
});
