/**
 * Past one machine, the numbers that can be checked on one: Herald with 4 worker processes against PostgreSQL directly
 * and through PgBouncer in transaction mode, in the same run, on the same cluster; and, per email, what the scaling
 * arithmetic of docs/scaling.md takes as its inputs.
 *
 *   npx tsx bench/pgbouncer.ts      (npm run bench:pgbouncer)
 *
 * Starts its own embedded PostgreSQL (durable as Herald ships it: fsync, synchronous_commit and full_page_writes on,
 * since WAL volume is one of the inputs; BENCH_DURABLE=0 turns them off), pg_stat_statements and pg_walinspect, a
 * loopback SMTP sink, and PgBouncer (Debian's package, installed when missing; bench/lib/pgbouncer.ts) in transaction
 * mode with a pool of BENCH_POOL_SIZE server connections. Then, for each mode (`direct`: DATABASE_URL is PostgreSQL;
 * `pgbouncer`: DATABASE_URL is PgBouncer, DATABASE_SESSION_URL is PostgreSQL, DATABASE_PREPARED_STATEMENTS=false),
 * one API process (as `npm run api`) and BENCH_WORKERS worker processes (as `npm run worker`: --max-old-space-size=160,
 * MALLOC_ARENA_MAX=2; rate lifted) in three phases:
 * 1. send: POST /v1/send at 32 connections for BENCH_SECONDS, no worker running: req/s, p50/p99, and per email the
 *    WAL bytes (pg_current_wal_lsn before and after; records and full-page images from pg_walinspect), write
 *    transactions (xids assigned), statements (pg_stat_statements), CPU (API, PostgreSQL, PgBouncer);
 * 2. delivery: the workers start and drain what phase 1 queued into the sink; emails/s from the moment all are ready,
 *    and the same per-email figures;
 * 3. send while delivering: POST /v1/send again with the workers delivering what arrives: req/s, p99, emails/s.
 * First, what transaction pooling does to each session feature Herald uses, tried through PgBouncer and printed.
 * Throughout, the server connections are sampled every 250 ms (pg_stat_activity; PgBouncer's SHOW POOLS and SHOW
 * SERVERS): peak client backends, how many came through PgBouncer, and how long a client waited for one.
 * Per mode: rows inserted and updated per table (pg_stat_user_tables) and bytes per table and index per 1,000 emails.
 *
 * Environment: BENCH_WORKERS (default 4), BENCH_SECONDS (default 15), BENCH_POOL_SIZE (PgBouncer's default_pool_size,
 * default 20), BENCH_ROUNDS (default 1: direct then pgbouncer; 2: direct, pgbouncer, pgbouncer, direct),
 * BENCH_MODES (default direct,pgbouncer; direct-unnamed: PostgreSQL directly with DATABASE_PREPARED_STATEMENTS=false,
 * which tells what the pooler's hop costs from what planning every statement costs), BENCH_ENGINE (embedded, the default, or temporal: a Temporal dev server on this
 * machine, as bench/temporal.ts starts it; its workers hold no DBOS connections), BENCH_DURABLE=0, BENCH_LOG_LEVEL.
 *
 * Before each phase a CHECKPOINT: the phase's WAL then holds the full-page images of every page it touches first (an
 * upper bound for a phase this short; the records alone are the lower bound), printed apart.
 */
import autocannon from 'autocannon';
import pg from 'pg';
import { startCluster, type BenchCluster } from './lib/cluster';
import { benchProject, EMAIL_HTML, prepareEngineSchema, startHeraldChild } from './lib/herald';
import { probeTransactionPooling, startPgBouncer, type Bouncer } from './lib/pgbouncer';
import { cpuMs, machine, machineBusyMs, runBench, sleep, stealSince, type Child } from './lib/proc';
import { startSink } from './lib/sink';
import { startDevServer, type DevServer } from '../scripts/temporalDevServer';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ensureTemporal } = require('../scripts/temporal.js') as { ensureTemporal(): string };

process.env.BENCH_DURABLE ??= '1';
if (process.env.BENCH_DURABLE === '0') delete process.env.BENCH_DURABLE;
process.env.BENCH_PG_STAT ??= '1';

