/**
 * POST /v1/send throughput and latency (one recipient per request), side by side with a floor, in one run.
 *
 *   npx tsx bench/send.ts                              (npm run bench:send)
 *   BENCH_DURABLE=1 BENCH_ROUNDS=3 BENCH_SLICE=2 npx tsx bench/send.ts   (fsync on, as Herald ships: issue 33's bar)
 *
 * Starts its own embedded PostgreSQL in a temporary directory, then two child processes on it:
 * - the Herald API exactly as `npm run api` runs it (startHerald, roles api only, embedded engine): a send commits its
 *   rows (the emails table is the delivery queue) and answers;
 * - the floor: a bare Koa app whose handler does one INSERT in a transaction into a scratch table.
 * Then autocannon (in this process) drives each at 32 connections: a warm-up, then the measure.
 * Every request has a distinct recipient (a new contact each time: the common transactional case), and the project
 * starts with 50,000 contacts.
 *
 * Each measure prints, beside req/s and latency: the CPU per request of each process, the machine's steal and load,
 * and what PostgreSQL did per request: transactions committed, WAL written (bytes, records) and WAL flushes (fsyncs,
 * pg_stat_io) with their time. Both sides share the cluster and its settings; with BENCH_DURABLE=1 both commit durably.
 * The ratios herald ÷ floor (req/s, p50, p99) are printed per round, and their medians over the rounds. A round warms
 * every side up, then measures each for BENCH_DURATION seconds in slices of BENCH_SLICE seconds that alternate between
 * the sides (A B, B A, A B, …): on a machine shared with others, whose load swings from one second to the next, the
 * sides then see the same load (with one slice, the default, a round is the earlier floor-then-herald measure).
 * Percentiles are exact, over every response of the round's slices.
 *
 * No worker runs during the measure: the API never waits for SMTP or for a worker (the answer follows the commit), so
 * a worker would only take CPU from the API on this machine; delivery is measured by bench/delivery.ts. The workers'
 * housekeeping, which the sends' costs depend on (the merge of new contacts' search entries), runs in this process while
 * a Herald side is driven (workersHousekeeping). BENCH_WITH_WORKER=1 runs one anyway (rate limit lifted, into a
 * loopback SMTP sink), as `npm start` would.
 *
 * Environment: BENCH_DURATION (s, default 20), BENCH_WARMUP (s, default 5), BENCH_CONNECTIONS (default 32),
 * BENCH_CONTACTS (default 50000), BENCH_ROUNDS (default 1), BENCH_SLICE (s, default BENCH_DURATION), BENCH_LOG_LEVEL (Herald's LOG_LEVEL, default info; the log
 * goes to /dev/null), BENCH_DURABLE=1 (fsync and synchronous_commit on, PostgreSQL's defaults, as Herald ships them),
 * BENCH_PG_SETTINGS (JSON of server settings for the whole cluster, e.g. {"commit_delay":20,"wal_buffers":"16MB"}),
 * BENCH_VARIANTS (JSON list of Herald API processes measured in turn beside the same floor, default
 * [{"name":"herald"}]; each may have `tree` (another checkout, e.g. the code before a change, on the same database),
 * `env` (more environment), `pg` (settings for its connections only, e.g. {"commit_delay":20}) and `idempotencyKeys`
 * (true: every request carries an Idempotency-Key of its own, a transaction per request: api/idempotency.ts)),
 * BENCH_WAL_RECORDS=1 (the WAL of each round's measure by record type, pg_walinspect: which indexes and tables write it),
 * BENCH_WAITS=1 (samples pg_stat_activity every 10 ms during each measure: what the side's backends wait on),
 * BENCH_PG_STAT=1 (pg_stat_statements: statements per request), BENCH_COUNT_QUERIES=1 (knex statements per request
 * in the API), BENCH_WITH_WORKER=1, BENCH_ONLY=herald|floor, BENCH_CPU_PROF=1 (V8 CPU profile of the API process into
 * BENCH_PROFILE_DIR, default $TMPDIR/herald-bench-profiles), BENCH_JSON=file.
 */
