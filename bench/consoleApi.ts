/**
 * The API calls of the console's pages (issue 28) with 1,000,000 contacts and 1,000,000 emails in the project, beside
 * GET /health in the same run: the latency of each call, one request at a time.
 *
 *   npx tsx bench/consoleApi.ts          (npm run bench:console-api)
 *
 * Starts its own embedded PostgreSQL in a temporary directory and fills a project with bench/lib/consoleSeed.ts
 * (set-based SQL, one INSERT … SELECT per table): BENCH_CONTACTS contacts (default 1,000,000), BENCH_EMAILS emails
 * (default 1,000,000) over the last 90 days with their events (~1.4 per email), the per-name totals and the daily
 * rollup; and another project with BENCH_OTHER (default 100,000) of each, since the tables are multi-tenant. Then
 * VACUUM ANALYZE, and the Herald API as `npm run api` runs it (startHerald, roles api) in a child process.
 *
 * Each case is asked BENCH_REQUESTS times (default 200) after BENCH_WARMUP_REQUESTS (default 20), each request timed
 * from before fetch to the end of its body, with the project's secret key (a session costs the same one statement:
 * BENCHMARKS.md section 18). The pages' calls: Overview (GET /stats/overview, 7/30/90 days); Emails (GET /emails first
 * page, with each filter, the next page by cursor; GET /emails/:id and its raw message); Contacts (first page, a search,
 * a contact, the contact's events and emails); Events (GET /events, GET /events/names). Every answer is checked: 200,
 * and non-empty where the seed says it must be.
 *
 * Environment: BENCH_CONTACTS, BENCH_EMAILS, BENCH_OTHER, BENCH_REQUESTS, BENCH_WARMUP_REQUESTS, BENCH_LIMIT (page
 * size, default 50), BENCH_LOG_LEVEL (default warn), BENCH_JSON=file.
 */
import fs from 'node:fs';
import { createProject } from '../projects/service';
import { startCluster } from './lib/cluster';
import { seedConsoleProject, withIndexesAfter } from './lib/consoleSeed';
import { startHeraldChild } from './lib/herald';
import { machine, runBench, stealSince, type Child } from './lib/proc';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1_000_000);
const EMAILS = Number(process.env.BENCH_EMAILS ?? 1_000_000);
const OTHER = Number(process.env.BENCH_OTHER ?? 100_000);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 200);
const WARMUP = Number(process.env.BENCH_WARMUP_REQUESTS ?? 20);
const LIMIT = Number(process.env.BENCH_LIMIT ?? 50);
const DAYS = 90;

interface Case {
  page: string;
  name: string;
  /** The path and query of request `i`. */
  path: (i: number) => string;
  /** The answer must list something (a page's items, a series). */
  nonEmpty?: boolean;
}
interface Measured { page: string; name: string; p50: number; p99: number; ratio: number; bytes: number; note: string }

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

