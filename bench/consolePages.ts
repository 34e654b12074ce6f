/**
 * The console's pages in Chromium with 1,000,000 contacts and 1,000,000 emails in the project (issue 28, "Speed at
 * scale"): the time from navigation to content of Overview, Emails, Contacts and an email's detail, each beside a
 * static page of the same size served by the same process in the same run.
 *
 *   npx tsx bench/consolePages.ts          (npm run bench:console-pages)
 *
 * The data: bench/lib/consoleSeed.ts, as bench:console-api has it (BENCH_CONTACTS contacts and BENCH_EMAILS emails,
 * default 1,000,000 each, over 90 days with their events and the daily rollup; BENCH_OTHER, default 100,000, of each
 * in another project), then VACUUM ANALYZE. One admin of the project, with a password. The console is built from
 * web/ (scripts/buildWeb.ts) and served by a real Herald API process (startHerald, as `npm run api`), in a child.
 *
 * How a page is loaded and timed, and its static page of the same size: bench/lib/pageLoads.ts (shared with
 * bench/campaignPage.ts). The selectors each page waits for are ones only data makes, never a spinner:
 *   - Overview (`/app`, the route table's): a total (`.overview-stats .stat-value`) and the chart's canvas;
 *   - Emails (`/app/emails`): the first row's link to its email;
 *   - an email's detail (`/app/emails/<id>`, a different transactional email each load): a step of the timeline
 *     and the details' list (the subject is the page's heading in the same render);
 *   - Contacts (`/app/contacts`): the first row's link to its contact (when the page is built on this branch).
 *
 * Rounds: BENCH_WARMUP_LOADS (default 2) then BENCH_LOADS (default 15) of each page and of its static page,
 * interleaved (console then static in even rounds, static then console in odd ones), so both share whatever load the
 * machine has in that second. Median and p90 of each; the ratio is median ÷ static median (the bar: ≤ 3).
 *
 * Environment: BENCH_CONTACTS, BENCH_EMAILS, BENCH_OTHER, BENCH_LOADS, BENCH_WARMUP_LOADS, BENCH_PAGES (names, comma
 * separated, e.g. "Emails,Overview"), BENCH_LOG_LEVEL (default warn), BENCH_JSON=file, CHROMIUM_PATH.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createProject } from '../projects/service';
import { createUser } from '../people/users';
import { startCluster } from './lib/cluster';
import { seedConsoleProject, withIndexesAfter } from './lib/consoleSeed';
import { measurePages, reportPages, rowTwin, serveConsole, VIEWPORT, type ConsoleServer, type PageCase } from './lib/pageLoads';
import { machine, REPO_ROOT, runBench } from './lib/proc';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1_000_000);
const EMAILS = Number(process.env.BENCH_EMAILS ?? 1_000_000);
const OTHER = Number(process.env.BENCH_OTHER ?? 100_000);
const LOADS = Number(process.env.BENCH_LOADS ?? 15);
const WARMUP = Number(process.env.BENCH_WARMUP_LOADS ?? 2);
const ONLY = process.env.BENCH_PAGES?.split(',').map((s) => s.trim().toLowerCase());
const DAYS = 90;
const PASSWORD = 'bench-password-0123456789';

runBench('bench:console-pages', 40 * 60_000, async () => {
  const cluster = await startCluster('console-pages');
  let server: ConsoleServer | undefined;
  try {
    console.log(`machine: ${machine(cluster.version)}; load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
    const { knex } = cluster;
    const project = await createProject('Bench console');
    const other = await createProject('Bench console, another project');
    console.log(`seeding ${CONTACTS} contacts and ${EMAILS} emails over ${DAYS} days (and ${OTHER} of each in another project) …`);
    const seedStarted = performance.now();
    await withIndexesAfter(knex, ['contacts', 'emails', 'events'], async () => {
      await seedConsoleProject(knex, project.id, { contacts: CONTACTS, emails: EMAILS, days: DAYS, seed: 'a' });
      if (OTHER > 0) await seedConsoleProject(knex, other.id, { contacts: OTHER, emails: OTHER, days: DAYS, seed: 'b' });
    });
    await knex.raw('VACUUM ANALYZE');
    const counts = (await knex.raw(
      `SELECT (SELECT count(*) FROM contacts WHERE project_id = ?)::int AS contacts, (SELECT count(*) FROM emails WHERE project_id = ?)::int AS emails,
              (SELECT count(*) FROM events WHERE project_id = ?)::int AS events, pg_size_pretty(pg_database_size(current_database())) AS size`,
      [project.id, project.id, project.id])).rows[0];
    console.log(`seeded and vacuumed in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s: ${counts.contacts} contacts, ${counts.emails} emails, ${counts.events} events; database ${counts.size}`);

    const admin = await createUser(knex, { email: 'ada@bench.example', name: 'Ada Admin', password: PASSWORD });
    await knex('memberships').insert({ project_id: project.id, user_id: admin.id, role: 'admin' });
    // Transactional emails that were sent and opened: a subject, an HTML body to preview and a timeline of three steps.
    const emailIds = ((await knex.raw(`SELECT id FROM emails WHERE project_id = ? AND campaign_id IS NULL AND status = 'SENT' AND opens > 0 ORDER BY md5(id::text) LIMIT 100`, [project.id])).rows as { id: string }[]).map((r) => r.id);
    server = await serveConsole(cluster, admin.email, PASSWORD);

    const contactsBuilt = !fs.readFileSync(path.join(REPO_ROOT, 'web', 'pages', 'Contacts.tsx'), 'utf8').includes('This page is being built');
    const all: PageCase[] = [
      { name: 'Overview', slug: 'overview', path: () => '/app', ready: ['.overview-stats .stat-value', '.volume-chart canvas'],
        twin: '<div class="stats overview-stats"><div class="stat"><div class="stat-label">Sent</div><div class="stat-value" data-bench-content>960,000</div></div></div>' },
      { name: 'Emails', slug: 'emails', path: () => '/app/emails', ready: ['table.table tbody tr a.row-link'], twin: rowTwin('ada.0a1b2c0@example.org') },
      { name: 'Email detail', slug: 'email', path: (i) => `/app/emails/${emailIds[i % emailIds.length]}`, ready: ['ol.timeline li', 'dl.kv dd'],
        twin: '<ol class="timeline"><li data-bench-content>Sent</li></ol>' },
      ...(contactsBuilt ? [{ name: 'Contacts', slug: 'contacts', path: () => '/app/contacts', ready: ['table.table tbody tr a.row-link'], twin: rowTwin('ada.0a1b2c0@example.org') }] : []),
    ];
    const pages = all.filter((p) => !ONLY || ONLY.includes(p.name.toLowerCase()));
    if (!contactsBuilt) console.log('the Contacts page is the placeholder on this branch: not measured');

    const loadavg0 = os.loadavg();
    const measured = await measurePages(server, pages, { loads: LOADS, warmup: WARMUP });
    console.log(`\n${counts.contacts} contacts, ${counts.emails} emails, ${counts.events} events in the project; ${LOADS} loads of each after ${WARMUP} warm-up, a new browser context each (cold cache), ${VIEWPORT.width}×${VIEWPORT.height}`);
    const summary = reportPages(pages, measured);
    console.log(`\nsteal during the loads: ${(measured.steal * 100).toFixed(1)} % of the machine's CPU time; load average before ${loadavg0.map((x) => x.toFixed(1)).join(' ')}, after ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
    const worst = summary.reduce((a, b) => (b.ratio > a.ratio ? b : a));
    console.log(`highest ratio: ${worst.page}, ${worst.ratio.toFixed(2)} × its static page (the bar: ≤ 3)`);
    if (process.env.BENCH_JSON) fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify({ machine: machine(cluster.version), counts, summary, results: Object.fromEntries(measured.results) }, null, 2));
  } finally {
    await server?.stop();
    await cluster.stop();
  }
});
