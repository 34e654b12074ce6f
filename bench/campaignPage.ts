/**
 * A sent campaign's page in Chromium (issue 29): the time from navigation to its results (the stats, the chart of opens
 * and clicks over time, the clicks per link), beside a static page of the same size served by the same process in the
 * same run, as bench/consolePages.ts measures the other pages (bench/lib/pageLoads.ts: how a page is loaded, timed and
 * given its static twin).
 *
 *   npx tsx bench/campaignPage.ts          (npm run bench:campaign-page)
 *
 * The data: bench/lib/consoleSeed.ts with BENCH_CONTACTS contacts (default 1,000,000) and as many emails over 90 days
 * with their events, of which the campaign emails (60 %) all belong to ONE campaign (BENCH_CAMPAIGNS, default 1): a
 * campaign to most of the list, 600,000 emails at the default size, with ~180,000 opens and ~48,000 clicks. The
 * campaign is then given the times and the total of a sent one (started at its first email, finished at its last),
 * VACUUM ANALYZE, one admin with a password, the console built and served by a real Herald API process in a child.
 *
 * The page: `/app/campaigns/<id>`, which for a campaign started more than two days ago asks GET /campaigns/:id and
 * GET /campaigns/:id/stats?series=day (and the rest of the console's first load). Ready when a stat tile's number, the
 * chart's canvas and the first row of the clicks per link are visible. Before the loads, each way of asking the stats
 * is timed on its own (BENCH_API_REQUESTS each, default 20, with the session: the page's own calls): no series, by day,
 * by hour.
 *
 * Environment: BENCH_CONTACTS, BENCH_EMAILS (default BENCH_CONTACTS), BENCH_CAMPAIGNS, BENCH_LOADS (default 15),
 * BENCH_WARMUP_LOADS (default 2), BENCH_API_REQUESTS, BENCH_LOG_LEVEL (default warn), BENCH_JSON=file, CHROMIUM_PATH.
 */
import fs from 'node:fs';
import os from 'node:os';
import { createProject } from '../projects/service';
import { createUser } from '../people/users';
import { startCluster } from './lib/cluster';
import { seedConsoleProject, withIndexesAfter } from './lib/consoleSeed';
import { measurePages, median, pct, reportPages, serveConsole, VIEWPORT, type ConsoleServer, type PageCase } from './lib/pageLoads';
import { machine, runBench } from './lib/proc';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1_000_000);
// Each contact at most once per campaign (emails_campaign_contact_key): no more emails than contacts.
const EMAILS = Math.min(CONTACTS, Number(process.env.BENCH_EMAILS ?? CONTACTS));
const CAMPAIGNS = Number(process.env.BENCH_CAMPAIGNS ?? 1);
const LOADS = Number(process.env.BENCH_LOADS ?? 15);
const WARMUP = Number(process.env.BENCH_WARMUP_LOADS ?? 2);
const API_REQUESTS = Number(process.env.BENCH_API_REQUESTS ?? 20);
const DAYS = 90;
const PASSWORD = 'bench-password-0123456789';

