/**
 * The open pixel (GET /t/o/:token) and the click redirect (GET /t/c/:token): throughput and latency, beside GET /health
 * of the same API process in the same run (the ratio says what recording an open or a click costs over answering at
 * all).
 *
 *   npx tsx bench/tracking.ts          (npm run bench:tracking)
 *
 * Starts its own embedded PostgreSQL in a temporary directory and the Herald API exactly as `npm run api` runs it. The
 * project has BENCH_EMAILS sent emails with open and click tracking (and their contacts), and as many emails of one
 * campaign to the same contacts, measured apart (a campaign email's hit also adds to the campaign's kept stats:
 * migration 20261203000001); every request names another of them, round robin, as a day of opens would. Each hit verifies its signed token, then is recorded by group commit
 * (tracking/record.ts): one UPDATE of the emails' counts and one recordEvents per transaction for all the hits that
 * arrived together. autocannon (in this process) drives each route at BENCH_CONNECTIONS: a warm-up, then the measure.
 * A browser user agent, so the opens are unique ones (first_opened_at is written).
 *
 * After the run it checks that every answered hit left its count (the sums ≥ the answers: hits still in flight when
 * autocannon stops count but were not answered), an event per email, kind and link per tracking window (at most the
 * counts, at least one per email opened), and that the campaign's kept stats equal its emails' sums and its events.
 *
 * Environment: BENCH_DURATION (s, default 15), BENCH_WARMUP (s, default 3), BENCH_CONNECTIONS (default 32),
 * BENCH_EMAILS (default 20000), BENCH_LOG_LEVEL (Herald's LOG_LEVEL, default info; the log goes to /dev/null),
 * BENCH_PG_STAT=1 (pg_stat_statements: the statements' time per request), BENCH_CPU_PROF=1 (V8 profile of the API
 * process into BENCH_PROFILE_DIR, default $TMPDIR/herald-bench-profiles), BENCH_JSON=file.
 */
import fs from 'node:fs';
import autocannon from 'autocannon';
import { printTopStatements, startCluster, type BenchCluster } from './lib/cluster';
import { BENCH_SECRET, benchProject, EMAIL_HTML, prepareEngineSchema, startHeraldChild } from './lib/herald';
import { cpuProfileArgs, cpuMs, machine, machineBusyMs, runBench, type Child } from './lib/proc';
import { startSink, type Sink } from './lib/sink';
import { clickToken, openToken } from '../tracking/links';

const DURATION = Number(process.env.BENCH_DURATION ?? 15);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const EMAILS = Number(process.env.BENCH_EMAILS ?? 20_000);
const TARGET = 3000;
const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';

interface Measured {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
  answered: number;
  unexpected: number;
  errors: number;
  cpu: { server: number; postgres: number; loadgen: number; machine: number };
}

function drive(url: string, paths: string[], expected: number, seconds: number) {
  let i = 0;
  const statuses = new Map<number, number>();
  return new Promise<{ r: autocannon.Result; answered: number; unexpected: number }>((resolve, reject) => {
    const run = autocannon({
      url,
      connections: CONNECTIONS,
      duration: seconds,
      timeout: 30,
      headers: { 'user-agent': BROWSER },
      requests: [{ setupRequest: (req) => ({ ...req, path: paths[i++ % paths.length]! }) }],
    }, (err, r) => {
      if (err) reject(err);
      else resolve({ r, answered: statuses.get(expected) ?? 0, unexpected: [...statuses].filter(([s]) => s !== expected).reduce((n, [, c]) => n + c, 0) });
    });
    run.on('response', (_client: unknown, status: number) => { statuses.set(status, (statuses.get(status) ?? 0) + 1); });
  });
}

async function measure(name: string, child: Child, base: string, paths: string[], expected: number, cluster: BenchCluster): Promise<{ m: Measured; total: number }> {
  process.stdout.write(`${name}: warm-up ${WARMUP} s … `);
  const warm = await drive(base, paths, expected, WARMUP);
  process.stdout.write(`${Math.round(warm.answered / WARMUP)} req/s; measure ${DURATION} s … `);
  await printTopStatements(cluster, 1, 0); // resets the statistics (BENCH_PG_STAT=1)
  const before = { server: cpuMs(child.pid), postgres: cpuMs(cluster.postmasterPid(), true), loadgen: cpuMs(process.pid), machine: machineBusyMs() };
  const { r, answered, unexpected } = await drive(base, paths, expected, DURATION);
  const after = { server: cpuMs(child.pid), postgres: cpuMs(cluster.postmasterPid(), true), loadgen: cpuMs(process.pid), machine: machineBusyMs() };
  const m: Measured = {
    name, rps: answered / r.duration, p50: r.latency.p50, p99: r.latency.p99, p999: r.latency.p99_9, max: r.latency.max,
    answered, unexpected, errors: r.errors + r.timeouts,
    cpu: {
      server: (after.server - before.server) / answered, postgres: (after.postgres - before.postgres) / answered,
      loadgen: (after.loadgen - before.loadgen) / answered, machine: (after.machine - before.machine) / answered,
    },
  };
  console.log(`${Math.round(m.rps)} req/s`);
  await printTopStatements(cluster, answered, 8);
  return { m, total: warm.answered + answered };
}