const WORKERS = Number(process.env.BENCH_WORKERS ?? 4);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
const POOL_SIZE = Number(process.env.BENCH_POOL_SIZE ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
const MODES = (process.env.BENCH_MODES ?? 'direct,pgbouncer').split(',') as Mode[];
const ENGINE = process.env.BENCH_ENGINE === 'temporal' ? 'temporal' : 'embedded';
const CONNECTIONS = 32;
const WORKER_ARGS = ['--max-old-space-size=160'];
/** direct-unnamed: PostgreSQL directly, with DATABASE_PREPARED_STATEMENTS=false, to tell the pooler's cost from the planning's. */
type Mode = 'direct' | 'direct-unnamed' | 'pgbouncer';

/** The tables whose growth the arithmetic uses, and every index of the first two. */
const TABLES = ['emails', 'events', 'contacts', 'event_names', 'webhook_messages', 'rate_limits', 'delivery_pace', 'workers'];

interface DbSnap { lsn: string; nextXid: number; statements: number; sizes: Map<string, number> }
interface CpuSnap { api: number; workers: number; postgres: number; bouncer: number; bench: number; machine: number; steal: number[] }
interface PhaseResult {
  mode: Mode;
  phase: 'send' | 'delivery' | 'send while delivering';
  emails: number;
  seconds: number;
  reqPerSecond?: number;
  p50?: number;
  p99?: number;
  non2xx?: number;
  emailsPerSecond?: number;
  walBytes: number;
  walRecordBytes: number;
  walFpiBytes: number;
  xids: number;
  statements: number;
  cpu: { api: number; workers: number; postgres: number; bouncer: number; bench: number; machine: number };
  steal: number;
  conns: Peak;
}
interface Peak { backends: number; viaBouncer: number; bouncerClients: number; bouncerWaiting: number; maxWaitMs: number; byName: Map<string, number> }

const f = (n: number, d = 0) => (Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d }) : '—');

/** Samples the server connections every 250 ms until stopped; `take()` returns the peaks since the last take. */
function connectionSampler(adminUrl: string, bouncer: () => Bouncer | undefined) {
  const client = new pg.Client({ connectionString: adminUrl, application_name: 'bench-sampler' });
  let peak: Peak = fresh();
  let stopped = false;
  function fresh(): Peak { return { backends: 0, viaBouncer: 0, bouncerClients: 0, bouncerWaiting: 0, maxWaitMs: 0, byName: new Map() }; }
  const loop = (async () => {
    await client.connect();
    while (!stopped) {
      const rows = (await client.query(`SELECT coalesce(nullif(application_name, ''), '(none)') AS name, count(*)::int AS n FROM pg_stat_activity
        WHERE backend_type = 'client backend' AND datname = 'herald' AND application_name NOT IN ('herald-bench', 'bench-sampler') GROUP BY 1`)).rows as { name: string; n: number }[];
      const total = rows.reduce((s, r) => s + r.n, 0);
      peak.backends = Math.max(peak.backends, total);
      for (const r of rows) peak.byName.set(r.name, Math.max(peak.byName.get(r.name) ?? 0, r.n));
      const b = bouncer();
      if (b) {
        const servers = (await b.admin('SHOW SERVERS')).filter((s) => s.database === 'herald').length;
        const pools = (await b.admin('SHOW POOLS')).filter((p) => p.database === 'herald');
        const sum = (k: string) => pools.reduce((s, p) => s + Number(p[k] ?? 0), 0);
        peak.viaBouncer = Math.max(peak.viaBouncer, servers);
        peak.bouncerClients = Math.max(peak.bouncerClients, sum('cl_active') + sum('cl_waiting') + sum('cl_idle'));
        peak.bouncerWaiting = Math.max(peak.bouncerWaiting, sum('cl_waiting'));
        peak.maxWaitMs = Math.max(peak.maxWaitMs, ...pools.map((p) => Number(p.maxwait ?? 0) * 1000 + Number(p.maxwait_us ?? 0) / 1000));
      }
      await sleep(250);
    }
    await client.end();
  })();
  return {
    take(): Peak { const p = peak; peak = fresh(); return p; },
    async stop() { stopped = true; await loop.catch(() => undefined); },
  };
}