import fs from 'node:fs';
import os from 'node:os';
import autocannon from 'autocannon';
import type { Knex } from 'knex';
import pg from 'pg';
import { startCluster } from './lib/cluster';
import { benchProject, prepareEngineSchema, startHeraldChild } from './lib/herald';
import { cpuProfileArgs, PROFILE_DIR, cpuMs, machine, machineBusyMs, runBench, sleep, spawnChild, stealSince, type Child } from './lib/proc';
import { startSink, type Sink } from './lib/sink';
import pino from 'pino';
import { startHousekeeping } from '../worker/housekeeping';

const DURATION = Number(process.env.BENCH_DURATION ?? 20);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
/** Seconds of one slice of a measure (default: the whole measure, one slice). */
const SLICE = Number(process.env.BENCH_SLICE ?? DURATION);
const ONLY = process.env.BENCH_ONLY;
const WITH_WORKER = process.env.BENCH_WITH_WORKER === '1';
const WAITS = process.env.BENCH_WAITS === '1';
const WAL_RECORDS = process.env.BENCH_WAL_RECORDS === '1';
const EXISTING_CONTACTS = Number(process.env.BENCH_CONTACTS ?? 50_000);

interface Variant {
  name: string;
  /** Another working tree whose Herald is measured (the code before a change). */
  tree?: string;
  env?: Record<string, string>;
  /** Settings of this process's connections only (libpq `options`). */
  pg?: Record<string, string | number>;
  /** Every request carries an Idempotency-Key of its own (api/idempotency.ts: a transaction per request). */
  idempotencyKeys?: boolean;
}
const VARIANTS: Variant[] = process.env.BENCH_VARIANTS ? JSON.parse(process.env.BENCH_VARIANTS) as Variant[] : [{ name: 'herald' }];

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

/** What PostgreSQL did, cumulatively: read before and after a measure. */
interface PgCounters {
  /** Transactions committed in the database (read-only ones too: they flush no WAL). */
  commits: number;
  walBytes: number;
  walRecords: number;
  /** Full-page images (the first change of a page after a checkpoint) and writes forced by full WAL buffers. */
  walFpi: number;
  walBuffersFull: number;
  /** WAL writes and flushes (pg_stat_io, object wal), by every process (backends at commit, the WAL writer). */
  walWrites: number;
  walFsyncs: number;
  walFsyncMs: number;
}

async function pgCounters(knex: Knex): Promise<PgCounters> {
  const { rows: [r] } = await knex.raw(`SELECT
      (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::float AS commits,
      pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float AS "walBytes",
      (SELECT wal_records FROM pg_stat_wal)::float AS "walRecords",
      (SELECT wal_fpi FROM pg_stat_wal)::float AS "walFpi",
      (SELECT wal_buffers_full FROM pg_stat_wal)::float AS "walBuffersFull",
      (SELECT coalesce(sum(writes), 0) FROM pg_stat_io WHERE object = 'wal')::float AS "walWrites",
      (SELECT coalesce(sum(fsyncs), 0) FROM pg_stat_io WHERE object = 'wal')::float AS "walFsyncs",
      (SELECT coalesce(sum(fsync_time), 0) FROM pg_stat_io WHERE object = 'wal')::float AS "walFsyncMs"`);
  return r as PgCounters;
}

/**
 * Samples pg_stat_activity every 10 ms on a connection of its own, for the backends of one application_name: how many
 * are busy on average, and what they wait on (`ClientRead`: idle in the pool, waiting for Node; `WALSync`: a commit's
 * flush; no event: on a CPU).
 */
function sampleWaits(url: string, applicationName: string): { stop(): Promise<{ samples: number; states: [string, number][] }> } {
  const client = new pg.Client({ connectionString: url, application_name: 'herald-bench-sampler' });
  const states = new Map<string, number>();
  let samples = 0;
  let running = true;
  const loop = (async () => {
    await client.connect();
    while (running) {
      const { rows } = await client.query(`SELECT state, wait_event_type, wait_event FROM pg_stat_activity WHERE application_name = $1`, [applicationName]);
      samples++;
      for (const r of rows as { state: string; wait_event_type: string | null; wait_event: string | null }[]) {
        const k = r.state === 'active' ? `active ${r.wait_event ? `${r.wait_event_type}:${r.wait_event}` : '(CPU)'}` : `${r.state}${r.wait_event ? ` ${r.wait_event}` : ''}`;
        states.set(k, (states.get(k) ?? 0) + 1);
      }
      await sleep(10);
    }
    await client.end();
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { samples, states: [...states].sort((a, b) => b[1] - a[1]) };
    },
  };
}