runBench('bench:tracking', 10 * 60_000, async () => {
  const cluster = await startCluster('tracking');
  const children: Child[] = [];
  let sinkRef: Sink | undefined;
  try {
    console.log(`machine: ${machine(cluster.version)}`);
    console.log(`PostgreSQL settings: ${JSON.stringify(cluster.settings)}`);
    console.log(`load: ${CONNECTIONS} connections, warm-up ${WARMUP} s, measure ${DURATION} s, ${EMAILS} tracked emails, one after the other\n`);
    const { knex } = cluster;
    const project = await benchProject();
    await knex.raw(`INSERT INTO contacts (project_id, email, subscribed, data)
      SELECT ?::uuid, 'reader-' || g || '@example.org', true, '{}'::jsonb FROM generate_series(1, ?::int) g`, [project.id, EMAILS]);
    const ids: string[] = (await knex.raw(`INSERT INTO emails (project_id, contact_id, from_email, to_email, subject, html, status, sent_at, track_opens, track_clicks)
      SELECT c.project_id, c.id, 'news@example.com', c.email, 'News', ?, 'SENT', now(), true, true
      FROM contacts c WHERE c.project_id = ?::uuid ORDER BY c.id RETURNING id`, [EMAIL_HTML, project.id])).rows.map((r: { id: string }) => r.id);
    // The same readers' emails of one campaign: a campaign email's hit also adds to its kept stats (campaign_stats,
    // campaign_hourly_stats, campaign_link_stats: migration 20261203000001), which a transactional one does not.
    const [campaign] = await knex('campaigns').insert({
      project_id: project.id, name: 'Bench news', subject: 'News', body: EMAIL_HTML, from_email: 'news@example.com', audience_type: 'ALL', status: 'SENT',
    }).returning('id');
    const campaignIds: string[] = (await knex.raw(`INSERT INTO emails (project_id, contact_id, campaign_id, from_email, to_email, subject, html, status, sent_at, track_opens, track_clicks)
      SELECT c.project_id, c.id, ?::uuid, 'news@example.com', c.email, 'News', ?, 'SENT', now(), true, true
      FROM contacts c WHERE c.project_id = ?::uuid ORDER BY c.id RETURNING id`, [campaign.id, EMAIL_HTML, project.id])).rows.map((r: { id: string }) => r.id);
    await knex.raw('ANALYZE');

    const secret = Buffer.from(BENCH_SECRET, 'utf8');
    const opens = ids.map((emailId) => `/t/o/${openToken(secret, { projectId: project.id, emailId })}`);
    const clicks = ids.map((emailId, i) => `/t/c/${clickToken(secret, { projectId: project.id, emailId, url: `https://shop.example/orders/${100000 + i}?utm_source=herald` })}`);

    const sink = await startSink();
    sinkRef = sink;
    await prepareEngineSchema(cluster, sink.url);
    const herald = startHeraldChild('herald api', cluster, 'api', { PORT: '0', API_RATE_LIMIT_PER_MINUTE: '1000000000', TRACKING_RATE_PER_ADDRESS: '0' /* one load generator: no per-address limit */ },
      cpuProfileArgs());
    children.push(herald);
    const base = `http://127.0.0.1:${(await herald.ready).port as number}`;

    const results: Measured[] = [];
    results.push((await measure('GET /health', herald, base, ['/health'], 200, cluster)).m);
    const open = await measure('GET /t/o/:token (pixel)', herald, base, opens, 200, cluster);
    results.push(open.m);
    const click = await measure('GET /t/c/:token (redirect)', herald, base, clicks, 302, cluster);
    results.push(click.m);
    const campaignOpens = campaignIds.map((emailId) => `/t/o/${openToken(secret, { projectId: project.id, emailId })}`);
    const campaignClicks = campaignIds.map((emailId, i) => `/t/c/${clickToken(secret, { projectId: project.id, emailId, url: `https://shop.example/sale/${i % 20}?utm_source=herald` })}`);
    const campaignOpen = await measure('GET /t/o/:token (pixel, a campaign\'s email)', herald, base, campaignOpens, 200, cluster);
    results.push(campaignOpen.m);
    const campaignClick = await measure('GET /t/c/:token (redirect, a campaign\'s email)', herald, base, campaignClicks, 302, cluster);
    results.push(campaignClick.m);

    const f = (n: number, d = 0) => n.toFixed(d);
    const health = results[0]!;
    console.log('\n| route | req/s | × /health | p50 ms | p99 ms | p99.9 ms | max ms | answered | other status | errors | CPU ms/req: API | postgres | autocannon | machine busy |');
    console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
    for (const r of results) {
      console.log(`| ${r.name} | ${f(r.rps)} | ${f(r.rps / health.rps, 2)} | ${r.p50} | ${r.p99} | ${r.p999} | ${r.max} | ${r.answered} | ${r.unexpected} | ${r.errors} | ${f(r.cpu.server, 3)} | ${f(r.cpu.postgres, 3)} | ${f(r.cpu.loadgen, 3)} | ${f(r.cpu.machine, 3)} |`);
    }

    // Every answered hit was recorded: its event and its count. Read in one statement, after the hits still in flight
    // when autocannon stopped have had a second to commit.
    await new Promise((r) => setTimeout(r, 1000));
    const { rows: [check] } = await knex.raw(
      `SELECT (SELECT count(*)::int FROM events WHERE project_id = ?::uuid AND name = 'email.opened') AS open_events,
              (SELECT count(*)::int FROM events WHERE project_id = ?::uuid AND name = 'email.clicked') AS click_events,
              sum(opens)::int AS opens, sum(clicks)::int AS clicks, count(first_opened_at)::int AS unique_opens
       FROM emails WHERE project_id = ?::uuid`, [project.id, project.id, project.id]);
    const sums = check as { open_events: number; click_events: number; opens: number; clicks: number; unique_opens: number };
    const [openEvents, clickEvents] = [sums.open_events, sums.click_events];
    // The campaign's kept stats equal its emails' sums and its events.
    const { rows: [kept] } = await knex.raw(
      `SELECT (SELECT sum(opens)::int FROM campaign_stats WHERE project_id = ?::uuid AND campaign_id = ?::uuid) AS opens,
              (SELECT sum(clicks)::int FROM campaign_stats WHERE project_id = ?::uuid AND campaign_id = ?::uuid) AS clicks,
              (SELECT sum(opened)::int FROM campaign_hourly_stats WHERE project_id = ?::uuid AND campaign_id = ?::uuid) AS opened,
              (SELECT sum(clicks)::int FROM campaign_link_stats WHERE project_id = ?::uuid AND campaign_id = ?::uuid) AS link_clicks,
              (SELECT sum(opens)::int FROM emails WHERE project_id = ?::uuid AND campaign_id = ?::uuid) AS email_opens,
              (SELECT sum(clicks)::int FROM emails WHERE project_id = ?::uuid AND campaign_id = ?::uuid) AS email_clicks,
              (SELECT count(*) FILTER (WHERE v.name = 'email.opened')::int FROM events v JOIN emails e ON e.project_id = v.project_id AND e.id = v.email_id
                WHERE e.project_id = ?::uuid AND e.campaign_id = ?::uuid) AS open_events,
              (SELECT count(*) FILTER (WHERE v.name = 'email.clicked')::int FROM events v JOIN emails e ON e.project_id = v.project_id AND e.id = v.email_id
                WHERE e.project_id = ?::uuid AND e.campaign_id = ?::uuid) AS click_events`,
      Array(8).fill([project.id, campaign.id]).flat());
    const keptRight = kept.opens === kept.email_opens && kept.clicks === kept.email_clicks && kept.opened === kept.open_events && kept.link_clicks === kept.click_events;
    console.log(`campaign kept stats: opens ${kept.opens} (its emails' ${kept.email_opens}), clicks ${kept.clicks} (${kept.email_clicks}); by hour ${kept.opened} opened (its events ${kept.open_events}), per link ${kept.link_clicks} clicked (${kept.click_events}): ${keptRight ? 'equal' : 'MISMATCH'}`);
    // Every answered hit counts (hits in flight when autocannon stopped count too); the events are one per email, kind
    // (and link) per tracking window (tracking/record.ts), so at most the counts and at least one per email opened.
    const answeredOpens = open.total + campaignOpen.total;
    const answeredClicks = click.total + campaignClick.total;
    const recorded = keptRight && sums.opens >= answeredOpens && sums.clicks >= answeredClicks && openEvents <= sums.opens && clickEvents <= sums.clicks && openEvents >= sums.unique_opens;
    console.log(`\nchecks: ${answeredOpens} pixels answered, opens summing to ${sums.opens} (${sums.unique_opens} emails opened), ${openEvents} email.opened events; `
      + `${answeredClicks} redirects answered, clicks summing to ${sums.clicks}, ${clickEvents} email.clicked events: ${recorded ? 'every answered hit counted, an event per email and window' : 'MISMATCH'}`);
    const targets = [open.m, click.m, campaignOpen.m, campaignClick.m].map((r) => `${r.name} ${Math.round(r.rps)} req/s ≥ ${TARGET}: ${r.rps >= TARGET && r.unexpected === 0 && r.errors === 0 ? 'met' : 'MISSED'}`);
    console.log(`targets: ${targets.join('; ')}`);
    if (process.env.BENCH_JSON) fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify({ machine: machine(cluster.version), settings: cluster.settings, results }, null, 2));
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await sinkRef?.close();
    await cluster.stop();
  }
});
