/**
 * GET /emails latency with 1,000,000 emails in the project: p50/p99 of list pages with each filter, first pages and
 * deep cursors, one request at a time (the latency of a page, not the throughput of the API).
 *
 *   npx tsx bench/emails.ts          (npm run bench:emails)
 *
 * Starts its own embedded PostgreSQL in a temporary directory and bulk-loads, with one INSERT … SELECT generate_series
 * each, BENCH_EMAILS (default 1,000,000) emails into the measured project and BENCH_OTHER_EMAILS (default 200,000)
 * into another one (the table is multi-tenant, as in production). The emails are spread over 30 days (their UUIDv7
 * ids carry their creation times), to 50,000 recipients (20 emails each; fewer for a smaller BENCH_EMAILS), with statuses as a busy project has them
 * (90 % SENT, 5 % FAILED, 3 % QUEUED, 2 % CANCELLED) and 60 % of them in one of 20 campaigns. Then VACUUM ANALYZE, and
 * the Herald API as `npm run api` runs it (startHerald, roles api only) in a child process; this process asks it
 * BENCH_REQUESTS (default 300) pages per case after BENCH_WARMUP_REQUESTS (default 30), each request timed from
 * before fetch to the end of its body. Each request also passes authentication and the rate limiter (one statement, projects/access.ts admit). GET /health,
 * measured the same way first, is the baseline: what any request with one round trip to PostgreSQL costs here.
 *
 * Each case is then run again through listEmails (emails/emails.ts) in this process, on the same pages: the database's
 * share, without HTTP, authentication and the rate limiter; and the page's query alone (without the capped count). The
 * hypervisor's steal during the measures is printed: on a shared virtual machine it is where the p99 outliers come from.
 *
 * Every answer is checked: 200, the page's items match the filter, and the total is the capped count
 * (`totalExact: false` past 1,000).
 *
 * Environment: BENCH_EMAILS, BENCH_OTHER_EMAILS, BENCH_REQUESTS, BENCH_WARMUP_REQUESTS, BENCH_LIMIT (page size,
 * default 20), BENCH_LOG_LEVEL (default warn), BENCH_JSON=file.
 */
import fs from 'node:fs';
import type { Knex } from 'knex';
import { decodeCursor, encodeCursor } from '../api/pagination';
import { listEmailsQuerySchema, type ListEmailsQuery } from '../api/schemas/emails';
import { emailListQueries, listEmails } from '../emails/emails';
import { createProject } from '../projects/service';
import { startCluster } from './lib/cluster';
import { startHeraldChild } from './lib/herald';
import { machine, runBench, stealSince, type Child } from './lib/proc';

const EMAILS = Number(process.env.BENCH_EMAILS ?? 1_000_000);
const OTHER_EMAILS = Number(process.env.BENCH_OTHER_EMAILS ?? 200_000);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 300);
const WARMUP = Number(process.env.BENCH_WARMUP_REQUESTS ?? 30);
const LIMIT = Number(process.env.BENCH_LIMIT ?? 20);
const RECIPIENTS = Math.max(1, Math.min(50_000, Math.floor(EMAILS / 20)));
const CAMPAIGNS = 20;
const DAYS = 30;
const START = Date.parse('2026-10-01T00:00:00Z');

interface Item { id: string; status: string; to: string; campaignId: string | null; createdAt: string }
interface PageAnswer { items: Item[]; total: number; totalExact: boolean; hasMore: boolean; nextCursor: string | null }
interface Case {
  name: string;
  /** The query string of request `i`. */
  query: (i: number) => string;
  /** What every item of the page must satisfy. */
  check: (item: Item, i: number) => boolean;
}
interface Measured { name: string; requests: number; p50: number; p99: number; max: number; sqlP50: number; sqlP99: number; pageP50: number; pageP99: number; totals: string }

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