interface Measured {
  name: string;
  round: number;
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
  /** Share of the machine's CPU time the hypervisor gave to other guests during the measure, and the load average after. */
  steal: number;
  load1: number;
  /** Per request. */
  pg: PgCounters;
  waits?: { samples: number; states: [string, number][] };
  statements?: { calls: number; plans: number; meanMs: number; planMs: number; walBytes: number; query: string }[];
}

/** One load run of autocannon; with `latencies`, every response's time (ms) is pushed there (exact percentiles over slices). */
async function drive(url: string, headers: Record<string, string>, seconds: number, idempotencyKeys = false, latencies?: number[]) {
  const run = autocannon({
    url,
    method: 'POST',
    connections: CONNECTIONS,
    duration: seconds,
    timeout: 30,
    headers: { 'content-type': 'application/json', ...headers },
    requests: [{
      setupRequest: (req) => {
        const body = nextBody();
        return { ...req, body, ...(idempotencyKeys ? { headers: { ...req.headers, 'idempotency-key': `bench-${counter}` } } : {}) };
      },
    }],
  });
  if (latencies) (run as unknown as NodeJS.EventEmitter).on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => { latencies.push(ms); });
  return run;
}

interface Side {
  name: string;
  child: Child;
  url: string;
  headers: Record<string, string>;
  applicationName: string;
  counted: boolean;
  idempotencyKeys?: boolean;
}

interface PgSide { pid: number; knex: Knex; url: string; pgStat: boolean }

/** A side's measure of one round, summed over its slices. */
interface Tally {
  seconds: number;
  ok: number;
  total: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  latencies: number[];
  cpu: { server: number; postgres: number; loadgen: number; machine: number };
  /** Steal-weighted seconds (share × duration), for the mean share. */
  stealSeconds: number;
  pg: PgCounters;
  waits: { samples: number; states: Map<string, number> };
}

const newTally = (): Tally => ({
  seconds: 0, ok: 0, total: 0, non2xx: 0, errors: 0, timeouts: 0, latencies: [],
  cpu: { server: 0, postgres: 0, loadgen: 0, machine: 0 }, stealSeconds: 0,
  pg: { commits: 0, walBytes: 0, walRecords: 0, walFpi: 0, walBuffersFull: 0, walWrites: 0, walFsyncs: 0, walFsyncMs: 0 },
  waits: { samples: 0, states: new Map() },
});

const cpuNow = (side: Side, pgs: PgSide) => ({ server: cpuMs(side.child.pid), postgres: cpuMs(pgs.pid, true), loadgen: cpuMs(process.pid), machine: machineBusyMs() });

/**
 * What Herald's workers do in the background of every deployment and the sends' costs depend on: merging the new
 * contacts' search entries (worker/housekeeping.ts, every second; db/searchIndexes.ts). No worker runs here (see the
 * header), so the bench runs the workers' housekeeping itself while a Herald side is driven, and only then: its
 * statements count in that side's PostgreSQL CPU and share the machine with its requests.
 */
function workersHousekeeping(side: Side, pgs: PgSide): { stop(): Promise<void> } {
  if (!side.counted) return { stop: async () => undefined };
  const h = startHousekeeping({ knex: pgs.knex, log: pino({ level: 'silent' }), eventWindowMs: 60_000, intervalMs: 3_600_000 });
  return { stop: () => h.stop() };
}

/**
 * One slice of a side's measure, added to its tally. The backends report their statistics within a second of going
 * idle: a pause after the slice, so that each slice counts its own WAL flushes.
 */
