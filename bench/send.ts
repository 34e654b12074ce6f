/**
 * POST /v1/send throughput and latency (one recipient per request), side by side with a floor, in one run.
 *
 *   npx tsx bench/send.ts          (npm run bench:send)
 *
 * Starts its own embedded PostgreSQL in a temporary directory, then two child processes on it:
 * - the Herald API exactly as `npm run api` runs it (startHerald, roles api only, embedded engine): a send commits its
 *   rows, then enqueues its delivery workflow with a DBOSClient (rows in DBOS's queue table) and answers;
 * - the floor: a bare Koa app whose handler does one INSERT in a transaction into a scratch table.
 * Then autocannon (in this process) drives each at 32 connections: a warm-up, then the measure.
 * Every request has a distinct recipient (a new contact each time: the common transactional case), and the project
 * starts with 50,000 contacts.
 *
 * No worker runs during the measure: the API never waits for SMTP or for a worker (the answer follows the enqueue), so
 * a worker would only take CPU from the API on this machine; delivery is measured by bench/delivery.ts.
 * BENCH_WITH_WORKER=1 runs one anyway (rate limit lifted, into a loopback SMTP sink), as `npm start` would.
 *
 * Environment: BENCH_DURATION (s, default 20), BENCH_WARMUP (s, default 5), BENCH_CONNECTIONS (default 32),
 * BENCH_CONTACTS (default 50000), BENCH_LOG_LEVEL (Herald's LOG_LEVEL, default info; the log goes to /dev/null),
 * BENCH_PG_STAT=1 (pg_stat_statements: statements per request), BENCH_COUNT_QUERIES=1 (knex statements per request
 * in the API), BENCH_DURABLE=1 (fsync on), BENCH_WITH_WORKER=1, BENCH_ONLY=herald|floor, BENCH_CPU_PROF=1 (V8 CPU
 * profile of the API process into BENCH_PROFILE_DIR, default $TMPDIR/herald-bench-profiles), BENCH_JSON=file.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { startCluster } from './lib/cluster';
import { benchProject, prepareEngineSchema, startHeraldChild } from './lib/herald';
import { cpuMs, machine, machineBusyMs, runBench, spawnChild, type Child } from './lib/proc';
import { startSink, type Sink } from './lib/sink';

const DURATION = Number(process.env.BENCH_DURATION ?? 20);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const ONLY = process.env.BENCH_ONLY;
const WITH_WORKER = process.env.BENCH_WITH_WORKER === '1';
const EXISTING_CONTACTS = Number(process.env.BENCH_CONTACTS ?? 50_000);

const HTML = `<html><body><h1>Hello {{ name }}</h1><p>Your order <b>#{{ order }}</b> has shipped and should arrive within three working days.</p>
<p>You can follow it at any time from your account page. If anything is wrong with it, reply to this email and we will sort it out.</p>
<p>Thank you for shopping with us.</p></body></html>`;

let counter = 0;
function nextBody(): string {
  const i = counter++;
  return JSON.stringify({
    from: 'Bench Shop <orders@example.com>',
    to: `customer-${i}@example.org`,
    subject: 'Your order #{{ order }} has shipped',
    body: HTML,
    data: { name: 'Ada', order: 100000 + i },
  });
}

interface Measured {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
  total: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  cpu: { server: number; postgres: number; loadgen: number; machine: number };
  statements?: { calls: number; meanMs: number; planMs: number; query: string }[];
}

async function drive(url: string, headers: Record<string, string>, seconds: number) {
  return autocannon({
    url,
    method: 'POST',
    connections: CONNECTIONS,
    duration: seconds,
    timeout: 30,
    headers: { 'content-type': 'application/json', ...headers },
    requests: [{ setupRequest: (req) => ({ ...req, body: nextBody() }) }],
  });
}

async function measure(name: string, child: Child, url: string, headers: Record<string, string>, pg: { pid: number; knex: import('knex').Knex; pgStat: boolean }): Promise<{ m: Measured; okTotal: number }> {
  process.stdout.write(`${name}: warm-up ${WARMUP} s … `);
  const warm = await drive(url, headers, WARMUP);
  process.stdout.write(`${Math.round(warm['2xx'] / WARMUP)} req/s; measure ${DURATION} s … `);
  if (pg.pgStat) await pg.knex.raw('SELECT pg_stat_statements_reset()');
  if (process.env.BENCH_COUNT_QUERIES === '1' && name === 'herald') { child.send({ type: 'queries' }); await child.next('queries'); }
  const before = { server: cpuMs(child.pid), postgres: cpuMs(pg.pid, true), loadgen: cpuMs(process.pid), machine: machineBusyMs() };
  const r = await drive(url, headers, DURATION);
  const after = { server: cpuMs(child.pid), postgres: cpuMs(pg.pid, true), loadgen: cpuMs(process.pid), machine: machineBusyMs() };
  const ok = r['2xx'];
  const m: Measured = {
    name,
    rps: ok / r.duration,
    p50: r.latency.p50,
    p99: r.latency.p99,
    p999: r.latency.p99_9,
    max: r.latency.max,
    total: r.requests.total,
    ok,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    // CPU milliseconds per request.
    cpu: {
      server: (after.server - before.server) / ok,
      postgres: (after.postgres - before.postgres) / ok,
      loadgen: (after.loadgen - before.loadgen) / ok,
      machine: (after.machine - before.machine) / ok,
    },
  };
  console.log(`${Math.round(m.rps)} req/s`);
  if (pg.pgStat) {
    const rows = (await pg.knex.raw(
      `SELECT calls, mean_exec_time, mean_plan_time, query FROM pg_stat_statements WHERE calls > ? ORDER BY calls DESC, total_exec_time DESC LIMIT 30`, [Math.floor(ok / 2)],
    )).rows as { calls: number; mean_exec_time: number; mean_plan_time: number; query: string }[];
    m.statements = rows.map((s) => ({ calls: s.calls, meanMs: s.mean_exec_time, planMs: s.mean_plan_time, query: s.query.replace(/\s+/g, ' ').slice(0, 160) }));
  }
  if (process.env.BENCH_COUNT_QUERIES === '1' && name === 'herald') {
    child.send({ type: 'queries' });
    const counts = ((await child.next('queries')).counts as [string, number][]);
    console.log(`  knex statements per request in the API process (${ok} requests):`);
    for (const [sql, n] of counts.slice(0, 25)) console.log(`    ${(n / ok).toFixed(2)}  ${sql}`);
  }
  return { m, okTotal: warm['2xx'] + ok };
}

function report(results: Measured[]): void {
  const f = (n: number, d = 0) => n.toFixed(d);
  console.log('\n| server | req/s | p50 ms | p99 ms | p99.9 ms | max ms | 2xx | non-2xx | errors | CPU ms/req: server | postgres | autocannon | other processes | machine busy |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    console.log(`| ${r.name} | ${f(r.rps)} | ${r.p50} | ${r.p99} | ${r.p999} | ${r.max} | ${r.ok} | ${r.non2xx} | ${r.errors + r.timeouts} | ${f(r.cpu.server, 2)} | ${f(r.cpu.postgres, 2)} | ${f(r.cpu.loadgen, 2)} | ${f(r.cpu.machine - r.cpu.server - r.cpu.postgres - r.cpu.loadgen, 2)} | ${f(r.cpu.machine, 2)} |`);
  }
  for (const r of results) {
    if (!r.statements) continue;
    console.log(`\n${r.name}: statements per request (pg_stat_statements, ${r.ok} requests; mean execution and planning ms):`);
    for (const s of r.statements) console.log(`  ${(s.calls / r.ok).toFixed(2)}  exec ${s.meanMs.toFixed(3)}  plan ${s.planMs.toFixed(3)}  ${s.query}`);
  }
}

runBench('bench:send', 10 * 60_000, async () => {
  const cluster = await startCluster('send');
  const children: Child[] = [];
  let sinkRef: Sink | undefined;
  try {
    console.log(`machine: ${machine(cluster.version)}`);
    console.log(`PostgreSQL settings: ${JSON.stringify(cluster.settings)}`);
    console.log(`load: ${CONNECTIONS} connections, warm-up ${WARMUP} s, measure ${DURATION} s, one distinct new recipient per request, ${EXISTING_CONTACTS} existing contacts\n`);
    const { knex } = cluster;
    const project = await benchProject();
    // An installation in use: the project already has contacts, and the planner has statistics (a table that grew from
    // empty during the run would be planned as tiny: sequential scans that no real database would see).
    await knex.raw(`INSERT INTO contacts (project_id, email, subscribed, data)
      SELECT ?::uuid, 'existing-' || g || '@example.org', g % 2 = 0, jsonb_build_object('plan', 'free')
      FROM generate_series(1, ?::int) g`, [project.id, EXISTING_CONTACTS]);
    await knex.raw('ANALYZE');
    await knex.raw(`CREATE TABLE bench_floor (
      id uuid PRIMARY KEY DEFAULT herald_uuidv7(), to_email text NOT NULL, subject text NOT NULL, html text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now())`);

    const profDir = process.env.BENCH_PROFILE_DIR ?? path.join(os.tmpdir(), 'herald-bench-profiles');
    const nodeArgs = process.env.BENCH_CPU_PROF === '1' ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [];
    // No worker runs during the measure (see the header); one runs once before it, because DBOS creates its schema
    // when a worker launches, not when the API's DBOSClient connects.
    const sink = await startSink();
    sinkRef = sink;
    await prepareEngineSchema(cluster, sink.url);
    const herald = startHeraldChild('herald api', cluster, 'api', {
      PORT: '0',
      API_RATE_LIMIT_PER_MINUTE: '1000000000',
      ...(process.env.BENCH_COUNT_QUERIES === '1' ? { BENCH_COUNT_QUERIES: '1' } : {}),
    }, nodeArgs);
    children.push(herald);
    if (WITH_WORKER) {
      // Optional: a worker delivering (rate limit lifted) into the sink while the API is measured, as `npm start` would.
      children.push(startHeraldChild('herald worker', cluster, 'worker', { SMTP_URL: sink.url, SEND_RATE_PER_SECOND: '100000', EXECUTOR_ID: 'bench-send-worker' }));
      await children[children.length - 1]!.ready;
    }
    const floor = spawnChild('floor', 'bench/lib/floor-child.ts', { DATABASE_URL: cluster.url });
    children.push(floor);
    const heraldPort = (await herald.ready).port as number;
    const floorPort = (await floor.ready).port as number;

    const pg = { pid: cluster.postmasterPid(), knex, pgStat: cluster.pgStat };
    const results: Measured[] = [];
    let heraldOk = 0;
    if (ONLY !== 'herald') {
      results.push((await measure('floor', floor, `http://127.0.0.1:${floorPort}/v1/send`, {}, pg)).m);
    }
    if (ONLY !== 'floor') {
      const { m, okTotal } = await measure('herald', herald, `http://127.0.0.1:${heraldPort}/v1/send`, { authorization: `Bearer ${project.secretKey}` }, pg);
      results.push(m);
      heraldOk = okTotal;
    }
    report(results);

    const floorR = results.find((r) => r.name === 'floor');
    const heraldR = results.find((r) => r.name === 'herald');
    if (heraldR) {
      // Every answered send must have left its email row in the delivery queue (QUEUED, or already on its way).
      const emails = (await knex('emails').count('* as n').first()) as { n: number };
      const queued = (await knex('emails').where('status', 'QUEUED').count('* as n').first()) as { n: number };
      console.log(`\nchecks: ${heraldOk} sends answered 2xx; ${emails.n} email rows, ${queued.n} of them still QUEUED${WITH_WORKER ? `; ${sink.times.length} delivered by the concurrent worker` : ' (no worker ran)'}`);
      const targets = [
        `${Math.round(heraldR.rps)} req/s ≥ 1,500: ${heraldR.rps >= 1500 ? 'met' : 'MISSED'}`,
        ...(floorR ? [`${(heraldR.rps / floorR.rps).toFixed(2)} × floor (${Math.round(floorR.rps)} req/s) ≥ 0.5: ${heraldR.rps >= 0.5 * floorR.rps ? 'met' : 'MISSED'}`] : []),
        `non-2xx ${heraldR.non2xx}, errors ${heraldR.errors}: ${heraldR.non2xx === 0 && heraldR.errors === 0 ? 'met' : 'MISSED'}`,
      ];
      console.log(`targets: ${targets.join('; ')}`);
    }
    if (nodeArgs.length) console.log(`CPU profile of the API process: ${profDir} (written when it exits)`);
    if (process.env.BENCH_JSON) fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify({ machine: machine(cluster.version), settings: cluster.settings, results }, null, 2));
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await sinkRef?.close();
    await cluster.stop();
  }
});