/** One INSERT … SELECT of `n` emails of a project, as described above; `seed` keeps two projects' ids apart. */
async function load(knex: Knex, projectId: string, n: number, campaigns: string[], seed: string): Promise<number> {
  const started = performance.now();
  const span = DAYS * 86_400_000;
  await knex.raw(
    `INSERT INTO emails (id, project_id, campaign_id, from_email, to_email, subject, html, status, attempts, error, sent_at, created_at, updated_at)
     SELECT (lpad(to_hex(t.ms), 12, '0') || '7' || substr(t.h, 1, 3) || '8' || substr(t.h, 4, 15))::uuid,
            ?::uuid,
            CASE WHEN g % 10 < 6 THEN (?::uuid[])[1 + (g / 10) % ${CAMPAIGNS}] END,
            'orders@example.com', 'customer-' || (g % ${RECIPIENTS}) || '@example.org', 'Your order has shipped', '<p>Hello</p>',
            s.status, CASE WHEN s.status = 'QUEUED' THEN 0 ELSE 1 END,
            CASE WHEN s.status = 'FAILED' THEN '550 5.1.1 No such user' END,
            CASE WHEN s.status = 'SENT' THEN to_timestamp(t.ms / 1000.0) END,
            to_timestamp(t.ms / 1000.0), to_timestamp(t.ms / 1000.0)
     FROM generate_series(0, ? - 1) g
     CROSS JOIN LATERAL (SELECT ?::bigint + (g::bigint * ?::bigint) / ? AS ms, md5(? || g) AS h) t
     CROSS JOIN LATERAL (SELECT CASE WHEN g % 100 < 90 THEN 'SENT' WHEN g % 100 < 95 THEN 'FAILED' WHEN g % 100 < 98 THEN 'QUEUED' ELSE 'CANCELLED' END AS status) s`,
    [projectId, campaigns, n, START, span, n, seed],
  );
  return performance.now() - started;
}