async function slice(side: Side, seconds: number, pgs: PgSide, t: Tally): Promise<void> {
  const pg0 = await pgCounters(pgs.knex);
  const steal0 = stealSince();
  const sampler = WAITS ? sampleWaits(pgs.url, side.applicationName) : undefined;
  const before = cpuNow(side, pgs);
  const housekeeping = workersHousekeeping(side, pgs);
  const r = await drive(side.url, side.headers, seconds, side.idempotencyKeys, t.latencies);
  await housekeeping.stop();
  const after = cpuNow(side, pgs);
  t.stealSeconds += stealSince(steal0.at).share * r.duration;
  const waits = await sampler?.stop();
  await sleep(1200);
  const pg1 = await pgCounters(pgs.knex);
  t.seconds += r.duration;
  t.ok += r['2xx'];
  t.total += r.requests.total;
  t.non2xx += r.non2xx;
  t.errors += r.errors;
  t.timeouts += r.timeouts;
  for (const k of Object.keys(t.cpu) as (keyof Tally['cpu'])[]) t.cpu[k] += after[k] - before[k];
  for (const k of Object.keys(t.pg) as (keyof PgCounters)[]) t.pg[k] += pg1[k] - pg0[k];
  if (waits) {
    t.waits.samples += waits.samples;
    for (const [k, n] of waits.states) t.waits.states.set(k, (t.waits.states.get(k) ?? 0) + n);
  }
}

const percentile = (sorted: number[], q: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]! : NaN);

function measured(name: string, round: number, t: Tally): Measured {
  const ok = t.ok;
  const sorted = Float64Array.from(t.latencies).sort();
  const lat = [...sorted];
  const per = (n: number) => n / ok;
  return {
    name,
    round,
    rps: ok / t.seconds,
    p50: Math.round(percentile(lat, 0.5) * 10) / 10,
    p99: Math.round(percentile(lat, 0.99) * 10) / 10,
    p999: Math.round(percentile(lat, 0.999) * 10) / 10,
    max: Math.round((lat[lat.length - 1] ?? NaN) * 10) / 10,
    total: t.total,
    ok,
    non2xx: t.non2xx,
    errors: t.errors,
    timeouts: t.timeouts,
    // CPU milliseconds per request.
    cpu: { server: per(t.cpu.server), postgres: per(t.cpu.postgres), loadgen: per(t.cpu.loadgen), machine: per(t.cpu.machine) },
    steal: t.stealSeconds / t.seconds,
    load1: os.loadavg()[0]!,
    pg: Object.fromEntries(Object.entries(t.pg).map(([k, v]) => [k, per(v)])) as unknown as PgCounters,
    ...(WAITS ? { waits: { samples: t.waits.samples, states: [...t.waits.states].sort((a, b) => b[1] - a[1]) } } : {}),
  };
}

/**
 * One round: each side warmed up, then measured for DURATION seconds in slices of SLICE seconds that alternate between
 * the sides (A B, then B A, …), so that a machine whose load swings from second to second weighs on every side alike.
 */