async function dbSnap(cluster: BenchCluster): Promise<DbSnap> {
  const { knex } = cluster;
  const row = (await knex.raw('SELECT pg_current_wal_lsn()::text AS lsn, pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS next')).rows[0] as { lsn: string; next: number };
  const statements = Number((await knex.raw(`SELECT coalesce(sum(calls), 0)::bigint AS n FROM pg_stat_statements
    WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'herald') AND query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE '%pg_current_wal_lsn%'
      AND query NOT LIKE '%pg_total_relation_size%' AND query NOT LIKE '%pg_stat_user_tables%'`)).rows[0].n);
  const sizes = new Map<string, number>();
  const rels = (await knex.raw(`SELECT c.relname AS name, pg_relation_size(c.oid) AS heap, pg_total_relation_size(c.oid) AS total FROM pg_class c
    WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace AND c.relname = ANY(?)`, [TABLES])).rows as { name: string; heap: number; total: number }[];
  for (const r of rels) { sizes.set(`${r.name} (all)`, Number(r.total)); sizes.set(`${r.name} (heap)`, Number(r.heap)); }
  const idx = (await knex.raw(`SELECT i.indexrelid::regclass::text AS name, pg_relation_size(i.indexrelid) AS size FROM pg_index i
    WHERE i.indrelid IN ('emails'::regclass, 'events'::regclass, 'contacts'::regclass)`)).rows as { name: string; size: number }[];
  for (const r of idx) sizes.set(`  index ${r.name}`, Number(r.size));
  return { lsn: row.lsn, nextXid: Number(row.next), statements, sizes };
}

async function walBetween(cluster: BenchCluster, a: DbSnap, b: DbSnap) {
  const total = Number((await cluster.knex.raw('SELECT pg_wal_lsn_diff(?::pg_lsn, ?::pg_lsn)::bigint AS n', [b.lsn, a.lsn])).rows[0].n);
  const stats = (await cluster.knex.raw('SELECT coalesce(sum(record_size), 0)::bigint AS rec, coalesce(sum(fpi_size), 0)::bigint AS fpi FROM pg_get_wal_stats(?::pg_lsn, ?::pg_lsn, false)', [a.lsn, b.lsn])).rows[0] as { rec: number; fpi: number };
  return { total, records: Number(stats.rec), fpi: Number(stats.fpi) };
}

async function tupleStats(cluster: BenchCluster): Promise<Map<string, { ins: number; upd: number; hot: number; del: number }>> {
  const rows = (await cluster.knex.raw(`SELECT relname, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_hot_upd AS hot, n_tup_del AS del FROM pg_stat_user_tables
    WHERE schemaname = 'public' AND relname = ANY(?)`, [TABLES])).rows as { relname: string; ins: number; upd: number; hot: number; del: number }[];
  return new Map(rows.map((r) => [r.relname, { ins: Number(r.ins), upd: Number(r.upd), hot: Number(r.hot), del: Number(r.del) }]));
}