runBench('bench:campaign-page', 40 * 60_000, async () => {
  const cluster = await startCluster('campaign-page');
  let server: ConsoleServer | undefined;
  try {
    console.log(`machine: ${machine(cluster.version)}; load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
    const { knex } = cluster;
    const project = await createProject('Bench campaign');
    console.log(`seeding ${CONTACTS} contacts and ${EMAILS} emails over ${DAYS} days, the campaign emails in ${CAMPAIGNS} campaign(s) …`);
    const seedStarted = performance.now();
    const { result: seeded } = await withIndexesAfter(knex, ['contacts', 'emails', 'events'], (db) =>
      seedConsoleProject(db, project.id, { contacts: CONTACTS, emails: EMAILS, days: DAYS, campaigns: CAMPAIGNS, seed: 'a' }));
    const campaignId = seeded.campaignIds[0]!;
    // A sent campaign's times and total, from its emails (the seed writes the row alone).
    await knex.raw(
      `UPDATE campaigns k SET started_at = e.first, scheduled_at = e.first, completed_at = e.last, total_recipients = e.n, dispatched_at = e.first
       FROM (SELECT min(created_at) AS first, max(coalesce(sent_at, created_at)) AS last, count(*)::int AS n FROM emails
             WHERE project_id = ? AND campaign_id = ? AND NOT is_test) e
       WHERE k.project_id = ? AND k.id = ?`, [project.id, campaignId, project.id, campaignId]);
    await knex.raw('VACUUM ANALYZE');
    const counts = (await knex.raw(
      `SELECT (SELECT count(*) FROM contacts WHERE project_id = ?)::int AS contacts,
              (SELECT count(*) FROM emails WHERE project_id = ? AND campaign_id = ?)::int AS campaign_emails,
              (SELECT count(*) FROM events v JOIN emails e ON e.project_id = v.project_id AND e.id = v.email_id
                WHERE e.project_id = ? AND e.campaign_id = ? AND v.name IN ('email.opened', 'email.clicked'))::int AS engagement_events,
              pg_size_pretty(pg_database_size(current_database())) AS size`,
      [project.id, project.id, campaignId, project.id, campaignId])).rows[0];
    console.log(`seeded and vacuumed in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s: ${counts.contacts} contacts; the campaign: ${counts.campaign_emails} emails, ${counts.engagement_events} open and click events; database ${counts.size}`);

    const admin = await createUser(knex, { email: 'ada@bench.example', name: 'Ada Admin', password: PASSWORD });
    await knex('memberships').insert({ project_id: project.id, user_id: admin.id, role: 'admin' });
    server = await serveConsole(cluster, admin.email, PASSWORD);

    // The stats on their own, as the page asks them (the session and the project header).
    const headers = { Cookie: `herald_session=${server.token}`, 'Herald-Project': project.id };
    const api: { call: string; p50: number; p90: number; points: number }[] = [];
    for (const query of ['', '?series=day', '?series=hour']) {
      const times: number[] = [];
      let points = 0;
      for (let i = 0; i < API_REQUESTS + 3; i++) {
        const t = performance.now();
        const res = await fetch(`${server.base}/campaigns/${campaignId}/stats${query}`, { headers });
        const body = await res.json() as { data: { sent: number; series?: { points: unknown[] } } };
        if (res.status !== 200 || !body.data.sent) throw new Error(`stats${query}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
        if (i >= 3) times.push(performance.now() - t);
        points = body.data.series?.points.length ?? 0;
      }
      times.sort((a, b) => a - b);
      api.push({ call: `GET /campaigns/:id/stats${query}`, p50: pct(times, 50), p90: pct(times, 90), points });
    }
    console.log('\n| call | p50 ms | p90 ms | points |\n|---|---|---|---|');
    for (const a of api) console.log(`| ${a.call} | ${a.p50.toFixed(1)} | ${a.p90.toFixed(1)} | ${a.points} |`);

    const pages: PageCase[] = [{
      name: 'Campaign', slug: 'campaign', path: () => `/app/campaigns/${campaignId}`,
      ready: ['.campaign-report .stat-value', '.volume-chart canvas', '.campaign-report table.table tbody tr'],
      twin: '<div class="stats campaign-stats"><div class="stat"><div class="stat-label">Recipients</div><div class="stat-value" data-bench-content>600,000</div></div></div>',
    }];
    const loadavg0 = os.loadavg();
    const measured = await measurePages(server, pages, { loads: LOADS, warmup: WARMUP });
    console.log(`\nthe campaign's page: ${counts.campaign_emails} emails and ${counts.engagement_events} open and click events; ${LOADS} loads after ${WARMUP} warm-up, a new browser context each (cold cache), ${VIEWPORT.width}×${VIEWPORT.height}`);
    const summary = reportPages(pages, measured);
    console.log(`\nsteal during the loads: ${(measured.steal * 100).toFixed(1)} % of the machine's CPU time; load average before ${loadavg0.map((x) => x.toFixed(1)).join(' ')}, after ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
    console.log(`ratio: ${summary[0]!.ratio.toFixed(2)} × its static page (the bar: ≤ 3); Node clock median ${median(measured.results.get('campaign')!.console.map((l) => l.nodeMs)).toFixed(0)} ms`);
    if (process.env.BENCH_JSON) fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify({ machine: machine(cluster.version), counts, api, summary, results: Object.fromEntries(measured.results) }, null, 2));
  } finally {
    await server?.stop();
    await cluster.stop();
  }
});