runBench('bench:emails', 30 * 60_000, async () => {
  const cluster = await startCluster('emails');
  const children: Child[] = [];
  try {
    console.log(`machine: ${machine(cluster.version)}`);
    const { knex } = cluster;
    const project = await createProject('Bench emails');
    const other = await createProject('Bench emails, another project');
    const campaigns = (await knex.raw(`SELECT herald_uuidv7() AS id FROM generate_series(1, ${CAMPAIGNS})`)).rows.map((r: { id: string }) => r.id);
    const otherCampaigns = (await knex.raw(`SELECT herald_uuidv7() AS id FROM generate_series(1, ${CAMPAIGNS})`)).rows.map((r: { id: string }) => r.id);
    console.log(`loading ${EMAILS} emails into the project and ${OTHER_EMAILS} into another …`);
    const loadMs = await load(knex, project.id, EMAILS, campaigns, 'a');
    await load(knex, other.id, OTHER_EMAILS, otherCampaigns, 'b');
    const vacuumStarted = performance.now();
    await knex.raw('VACUUM ANALYZE emails');
    console.log(`loaded in ${(loadMs / 1000).toFixed(1)} s (one INSERT … SELECT), VACUUM ANALYZE ${((performance.now() - vacuumStarted) / 1000).toFixed(1)} s`);
    const size = (await knex.raw("SELECT pg_size_pretty(pg_total_relation_size('emails')) AS s")).rows[0].s as string;

    /** Random positions among the emails a filter matches: deep cursors (a random page of the whole list). */
    const positions = async (where: string, bindings: Knex.RawBinding[]) => (await knex.raw(
      `SELECT id FROM emails WHERE project_id = ? ${where} ORDER BY random() LIMIT ?`, [project.id, ...bindings, REQUESTS + WARMUP],
    )).rows.map((r: { id: string }) => r.id as string);
    const deepAll = await positions('', []);
    const deepFailed = await positions("AND status = 'FAILED'", []);
    const deepSent = await positions("AND status = 'SENT'", []);
    const deepCampaign = await positions('AND campaign_id = ?', [campaigns[3]]);
    const at = (i: number, list: string[]) => encodeCursor(list[i % list.length]!);
    const day = (i: number) => new Date(START + (i % DAYS) * 86_400_000);
    const iso = (d: Date) => d.toISOString();
    const inDay = (item: Item, i: number) => {
      const t = Date.parse(item.createdAt);
      return t >= day(i).getTime() && t < day(i).getTime() + 86_400_000;
    };

    const cases: Case[] = [
      { name: 'no filter, first page', query: () => '', check: () => true },
      { name: 'no filter, deep cursor', query: (i) => `cursor=${at(i, deepAll)}`, check: () => true },
      { name: 'status=FAILED (5 %), first page', query: () => 'status=FAILED', check: (x) => x.status === 'FAILED' },
      { name: 'status=FAILED, deep cursor', query: (i) => `status=FAILED&cursor=${at(i, deepFailed)}`, check: (x) => x.status === 'FAILED' },
      { name: 'status=SENT (90 %), deep cursor', query: (i) => `status=SENT&cursor=${at(i, deepSent)}`, check: (x) => x.status === 'SENT' },
      { name: 'to=one recipient (20 emails)', query: (i) => `to=customer-${(i * 7919) % RECIPIENTS}@example.org`, check: (x, i) => x.to === `customer-${(i * 7919) % RECIPIENTS}@example.org` },
      { name: 'campaignId (30,000 emails), first page', query: (i) => `campaignId=${campaigns[i % CAMPAIGNS]}`, check: (x, i) => x.campaignId === campaigns[i % CAMPAIGNS] },
      { name: 'campaignId, deep cursor', query: (i) => `campaignId=${campaigns[3]}&cursor=${at(i, deepCampaign)}`, check: (x) => x.campaignId === campaigns[3] },
      { name: 'since/until: one day (33,000 emails)', query: (i) => `since=${iso(day(i))}&until=${iso(new Date(day(i).getTime() + 86_400_000))}`, check: inDay },
      { name: 'since/until: one day and status=FAILED', query: (i) => `status=FAILED&since=${iso(day(i))}&until=${iso(new Date(day(i).getTime() + 86_400_000))}`, check: (x, i) => x.status === 'FAILED' && inDay(x, i) },
      { name: 'since only: the last 12 hours', query: () => `since=${iso(new Date(START + DAYS * 86_400_000 - 43_200_000))}`, check: (x) => Date.parse(x.createdAt) >= START + DAYS * 86_400_000 - 43_200_000 },
      { name: 'another project’s campaign (matches nothing)', query: (i) => `campaignId=${otherCampaigns[i % CAMPAIGNS]}`, check: () => false },
    ];

    const herald = startHeraldChild('herald api', cluster, 'api', { PORT: '0', API_RATE_LIMIT_PER_MINUTE: '1000000000', LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn' });
    children.push(herald);
    const port = (await herald.ready).port as number;
    const headers = { authorization: `Bearer ${project.secretKey}` };

    // The baseline, measured the same way: GET /health, whose one statement is `SELECT 1`. What any request costs on
    // this machine (HTTP, the event loops, a round trip to PostgreSQL), beside which a page's figures read.
    const health: number[] = [];
    const steal0 = stealSince();
    for (let i = 0; i < WARMUP + REQUESTS; i++) {
      const started = performance.now();
      const res = await fetch(`http://127.0.0.1:${port}/health`);
      await res.arrayBuffer();
      if (i >= WARMUP) health.push(performance.now() - started);
    }
    health.sort((a, b) => a - b);
    console.log(`baseline GET /health: p50 ${pct(health, 50).toFixed(2)} ms, p99 ${pct(health, 99).toFixed(2)} ms`);

    const results: Measured[] = [];
    for (const c of cases) {
      const times: number[] = [];
      const totals = new Set<string>();
      for (let i = 0; i < WARMUP + REQUESTS; i++) {
        const q = c.query(i);
        const started = performance.now();
        const res = await fetch(`http://127.0.0.1:${port}/emails?limit=${LIMIT}${q ? `&${q}` : ''}`, { headers });
        const body = (await res.json()) as { data: PageAnswer };
        const ms = performance.now() - started;
        if (res.status !== 200) throw new Error(`${c.name}: ${res.status} ${JSON.stringify(body)}`);
        const bad = body.data.items.find((x) => !c.check(x, i));
        if (bad) throw new Error(`${c.name}: an item does not match the filter: ${JSON.stringify(bad)}`);
        if (c.name.startsWith('another') && body.data.total !== 0) throw new Error(`${c.name}: matched ${body.data.total}`);
        if (!c.name.startsWith('another') && body.data.items.length === 0) throw new Error(`${c.name}: an empty page`);
        if (i >= WARMUP) {
          times.push(ms);
          totals.add(`${body.data.totalExact ? '' : '≥ '}${body.data.total}`);
        }
      }
      // The same pages through listEmails in this process (its one statement, on this process's pool):
      // the database's share of the latency, without HTTP, authentication and the rate limiter.
      const sql: number[] = [];
      for (let i = 0; i < WARMUP + REQUESTS; i++) {
        const q = listEmailsQuerySchema.validate(Object.fromEntries(new URLSearchParams(`limit=${LIMIT}&${c.query(i)}`))).value as ListEmailsQuery;
        const started = performance.now();
        await listEmails(knex, project.id, q, { limit: q.limit, afterId: decodeCursor(q.cursor) });
        if (i >= WARMUP) sql.push(performance.now() - started);
      }
      // And the page's query alone, without the capped count: the count's share is the difference.
      const pageOnly: number[] = [];
      for (let i = 0; i < WARMUP + REQUESTS; i++) {
        const q = listEmailsQuerySchema.validate(Object.fromEntries(new URLSearchParams(`limit=${LIMIT}&${c.query(i)}`))).value as ListEmailsQuery;
        const started = performance.now();
        await emailListQueries(knex, project.id, q, { limit: q.limit, afterId: decodeCursor(q.cursor) }).page;
        if (i >= WARMUP) pageOnly.push(performance.now() - started);
      }
      pageOnly.sort((a, b) => a - b);
      sql.sort((a, b) => a - b);
      times.sort((a, b) => a - b);
      const m = { name: c.name, requests: times.length, p50: pct(times, 50), p99: pct(times, 99), max: times[times.length - 1]!, sqlP50: pct(sql, 50), sqlP99: pct(sql, 99), pageP50: pct(pageOnly, 50), pageP99: pct(pageOnly, 99), totals: [...totals].slice(0, 3).join(', ') + (totals.size > 3 ? ', …' : '') };
      results.push(m);
      console.log(`${m.name}: p50 ${m.p50.toFixed(2)} ms, p99 ${m.p99.toFixed(2)} ms (listEmails alone: p50 ${m.sqlP50.toFixed(2)} ms, p99 ${m.sqlP99.toFixed(2)} ms; its page query alone: p50 ${m.pageP50.toFixed(2)} ms, p99 ${m.pageP99.toFixed(2)} ms)`);
    }

    console.log(`\n${EMAILS} emails in the project (${OTHER_EMAILS} in another), table and indexes ${size}; page size ${LIMIT}; ${REQUESTS} requests per case, one at a time, after ${WARMUP} of warm-up`);
    console.log('\n| case | requests | HTTP p50 ms | HTTP p99 ms | HTTP max ms | listEmails p50 ms | listEmails p99 ms | page query p50 ms | page query p99 ms | total answered |');
    console.log('|---|---|---|---|---|---|---|---|---|---|');
    console.log(`| baseline: GET /health (one \`SELECT 1\`) | ${health.length} | ${pct(health, 50).toFixed(2)} | ${pct(health, 99).toFixed(2)} | ${health[health.length - 1]!.toFixed(2)} | – | – | – | – | – |`);
    for (const r of results) console.log(`| ${r.name} | ${r.requests} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.max.toFixed(2)} | ${r.sqlP50.toFixed(2)} | ${r.sqlP99.toFixed(2)} | ${r.pageP50.toFixed(2)} | ${r.pageP99.toFixed(2)} | ${r.totals} |`);
    console.log(`\nsteal (CPU time the hypervisor gave to other guests) during the measures: ${(stealSince(steal0.at).share * 100).toFixed(1)} % of the machine's CPU time`);
    const worst = results.reduce((a, b) => (b.p99 > a.p99 ? b : a));
    const worstSql = results.reduce((a, b) => (b.sqlP99 > a.sqlP99 ? b : a));
    console.log(`\nworst HTTP p99: ${worst.p99.toFixed(2)} ms (${worst.name}); worst listEmails p99: ${worstSql.sqlP99.toFixed(2)} ms (${worstSql.name}); target ≤ 20 ms`);
    if (process.env.BENCH_JSON) fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify({ machine: machine(cluster.version), emails: EMAILS, size, results }, null, 2));
  } finally {
    await Promise.all(children.map((ch) => ch.stop()));
    await cluster.stop();
  }
});