runBench('bench:pgbouncer', 40 * 60_000, async () => {
  const cluster = await startCluster('pgbouncer');
  const sink = await startSink();
  let bouncer: Bouncer | undefined;
  let dev: DevServer | undefined;
  let sampler: ReturnType<typeof connectionSampler> | undefined;
  const children: Child[] = [];
  try {
    await cluster.knex.raw('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
    bouncer = await startPgBouncer(cluster, { poolSize: POOL_SIZE });
    console.log(`machine: ${machine(cluster.version)}`);
    console.log(`PostgreSQL settings: ${JSON.stringify(cluster.settings)}`);
    console.log(`PgBouncer: ${bouncer.version}, pool_mode = transaction, default_pool_size = ${POOL_SIZE}`);
    console.log(`engine: ${ENGINE}; load: ${WORKERS} worker processes, 1 API process, POST /v1/send at ${CONNECTIONS} connections for ${SECONDS} s per send phase\n`);
    console.log('what transaction pooling does to the session features Herald uses (bench/lib/pgbouncer.ts probeTransactionPooling):');
    for (const line of await probeTransactionPooling(cluster, bouncer)) console.log(`  ${line}`);
    console.log('');
    const project = await benchProject();
    await cluster.knex.raw(`INSERT INTO contacts (project_id, email, subscribed, data)
      SELECT ?::uuid, 'existing-' || g || '@example.org', true, '{}'::jsonb FROM generate_series(1, 50000) g`, [project.id]);
    await cluster.knex.raw('ANALYZE');
    if (ENGINE === 'temporal') {
      dev = await startDevServer({ cli: ensureTemporal(), headless: true });
      console.log(`Temporal: dev server at ${dev.address}, in memory, on this machine`);
    } else {
      await prepareEngineSchema(cluster, sink.url);
    }
    const engineEnv: Record<string, string> = dev ? { ENGINE: 'temporal', TEMPORAL_ADDRESS: dev.address } : { ENGINE: 'embedded' };
    const adminUrl = (() => { const u = new URL(cluster.url); u.pathname = '/postgres'; return u.toString(); })();
    const current = { bouncer: undefined as Bouncer | undefined };
    sampler = connectionSampler(adminUrl, () => current.bouncer);
    const pgPid = cluster.postmasterPid();

    let counter = 0;
    const body = () => JSON.stringify({ from: 'Bench Shop <orders@example.com>', to: `customer-${counter++}@example.org`, subject: 'Your order #{{ order }} has shipped', body: EMAIL_HTML, data: { order: 100000 + counter } });
    const drive = (base: string, seconds: number) => autocannon({
      url: `${base}/v1/send`, method: 'POST', connections: CONNECTIONS, duration: seconds, timeout: 30,
      headers: { authorization: `Bearer ${project.secretKey}`, 'content-type': 'application/json' },
      requests: [{ setupRequest: (r) => ({ ...r, body: body() }) }],
    });

    const results: PhaseResult[] = [];
    const perMode: { mode: Mode; emails: number; tuples: Map<string, { ins: number; upd: number; hot: number; del: number }>; sizes: Map<string, number> }[] = [];
    const order: Mode[] = [];
    for (let r = 0; r < ROUNDS; r++) order.push(...(r % 2 === 0 ? MODES : [...MODES].reverse()));

    for (const mode of order) {
      console.log(`— ${mode} —`);
      current.bouncer = mode === 'pgbouncer' ? bouncer : undefined;
      // PgBouncer keeps its idle server connections (server_idle_timeout): closed between modes, so that a direct mode's
      // count is its own.
      await bouncer.admin('KILL herald');
      await bouncer.admin('RESUME herald');
      const env: Record<string, string> = mode === 'pgbouncer'
        ? { ...engineEnv, DATABASE_URL: bouncer.url, DATABASE_SESSION_URL: cluster.url, DATABASE_PREPARED_STATEMENTS: 'false' }
        : mode === 'direct-unnamed' ? { ...engineEnv, DATABASE_PREPARED_STATEMENTS: 'false' } : engineEnv;
      const tuplesBefore = await tupleStats(cluster);
      const modeStart = await dbSnap(cluster);
      const emailsBefore = Number(((await cluster.knex('emails').count('* as n').first()) as { n: number }).n);
      const api = startHeraldChild(`api (${mode})`, cluster, 'api', { ...env, PORT: '0', API_RATE_LIMIT_PER_MINUTE: '1000000000' });
      children.push(api);
      const base = `http://127.0.0.1:${String((await api.ready).port)}`;
      let workers: Child[] = [];
      const cpu = (): CpuSnap => ({
        api: cpuMs(api.pid), workers: workers.reduce((s, w) => s + cpuMs(w.pid), 0), postgres: cpuMs(pgPid, true),
        bouncer: mode === 'pgbouncer' ? cpuMs(bouncer!.pid) : 0, bench: cpuMs(process.pid), machine: machineBusyMs(), steal: stealSince().at,
      });
      const phase = async (name: PhaseResult['phase'], a: { db: DbSnap; cpu: CpuSnap }, emails: number, seconds: number, extra: Partial<PhaseResult>) => {
        const bDb = await dbSnap(cluster);
        const bCpu = cpu();
        const wal = await walBetween(cluster, a.db, bDb);
        const per = (x: number) => x / emails;
        const r: PhaseResult = {
          mode, phase: name, emails, seconds, ...extra,
          walBytes: per(wal.total), walRecordBytes: per(wal.records), walFpiBytes: per(wal.fpi),
          xids: per(bDb.nextXid - a.db.nextXid), statements: per(bDb.statements - a.db.statements),
          cpu: { api: per(bCpu.api - a.cpu.api), workers: per(bCpu.workers - a.cpu.workers), postgres: per(bCpu.postgres - a.cpu.postgres), bouncer: per(bCpu.bouncer - a.cpu.bouncer), bench: per(bCpu.bench - a.cpu.bench), machine: per(bCpu.machine - a.cpu.machine) },
          steal: stealSince(a.cpu.steal).share,
          conns: sampler!.take(),
        };
        results.push(r);
        return r;
      };
      const mark = async () => {
        await cluster.knex.raw('CHECKPOINT');
        return { db: await dbSnap(cluster), cpu: cpu() };
      };

      // 1. Sends alone.
      await drive(base, 3);
      sampler.take();
      let a = await mark();
      const send = await drive(base, SECONDS);
      const s1 = await phase('send', a, send['2xx'], SECONDS, { reqPerSecond: send['2xx'] / SECONDS, p50: send.latency.p50, p99: send.latency.p99, non2xx: send.non2xx + send.errors + send.timeouts });
      console.log(`send: ${f(s1.reqPerSecond!)} req/s, p99 ${s1.p99} ms`);

      // 2. The workers drain what was queued.
      const queued = Number(((await cluster.knex('emails').where('status', 'QUEUED').count('* as n').first()) as { n: number }).n);
      sink.reset();
      workers = Array.from({ length: WORKERS }, (_, i) => startHeraldChild(`worker ${i + 1} (${mode})`, cluster, 'worker', {
        ...env, SMTP_URL: sink.url, SEND_RATE_PER_SECOND: '100000', EXECUTOR_ID: `bench-${mode}-${i + 1}`, MALLOC_ARENA_MAX: '2',
      }, WORKER_ARGS));
      children.push(...workers);
      await Promise.all(workers.map((w) => w.ready));
      sampler.take();
      a = await mark();
      const readyAt = performance.timeOrigin + performance.now();
      const readyCount = sink.times.length;
      await sink.waitFor(queued, 600_000);
      const drained = sink.times.length - readyCount;
      const deliverySeconds = (sink.times[sink.times.length - 1]! - readyAt) / 1000;
      const d = await phase('delivery', a, drained, deliverySeconds, { emailsPerSecond: drained / deliverySeconds });
      console.log(`delivery: ${f(d.emailsPerSecond!)} emails/s (${f(readyCount)} of ${f(queued)} delivered while the workers started)`);
      for (let i = 0; i < 100; i++) {
        const left = Number(((await cluster.knex('emails').whereIn('status', ['QUEUED', 'SENDING']).count('* as n').first()) as { n: number }).n);
        if (!left) break;
        await sleep(100);
      }

      // 3. Sends while the workers deliver what arrives.
      sink.reset();
      sampler.take();
      a = await mark();
      const both = await drive(base, SECONDS);
      const deliveredInWindow = sink.times.length;
      const s3 = await phase('send while delivering', a, both['2xx'], SECONDS, {
        reqPerSecond: both['2xx'] / SECONDS, p50: both.latency.p50, p99: both.latency.p99, non2xx: both.non2xx + both.errors + both.timeouts,
        emailsPerSecond: deliveredInWindow / SECONDS,
      });
      console.log(`send while delivering: ${f(s3.reqPerSecond!)} req/s, p99 ${s3.p99} ms, ${f(s3.emailsPerSecond!)} emails/s delivered meanwhile`);
      for (let i = 0; i < 600; i++) {
        const left = Number(((await cluster.knex('emails').whereIn('status', ['QUEUED', 'SENDING']).count('* as n').first()) as { n: number }).n);
        if (!left) break;
        await sleep(100);
      }
      await Promise.all([...workers, api].map((c) => c.stop()));
      // Backends flush their table statistics when they exit (or at most 10 s after going idle: PgBouncer's stay).
      await sleep(11_000);
      const emailsAfter = Number(((await cluster.knex('emails').count('* as n').first()) as { n: number }).n);
      const tuplesAfter = await tupleStats(cluster);
      const modeEnd = await dbSnap(cluster);
      const tuples = new Map([...tuplesAfter].map(([k, v]) => { const b = tuplesBefore.get(k) ?? { ins: 0, upd: 0, hot: 0, del: 0 }; return [k, { ins: v.ins - b.ins, upd: v.upd - b.upd, hot: v.hot - b.hot, del: v.del - b.del }]; }));
      const sizes = new Map([...modeEnd.sizes].map(([k, v]) => [k, v - (modeStart.sizes.get(k) ?? 0)]));
      perMode.push({ mode, emails: emailsAfter - emailsBefore, tuples, sizes });
      const duplicates = sink.recipients.length - new Set(sink.recipients).size;
      const notSent = Number(((await cluster.knex('emails').whereNot('status', 'SENT').count('* as n').first()) as { n: number }).n);
      console.log(`checks: ${f(emailsAfter - emailsBefore)} emails stored in this mode; ${notSent} emails not SENT in the database; duplicates at the sink in phase 3: ${duplicates}\n`);
    }

    // Reports.
    console.log('\n| mode | phase | emails | req/s | p50 ms | p99 ms | non-2xx | emails/s | steal | peak server connections (through PgBouncer) | PgBouncer clients, waiting, max wait ms |');
    console.log('|---|---|---|---|---|---|---|---|---|---|---|');
    for (const r of results) {
      console.log(`| ${r.mode} | ${r.phase} | ${f(r.emails)} | ${r.reqPerSecond ? f(r.reqPerSecond) : '—'} | ${r.p50 ?? '—'} | ${r.p99 ?? '—'} | ${r.non2xx ?? '—'} | ${r.emailsPerSecond ? f(r.emailsPerSecond) : '—'} | ${f(r.steal * 100, 1)} % | ${r.conns.backends}${r.mode === 'pgbouncer' ? ` (${r.conns.viaBouncer})` : ''} | ${r.mode === 'pgbouncer' ? `${r.conns.bouncerClients}, ${r.conns.bouncerWaiting}, ${f(r.conns.maxWaitMs, 1)}` : '—'} |`);
    }
    console.log('\nper email: | mode | phase | WAL bytes (records + full-page images) | write transactions (xids) | statements | CPU ms: API | workers | PostgreSQL | PgBouncer | bench (load, sink) | other processes | machine busy |');
    console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
    for (const r of results) {
      const c = r.cpu;
      console.log(`| ${r.mode} | ${r.phase} | ${f(r.walBytes)} (${f(r.walRecordBytes)} + ${f(r.walFpiBytes)}) | ${f(r.xids, 3)} | ${f(r.statements, 2)} | ${f(c.api, 3)} | ${f(c.workers, 3)} | ${f(c.postgres, 3)} | ${f(c.bouncer, 3)} | ${f(c.bench, 3)} | ${f(c.machine - c.api - c.workers - c.postgres - c.bouncer - c.bench, 3)} | ${f(c.machine, 3)} |`);
    }
    console.log('\npeak server connections by application_name (pg_stat_activity):');
    for (const r of results) console.log(`  ${r.mode}, ${r.phase}: ${[...r.conns.byName].map(([k, v]) => `${k} ${v}`).join(', ')}`);
    for (const m of perMode) {
      console.log(`\n${m.mode}: per email stored and delivered (${f(m.emails)} emails): rows inserted / updated (HOT) / deleted per table`);
      for (const [t, v] of m.tuples) if (v.ins || v.upd || v.del) console.log(`  ${t}: ${f(v.ins / m.emails, 3)} / ${f(v.upd / m.emails, 3)} (${f(v.hot / m.emails, 3)}) / ${f(v.del / m.emails, 3)}`);
      console.log(`${m.mode}: growth in bytes per 1,000 emails`);
      for (const [k, v] of m.sizes) if (Math.abs(v) >= 1) console.log(`  ${k}: ${f((v / m.emails) * 1000)}`);
    }
    // What stays: after a plain VACUUM (dead versions of the updated rows made reusable, no rewrite), each table's
    // footprint per row, and the mean width of a live row.
    await cluster.knex.raw('VACUUM emails, events, contacts');
    console.log('\nafter the run and a VACUUM: | table | rows | bytes per row, heap + indexes | of which indexes | live row width (pg_column_size) |');
    console.log('|---|---|---|---|---|');
    for (const t of ['emails', 'events', 'contacts']) {
      const r = (await cluster.knex.raw(`SELECT count(*)::bigint AS n, pg_total_relation_size('${t}') AS total, pg_indexes_size('${t}') AS idx, avg(pg_column_size(x.*))::float AS width FROM ${t} x`)).rows[0] as { n: number; total: number; idx: number; width: number };
      console.log(`| ${t} | ${f(Number(r.n))} | ${f(Number(r.total) / Number(r.n))} | ${f(Number(r.idx) / Number(r.n))} | ${f(r.width)} |`);
    }
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await sampler?.stop();
    await bouncer?.stop();
    await dev?.stop();
    await sink.close();
    await cluster.stop();
  }
});