async function measureRound(sides: Side[], round: number, pgs: PgSide): Promise<{ results: Measured[]; okBySide: Map<string, number> }> {
  const okBySide = new Map<string, number>();
  for (const side of round % 2 ? sides : [...sides].reverse()) {
    const housekeeping = workersHousekeeping(side, pgs);
    const warm = await drive(side.url, side.headers, WARMUP, side.idempotencyKeys);
    await housekeeping.stop();
    okBySide.set(side.name, warm['2xx']);
    console.log(`round ${round}, ${side.name}: warm-up ${WARMUP} s, ${Math.round(warm['2xx'] / WARMUP)} req/s`);
  }
  await sleep(1200);
  if (pgs.pgStat) await pgs.knex.raw('SELECT pg_stat_statements_reset()');
  for (const side of sides) if (process.env.BENCH_COUNT_QUERIES === '1' && side.counted) { side.child.send({ type: 'queries' }); await side.child.next('queries'); }
  const tallies = new Map(sides.map((s) => [s.name, newTally()]));
  const slices = Math.max(1, Math.round(DURATION / SLICE));
  const lsn0 = WAL_RECORDS ? (await pgs.knex.raw('SELECT pg_current_wal_lsn() AS l')).rows[0].l : null;
  for (let i = 0; i < slices; i++) {
    for (const side of (round + i) % 2 ? sides : [...sides].reverse()) await slice(side, DURATION / slices, pgs, tallies.get(side.name)!);
  }
  const results = sides.map((s) => measured(s.name, round, tallies.get(s.name)!));
  if (lsn0) {
    await pgs.knex.raw('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
    const ok = results.reduce((n, m) => n + m.ok, 0);
    const rows = (await pgs.knex.raw(`SELECT "resource_manager/record_type" AS t, count, combined_size FROM pg_get_wal_stats(?, pg_current_wal_lsn(), true) WHERE count > 0 ORDER BY combined_size DESC LIMIT 15`, [lsn0])).rows as { t: string; count: number; combined_size: number }[];
    console.log(`round ${round}: WAL by record type per request, every side of the round (pg_walinspect; meaningful with BENCH_ONLY):`);
    for (const r of rows) console.log(`  ${(r.count / ok).toFixed(3)} records  ${(r.combined_size / ok).toFixed(0).padStart(5)} bytes  ${r.t}`);
  }
  for (const m of results) {
    okBySide.set(m.name, okBySide.get(m.name)! + m.ok);
    console.log(`round ${round}, ${m.name}: ${Math.round(m.rps)} req/s, p50 ${m.p50} ms, p99 ${m.p99} ms, steal ${(m.steal * 100).toFixed(1)} % (${slices} slice(s) of ${DURATION / slices} s)`);
  }
  if (pgs.pgStat && results.length) {
    // Over the round's slices of every side: meaningful with one Herald side (BENCH_ONLY=herald, one variant).
    const ok = results.reduce((n, m) => n + m.ok, 0);
    const rows = (await pgs.knex.raw(
      `SELECT calls, plans, mean_exec_time, mean_plan_time, wal_bytes::float / calls AS wal_bytes, query FROM pg_stat_statements WHERE calls > ? ORDER BY calls DESC, total_exec_time DESC LIMIT 30`, [Math.floor(ok / 100)],
    )).rows as { calls: number; plans: number; mean_exec_time: number; mean_plan_time: number; wal_bytes: number; query: string }[];
    results[results.length - 1]!.statements = rows.map((s) => ({ calls: s.calls, plans: s.plans, meanMs: s.mean_exec_time, planMs: s.mean_plan_time, walBytes: s.wal_bytes, query: s.query.replace(/\s+/g, ' ').slice(0, 160) }));
  }
  for (const side of sides) {
    if (process.env.BENCH_COUNT_QUERIES !== '1' || !side.counted) continue;
    const ok = results.find((m) => m.name === side.name)!.ok;
    side.child.send({ type: 'queries' });
    const counts = ((await side.child.next('queries')).counts as [string, number][]);
    console.log(`  ${side.name}: knex statements per request in the API process (${ok} requests):`);
    for (const [sql, n] of counts.slice(0, 25)) console.log(`    ${(n / ok).toFixed(2)}  ${sql}`);
  }
  return { results, okBySide };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

function report(results: Measured[], durable: boolean): void {
  const f = (n: number, d = 0) => n.toFixed(d);
  console.log('\n| round | server | req/s | p50 ms | p99 ms | p99.9 ms | max ms | 2xx | non-2xx | errors | CPU ms/req: server | postgres | autocannon | other processes | machine busy | steal | load (1 min) |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    console.log(`| ${r.round} | ${r.name} | ${f(r.rps)} | ${r.p50} | ${r.p99} | ${r.p999} | ${r.max} | ${r.ok} | ${r.non2xx} | ${r.errors + r.timeouts} | ${f(r.cpu.server, 2)} | ${f(r.cpu.postgres, 2)} | ${f(r.cpu.loadgen, 2)} | ${f(r.cpu.machine - r.cpu.server - r.cpu.postgres - r.cpu.loadgen, 2)} | ${f(r.cpu.machine, 2)} | ${f(r.steal * 100, 1)} % | ${f(r.load1, 2)} |`);
  }
  console.log('\nPostgreSQL per request (commits include read-only transactions, which flush nothing; WAL flushes are all processes\'):');
  console.log('| round | server | commits | WAL records | full-page images | WAL bytes | WAL writes | WAL buffers full | WAL flushes | flush ms |');
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    console.log(`| ${r.round} | ${r.name} | ${f(r.pg.commits, 3)} | ${f(r.pg.walRecords, 2)} | ${f(r.pg.walFpi, 3)} | ${f(r.pg.walBytes)} | ${f(r.pg.walWrites, 3)} | ${f(r.pg.walBuffersFull, 3)} | ${f(r.pg.walFsyncs, 3)} | ${f(r.pg.walFsyncMs, 4)} |`);
  }
  for (const r of results) {
    if (!r.waits) continue;
    const { samples, states } = r.waits;
    console.log(`\nround ${r.round}, ${r.name}: its backends, on average over ${samples} samples of pg_stat_activity:`);
    for (const [k, n] of states) console.log(`  ${(n / samples).toFixed(2)}  ${k}`);
  }
  for (const r of results) {
    if (!r.statements) continue;
    console.log(`\nround ${r.round}, ${r.name}: statements per request (pg_stat_statements, ${r.ok} requests; mean execution ms, planning ms per planning and plannings per call, WAL bytes per call):`);
    for (const s of r.statements) console.log(`  ${(s.calls / r.ok).toFixed(2)}  exec ${s.meanMs.toFixed(3)}  plan ${s.planMs.toFixed(3)} × ${(s.plans / s.calls).toFixed(2)}  WAL ${Math.round(s.walBytes)}  ${s.query}`);
  }
  const floors = results.filter((r) => r.name === 'floor');
  if (!floors.length) return;
  console.log(`\nRatios to the floor of the same round (${durable ? 'fsync on' : 'fsync OFF'}):`);
  console.log('| server | round | req/s ÷ floor | p50 ÷ floor | p99 ÷ floor |');
  console.log('|---|---|---|---|---|');
  const byName = new Map<string, { rps: number[]; p50: number[]; p99: number[] }>();
  for (const r of results) {
    if (r.name === 'floor') continue;
    const floor = floors.find((x) => x.round === r.round);
    if (!floor) continue;
    const q = { rps: r.rps / floor.rps, p50: r.p50 / floor.p50, p99: r.p99 / floor.p99 };
    console.log(`| ${r.name} | ${r.round} | ${f(q.rps, 2)} | ${f(q.p50, 2)} | ${f(q.p99, 2)} |`);
    const acc = byName.get(r.name) ?? { rps: [], p50: [], p99: [] };
    acc.rps.push(q.rps); acc.p50.push(q.p50); acc.p99.push(q.p99);
    byName.set(r.name, acc);
  }
  for (const [name, acc] of byName) {
    const rps = median(acc.rps);
    const p99 = median(acc.p99);
    console.log(`| **${name}, median of ${acc.rps.length}** | | **${f(rps, 2)}** | **${f(median(acc.p50), 2)}** | **${f(p99, 2)}** |`);
    if (durable) console.log(`  issue 33's bar, fsync on: req/s ≥ 0.95 × floor: ${rps >= 0.95 ? 'met' : 'MISSED'}; p99 ≤ 1.2 × floor's: ${p99 <= 1.2 ? 'met' : 'MISSED'}`);
  }
}

/**
 * The cluster's URL for one Herald process: its own application_name (BENCH_WAITS tells its backends from the other
 * variants'; pg lets the URL's win over Herald's own), and settings for its connections only (libpq `options`).
 */
function urlWith(url: string, applicationName: string, settings: Record<string, string | number> | undefined): string {
  const u = new URL(url);
  u.searchParams.set('application_name', applicationName);
  if (settings && Object.keys(settings).length) u.searchParams.set('options', Object.entries(settings).map(([k, v]) => `-c ${k}=${v}`).join(' '));
  return u.toString();
}

runBench('bench:send', 30 * 60_000, async () => {
  const durable = process.env.BENCH_DURABLE === '1';
  // track_wal_io_timing: the time of each WAL flush in pg_stat_io (two clock reads a flush).
  const cluster = await startCluster('send', { track_wal_io_timing: 'on', ...(process.env.BENCH_PG_SETTINGS ? JSON.parse(process.env.BENCH_PG_SETTINGS) as Record<string, string | number> : {}) });
  const children: Child[] = [];
  let sinkRef: Sink | undefined;
  try {
    console.log(`machine: ${machine(cluster.version)}; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
    console.log(`PostgreSQL settings: ${JSON.stringify(cluster.settings)} (${durable ? 'fsync on: durable commits, as Herald ships' : 'fsync OFF'})`);
    console.log(`load: ${CONNECTIONS} connections, warm-up ${WARMUP} s, measure ${DURATION} s, ${ROUNDS} round(s), one distinct new recipient per request, ${EXISTING_CONTACTS} existing contacts`);
    console.log(`Herald variants: ${JSON.stringify(VARIANTS)}\n`);
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

    const nodeArgs = cpuProfileArgs();
    // No worker runs during the measure (see the header); one runs once before it, because DBOS creates its schema
    // when a worker launches, not when the API's DBOSClient connects.
    const sink = await startSink();
    sinkRef = sink;
    await prepareEngineSchema(cluster, sink.url);
    const sides: Side[] = [];
    if (ONLY !== 'floor') {
      for (const [i, v] of VARIANTS.entries()) {
        const applicationName = `herald-bench-${i}`;
        const child = startHeraldChild(`herald api (${v.name})`, cluster, 'api', {
          PORT: '0',
          API_RATE_LIMIT_PER_MINUTE: '1000000000',
          DATABASE_URL: urlWith(cluster.url, applicationName, v.pg),
          ...(process.env.BENCH_COUNT_QUERIES === '1' ? { BENCH_COUNT_QUERIES: '1' } : {}),
          ...v.env,
        }, nodeArgs, v.tree);
        children.push(child);
        const port = (await child.ready).port as number;
        sides.push({ name: v.name, child, url: `http://127.0.0.1:${port}/v1/send`, headers: { authorization: `Bearer ${project.secretKey}` }, applicationName, counted: true, idempotencyKeys: v.idempotencyKeys });
      }
    }
    if (WITH_WORKER) {
      // Optional: a worker delivering (rate limit lifted) into the sink while the API is measured, as `npm start` would.
      children.push(startHeraldChild('herald worker', cluster, 'worker', { SMTP_URL: sink.url, SEND_RATE_PER_SECOND: '100000', EXECUTOR_ID: 'bench-send-worker' }));
      await children[children.length - 1]!.ready;
    }
    if (ONLY !== 'herald') {
      const floor = spawnChild('floor', 'bench/lib/floor-child.ts', { DATABASE_URL: cluster.url });
      children.push(floor);
      const port = (await floor.ready).port as number;
      sides.unshift({ name: 'floor', child: floor, url: `http://127.0.0.1:${port}/v1/send`, headers: {}, applicationName: 'herald-bench-floor', counted: false });
    }

    const pgs: PgSide = { pid: cluster.postmasterPid(), knex, url: cluster.url, pgStat: cluster.pgStat };
    const results: Measured[] = [];
    let heraldOk = 0;
    const steal0 = stealSince();
    for (let round = 1; round <= ROUNDS; round++) {
      const r = await measureRound(sides, round, pgs);
      results.push(...r.results);
      for (const [name, ok] of r.okBySide) if (name !== 'floor') heraldOk += ok;
    }
    console.log(`\nsteal over all the measures: ${(stealSince(steal0.at).share * 100).toFixed(1)} % of the machine's CPU time; load average now ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
    report(results, durable);

    if (heraldOk) {
      // Every answered send must have left its email row in the delivery queue (QUEUED, or already on its way).
      const emails = (await knex('emails').count('* as n').first()) as { n: number };
      const queued = (await knex('emails').where('status', 'QUEUED').count('* as n').first()) as { n: number };
      console.log(`\nchecks: ${heraldOk} sends answered 2xx; ${emails.n} email rows, ${queued.n} of them still QUEUED${WITH_WORKER ? `; ${sink.times.length} delivered by the concurrent worker` : ' (no worker ran)'}: ${emails.n >= heraldOk ? 'every answered send has its row' : 'ROWS MISSING'}`);
      const heralds = results.filter((r) => r.name !== 'floor');
      const bad = heralds.filter((r) => r.non2xx || r.errors || r.timeouts);
      console.log(`non-2xx and errors: ${bad.length ? `IN ${bad.map((r) => `${r.name} round ${r.round}`).join(', ')}` : 'none'}`);
    }
    if (nodeArgs.length) console.log(`CPU profile of the API process: ${PROFILE_DIR} (written when it exits)`);
    if (process.env.BENCH_JSON) fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify({ machine: machine(cluster.version), settings: cluster.settings, variants: VARIANTS, results }, null, 2));
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await sinkRef?.close();
    await cluster.stop();
  }
});