runBench('bench:console-api', 40 * 60_000, async () => {
  const cluster = await startCluster('console-api');
  const children: Child[] = [];
  try {
    console.log(`machine: ${machine(cluster.version)}`);
    const { knex } = cluster;
    const project = await createProject('Bench console');
    const other = await createProject('Bench console, another project');
    console.log(`seeding ${CONTACTS} contacts and ${EMAILS} emails over ${DAYS} days (and ${OTHER} of each in another project) …`);
    const seedStarted = performance.now();
    const { result: seeded, indexMs } = await withIndexesAfter(knex, ['contacts', 'emails', 'events'], async (db) => {
      const mine = await seedConsoleProject(db, project.id, { contacts: CONTACTS, emails: EMAILS, days: DAYS, seed: 'a' });
      await seedConsoleProject(db, other.id, { contacts: OTHER, emails: OTHER, days: DAYS, seed: 'b' });
      return mine;
    });
    const seedMs = performance.now() - seedStarted;
    const vacuumStarted = performance.now();
    await knex.raw('VACUUM ANALYZE');
    const vacuumMs = performance.now() - vacuumStarted;
    const counts = (await knex.raw(
      `SELECT (SELECT count(*) FROM contacts WHERE project_id = ?)::int AS contacts, (SELECT count(*) FROM emails WHERE project_id = ?)::int AS emails,
              (SELECT count(*) FROM events WHERE project_id = ?)::int AS events,
              pg_size_pretty(pg_database_size(current_database())) AS size`, [project.id, project.id, project.id])).rows[0];
    console.log(`seeded in ${(seedMs / 1000).toFixed(1)} s (the measured project: ${Object.entries(seeded.timings).map(([k, v]) => `${k} ${(v / 1000).toFixed(1)} s`).join(', ')}; the secondary indexes built after the load: ${(indexMs / 1000).toFixed(1)} s), VACUUM ANALYZE ${(vacuumMs / 1000).toFixed(1)} s`);
    console.log(`the project: ${counts.contacts} contacts, ${counts.emails} emails, ${counts.events} events; database ${counts.size}`);

    // Samples for the cases that name one row: transactional emails, contacts with mail, a recipient, a day.
    const sample = async (sql: string, bindings: unknown[]) => (await knex.raw(sql, bindings as never[])).rows as Record<string, string>[];
    const emailIds = (await sample(`SELECT id FROM emails WHERE project_id = ? AND campaign_id IS NULL AND status = 'SENT' ORDER BY md5(id::text) LIMIT 100`, [project.id])).map((r) => r.id!);
    const contacts = await sample(`SELECT id, email FROM contacts WHERE project_id = ? ORDER BY md5(id::text) LIMIT 100`, [project.id]);
    const at = <T>(list: T[], i: number) => list[i % list.length]!;
    const now = Date.now();
    const dayStart = (i: number) => new Date(Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), new Date(now).getUTCDate()) - (1 + (i % 80)) * 86_400_000);

    const herald = startHeraldChild('herald api', cluster, 'api', { PORT: '0', API_RATE_LIMIT_PER_MINUTE: '1000000000', LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn' });
    children.push(herald);
    const port = (await herald.ready).port as number;
    const headers = { authorization: `Bearer ${project.secretKey}` };
    const ask = async (path: string) => {
      const started = performance.now();
      const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers });
      const body = Buffer.from(await res.arrayBuffer());
      return { ms: performance.now() - started, status: res.status, body };
    };

    // The next page of the emails list: a cursor from a first page, as the console's "next" button has it.
    const firstPage = JSON.parse((await ask(`/emails?limit=${LIMIT}`)).body.toString()).data as { nextCursor: string };
    const failedPage = JSON.parse((await ask(`/emails?limit=${LIMIT}&status=FAILED`)).body.toString()).data as { nextCursor: string };

    const cases: Case[] = [
      { page: 'Overview', name: 'GET /stats/overview?days=7', path: () => '/stats/overview?days=7', nonEmpty: true },
      { page: 'Overview', name: 'GET /stats/overview?days=30', path: () => '/stats/overview?days=30', nonEmpty: true },
      { page: 'Overview', name: 'GET /stats/overview?days=90', path: () => '/stats/overview?days=90', nonEmpty: true },
      { page: 'Emails', name: 'GET /emails (first page)', path: () => `/emails?limit=${LIMIT}`, nonEmpty: true },
      { page: 'Emails', name: 'GET /emails next page (cursor)', path: () => `/emails?limit=${LIMIT}&cursor=${firstPage.nextCursor}`, nonEmpty: true },
      { page: 'Emails', name: 'GET /emails?status=FAILED (2 %)', path: () => `/emails?limit=${LIMIT}&status=FAILED`, nonEmpty: true },
      { page: 'Emails', name: 'GET /emails?status=FAILED next page', path: () => `/emails?limit=${LIMIT}&status=FAILED&cursor=${failedPage.nextCursor}`, nonEmpty: true },
      { page: 'Emails', name: 'GET /emails?to=… (one recipient)', path: (i) => `/emails?limit=${LIMIT}&to=${encodeURIComponent(at(contacts, i).email!)}` },
      { page: 'Emails', name: 'GET /emails?campaignId=… (30,000)', path: (i) => `/emails?limit=${LIMIT}&campaignId=${at(seeded.campaignIds, i)}`, nonEmpty: true },
      { page: 'Emails', name: 'GET /emails?since&until (one day)', path: (i) => `/emails?limit=${LIMIT}&since=${dayStart(i).toISOString()}&until=${new Date(dayStart(i).getTime() + 86_400_000).toISOString()}`, nonEmpty: true },
      { page: 'Emails', name: 'GET /emails?status=SENT&since&until', path: (i) => `/emails?limit=${LIMIT}&status=SENT&since=${dayStart(i).toISOString()}&until=${new Date(dayStart(i).getTime() + 86_400_000).toISOString()}`, nonEmpty: true },
      { page: 'Email', name: 'GET /emails/:id', path: (i) => `/emails/${at(emailIds, i)}` },
      { page: 'Email', name: 'GET /emails/:id/raw', path: (i) => `/emails/${at(emailIds, i)}/raw` },
      { page: 'Contacts', name: 'GET /contacts (first page)', path: () => `/contacts?limit=${LIMIT}`, nonEmpty: true },
      { page: 'Contacts', name: 'GET /contacts?search=… (one address)', path: (i) => `/contacts?limit=${LIMIT}&search=${encodeURIComponent(at(contacts, i).email!)}`, nonEmpty: true },
      { page: 'Contacts', name: 'GET /contacts?search=… (part of an address)', path: (i) => `/contacts?limit=${LIMIT}&search=${at(contacts, i).email!.split('@')[0]!.slice(0, 9)}`, nonEmpty: true },
      { page: 'Contacts', name: 'GET /contacts?search=grace (2.5 %)', path: () => `/contacts?limit=${LIMIT}&search=grace`, nonEmpty: true },
      { page: 'Contacts', name: 'GET /contacts?subscribed=false', path: () => `/contacts?limit=${LIMIT}&subscribed=false`, nonEmpty: true },
      { page: 'Contact', name: 'GET /contacts/:id', path: (i) => `/contacts/${at(contacts, i).id}` },
      { page: 'Contact', name: 'GET /events?contactId=…', path: (i) => `/events?limit=${LIMIT}&contactId=${at(contacts, i).id}` },
      { page: 'Contact', name: 'GET /emails?contactId=…', path: (i) => `/emails?limit=${LIMIT}&contactId=${at(contacts, i).id}` },
      { page: 'Events', name: 'GET /events (first page)', path: () => `/events?limit=${LIMIT}`, nonEmpty: true },
      { page: 'Events', name: 'GET /events?name=email.opened', path: () => `/events?limit=${LIMIT}&name=email.opened`, nonEmpty: true },
      { page: 'Events', name: 'GET /events/names', path: () => '/events/names', nonEmpty: true },
    ];

    // The baseline, measured the same way: GET /health, whose one statement is `SELECT 1`.
    const steal0 = stealSince();
    const health: number[] = [];
    for (let i = 0; i < WARMUP + REQUESTS; i++) {
      const r = await ask('/health');
      if (i >= WARMUP) health.push(r.ms);
    }
    health.sort((a, b) => a - b);
    const base = pct(health, 50);
    console.log(`baseline GET /health: p50 ${base.toFixed(2)} ms, p99 ${pct(health, 99).toFixed(2)} ms`);

    const results: Measured[] = [];
    for (const c of cases) {
      const times: number[] = [];
      let bytes = 0;
      let note = '';
      for (let i = 0; i < WARMUP + REQUESTS; i++) {
        const r = await ask(c.path(i));
        if (r.status !== 200) throw new Error(`${c.name}: ${r.status} ${r.body.toString().slice(0, 300)}`);
        if (c.path(i).endsWith('/raw')) {
          if (!r.body.toString('latin1').includes('Message-ID:')) throw new Error(`${c.name}: not a message`);
        } else {
          const data = JSON.parse(r.body.toString()).data as { items?: unknown[]; series?: unknown[]; total?: number; totalExact?: boolean };
          const list = data.items ?? data.series;
          if (c.nonEmpty && list && list.length === 0) throw new Error(`${c.name}: an empty answer`);
          if (i === WARMUP && data.total !== undefined) note = `total ${data.totalExact === false ? '≥ ' : ''}${data.total}`;
        }
        if (i >= WARMUP) {
          times.push(r.ms);
          bytes = r.body.length;
        }
      }
      times.sort((a, b) => a - b);
      const m = { page: c.page, name: c.name, p50: pct(times, 50), p99: pct(times, 99), ratio: pct(times, 50) / base, bytes, note };
      results.push(m);
      console.log(`${m.page} | ${m.name}: p50 ${m.p50.toFixed(2)} ms, p99 ${m.p99.toFixed(2)} ms, ${m.ratio.toFixed(2)} × /health`);
    }

    console.log(`\n${counts.contacts} contacts, ${counts.emails} emails and ${counts.events} events in the project (${OTHER} contacts and emails in another); database ${counts.size}; page size ${LIMIT}; ${REQUESTS} requests per case, one at a time, after ${WARMUP} of warm-up`);
    console.log('\n| page | call | p50 ms | p99 ms | p50 ÷ /health p50 | answer bytes | total answered |');
    console.log('|---|---|---|---|---|---|---|');
    console.log(`| – | GET /health (baseline) | ${base.toFixed(2)} | ${pct(health, 99).toFixed(2)} | 1.00 | – | – |`);
    for (const r of results) console.log(`| ${r.page} | ${r.name} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.ratio.toFixed(2)} | ${r.bytes} | ${r.note || '–'} |`);
    console.log(`\nsteal (CPU time the hypervisor gave to other guests) during the measures: ${(stealSince(steal0.at).share * 100).toFixed(1)} % of the machine's CPU time`);
    const worst = results.reduce((a, b) => (b.p50 > a.p50 ? b : a));
    console.log(`slowest median: ${worst.name}, ${worst.p50.toFixed(2)} ms (${worst.ratio.toFixed(2)} × /health)`);
    if (process.env.BENCH_JSON) fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify({ machine: machine(cluster.version), counts, seedMs, indexMs, vacuumMs, timings: seeded.timings, health: { p50: base, p99: pct(health, 99) }, results }, null, 2));
  } finally {
    await Promise.all(children.map((ch) => ch.stop()));
    await cluster.stop();
  }
});
