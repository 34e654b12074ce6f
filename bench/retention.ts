/**
 * Retention (issue 33, point 5): dropping a month of 10,000,000 events while sends run, in one run.
 *
 *   npx tsx bench/retention.ts          (npm run bench:retention)
 *
 * Starts its own embedded PostgreSQL (migrated: the partitioned tables of db/partitions.ts), fills the events partition
 * of a month 14 months back with BENCH_EVENTS rows (10,000,000; made as a table of its own, filled, then attached, as
 * the partition it then is: the same files and indexes a month of events leaves), and an emails partition of that month
 * with BENCH_OLD_EMAILS rows. Then the Herald API as `npm run api` runs it, driven by autocannon (POST /v1/send, one new
 * recipient each: every send writes emails, events and contacts) at BENCH_CONNECTIONS for BENCH_BEFORE seconds, then
 * while the retention job (retention/retention.ts applyPartitions, as the engine runs it) drops both partitions, and
 * for BENCH_AFTER seconds more. Reported:
 * - each drop (db/partitions.ts dropPartition): its wait for the parent's lock, the DROP statement under it, the time
 *   until its commit returned (the files are unlinked after the locks are released), and the tables it locked;
 * - the sends' latency (p50, p99, max) before the drop, in the window from the drop's start to a second after its end,
 *   and after it; requests per second in each window.
 *
 * - what a statement needing each lock a send takes (ROW EXCLUSIVE on events, emails and contacts, ACCESS SHARE on
 *   projects) waited, from probes looping on connections of their own: the stall writers actually see.
 *
 * Environment: BENCH_EVENTS (default 10000000), BENCH_OLD_EMAILS (default 1000000), BENCH_CONNECTIONS (default 16),
 * BENCH_BEFORE (s, default 15), BENCH_AFTER (s, default 5), BENCH_DURABLE=1 (fsync on), BENCH_LOG_LEVEL.
 */
import autocannon from 'autocannon';
import pg from 'pg';
import { idFloor } from '../db/pages';
import { listPartitions, monthStart, monthSuffix, partitioned } from '../db/partitions';
import { applyPartitions } from '../retention/retention';
import { startCluster } from './lib/cluster';
import { benchProject, EMAIL_HTML, prepareEngineSchema, startHeraldChild } from './lib/herald';
import { machine, runBench, sleep, stealSince, type Child } from './lib/proc';
import { startSink, type Sink } from './lib/sink';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000_000);
const OLD_EMAILS = Number(process.env.BENCH_OLD_EMAILS ?? 1_000_000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const BEFORE = Number(process.env.BENCH_BEFORE ?? 15);
const AFTER = Number(process.env.BENCH_AFTER ?? 5);
const RETENTION = { days: 365, inboundDays: 30 };

/**
 * What a writer (or a reader) of a table would wait: a loop of the smallest statement that takes the lock a send takes
 * on it (ROW EXCLUSIVE on the partitioned parents and on contacts; ACCESS SHARE on projects, which every request reads),
 * on a connection of its own, each timed.
 */
function lockProbe(url: string, name: string, sql: string[]) {
  const samples: { at: number; ms: number }[] = [];
  let running = true;
  const client = new pg.Client({ connectionString: url, application_name: `probe ${name}` });
  const done = (async () => {
    await client.connect();
    while (running) {
      const t0 = performance.now();
      for (const q of sql) await client.query(q);
      samples.push({ at: Date.now(), ms: performance.now() - t0 });
      await sleep(5);
    }
    await client.end();
  })();
  return { name, samples, stop: async () => { running = false; await done; } };
}

let counter = 0;
const nextBody = () => JSON.stringify({ from: 'Shop <orders@example.com>', to: `customer-${counter++}@example.org`, subject: 'Your order has shipped', body: EMAIL_HTML });

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

interface Window { name: string; from: number; to: number }

function summarise(samples: { at: number; ms: number; ok: boolean }[], w: Window) {
  // A request belongs to the window it ended in.
  const xs = samples.filter((s) => s.at >= w.from && s.at < w.to);
  const ms = xs.map((s) => s.ms).sort((a, b) => a - b);
  return { name: w.name, seconds: (w.to - w.from) / 1000, requests: xs.length, non2xx: xs.filter((s) => !s.ok).length, rps: xs.length / ((w.to - w.from) / 1000), p50: quantile(ms, 0.5), p99: quantile(ms, 0.99), max: ms.at(-1) ?? NaN };
}

/** A month partition of `table` made as its own table, filled by `fill` (SQL into the table), then attached. */
async function filledPartition(knex: import('knex').Knex, table: 'events' | 'emails', start: Date, fill: (name: string) => string, bindings: unknown[]): Promise<{ name: string; fillMs: number; attachMs: number; bytes: string }> {
  const t = partitioned(table);
  const name = `${table}${monthSuffix(start)}`;
  const loose = `${name}_load`;
  const t0 = Date.now();
  // Filled without indexes (a bulk load), then the indexes built by the ATTACH that makes it the month's partition.
  await knex.raw(`CREATE TABLE ${loose} (LIKE ${table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION)`);
  await knex.raw(fill(loose), bindings as never);
  const t1 = Date.now();
  await knex.raw(`ALTER TABLE ${loose} RENAME TO ${name}`);
  await knex.raw(`ALTER TABLE ${table} ATTACH PARTITION ${name} FOR VALUES FROM (${t.kind === 'time' ? `'${start.toISOString()}'` : `'${idFloor(start)}'`}) TO (${t.kind === 'time' ? `'${monthStart(start, 1).toISOString()}'` : `'${idFloor(monthStart(start, 1))}'`})`);
  await knex.raw(`VACUUM ANALYZE ${name}`);
  const bytes = (await knex.raw(`SELECT pg_size_pretty(pg_total_relation_size(?::regclass)) AS s`, [name])).rows[0].s as string;
  return { name, fillMs: t1 - t0, attachMs: Date.now() - t1, bytes };
}

runBench('bench:retention', 60 * 60_000, async () => {
  const cluster = await startCluster('retention');
  const children: Child[] = [];
  let sink: Sink | undefined;
  try {
    console.log(`machine: ${machine(cluster.version)}`);
    console.log(`PostgreSQL settings: ${JSON.stringify(cluster.settings)}`);
    const { knex } = cluster;
    const project = await benchProject();
    await knex.raw(`INSERT INTO contacts (project_id, email, subscribed, data) SELECT ?::uuid, 'old-' || g || '@example.org', true, '{}' FROM generate_series(1, 10000) g`, [project.id]);
    const contact = (await knex('contacts').where({ project_id: project.id }).first('id')).id as string;

    // The month 14 months back: past RETENTION_DAYS (365) by a month.
    const old = monthStart(new Date(), -14);
    const spanMs = monthStart(old, 1).getTime() - old.getTime();
    const uuidAt = (ms: string) => `(lpad(to_hex(${ms}), 12, '0') || substr(md5(g::text), 1, 20))::uuid`;
    const at = (n: number) => `(?::bigint + (g::bigint * ${Math.floor(spanMs / Math.max(1, n))}))`;
    process.stdout.write(`filling ${EVENTS.toLocaleString('en')} events of ${old.toISOString().slice(0, 7)} … `);
    const ev = await filledPartition(knex, 'events', old, (name) => `INSERT INTO ${name} (id, project_id, name, contact_id, email_id, data, created_at)
      SELECT ${uuidAt(at(EVENTS))}, ?::uuid, (ARRAY['email.sent', 'email.opened', 'email.clicked', 'email.delivered'])[1 + g % 4], ?::uuid, ${uuidAt(at(EVENTS))},
             '{"messageId": "<abc@example.com>"}'::jsonb, to_timestamp(${at(EVENTS)} / 1000.0)
      FROM generate_series(0, ?::int - 1) g`, [old.getTime(), project.id, contact, old.getTime(), old.getTime(), EVENTS]);
    console.log(`${(ev.fillMs / 1000).toFixed(0)} s, attached (indexes built) in ${(ev.attachMs / 1000).toFixed(0)} s: ${ev.bytes}`);
    process.stdout.write(`filling ${OLD_EMAILS.toLocaleString('en')} emails of that month … `);
    const em = await filledPartition(knex, 'emails', old, (name) => `INSERT INTO ${name} (id, project_id, contact_id, from_email, to_email, subject, html, status, partition_at, created_at)
      SELECT ${uuidAt(at(OLD_EMAILS))}, ?::uuid, ?::uuid, 'app@example.com', 'old-' || g || '@example.org', 'Old', '<p>old</p>', 'SENT',
             to_timestamp(${at(OLD_EMAILS)} / 1000.0), to_timestamp(${at(OLD_EMAILS)} / 1000.0)
      FROM generate_series(0, ?::int - 1) g`, [old.getTime(), project.id, contact, old.getTime(), old.getTime(), OLD_EMAILS]);
    console.log(`${(em.fillMs / 1000).toFixed(0)} s, attached in ${(em.attachMs / 1000).toFixed(0)} s: ${em.bytes}`);
    await knex.raw('ANALYZE');

    sink = await startSink();
    await prepareEngineSchema(cluster, sink.url);
    const api = startHeraldChild('herald api', cluster, 'api', { PORT: '0', API_RATE_LIMIT_PER_MINUTE: '1000000000' });
    children.push(api);
    const port = (await api.ready).port as number;

    const samples: { at: number; ms: number; ok: boolean }[] = [];
    const total = BEFORE + AFTER + 10;
    console.log(`sends: ${CONNECTIONS} connections for up to ${total} s; the drop at ${BEFORE} s`);
    const steal = stealSince();
    const loadBefore = (await import('node:os')).loadavg();
    let finished: () => void = () => undefined;
    const ended = new Promise<void>((resolve) => { finished = resolve; });
    // With a callback, autocannon answers its instance (its per-request events, stop()) rather than a promise.
    const instance = autocannon({
      url: `http://127.0.0.1:${port}/v1/send`, method: 'POST', connections: CONNECTIONS, duration: total, timeout: 30,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${project.secretKey}` },
      requests: [{ setupRequest: (req) => ({ ...req, body: nextBody() }) }],
    }, () => finished());
    instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => { samples.push({ at: Date.now(), ms, ok: status >= 200 && status < 300 }); });
    const probes = [
      lockProbe(cluster.url, 'events (ROW EXCLUSIVE)', ['BEGIN', 'LOCK TABLE ONLY events IN ROW EXCLUSIVE MODE', 'ROLLBACK']),
      lockProbe(cluster.url, 'emails (ROW EXCLUSIVE)', ['BEGIN', 'LOCK TABLE ONLY emails IN ROW EXCLUSIVE MODE', 'ROLLBACK']),
      lockProbe(cluster.url, 'contacts (ROW EXCLUSIVE)', ['BEGIN', 'LOCK TABLE contacts IN ROW EXCLUSIVE MODE', 'ROLLBACK']),
      lockProbe(cluster.url, 'projects (ACCESS SHARE)', ['SELECT 1 FROM projects LIMIT 1']),
    ];
    const started = Date.now();
    await sleep(BEFORE * 1000);

    // The retention job's round, as the engine runs it, a year and a month after the old month.
    const dropStart = Date.now();
    const run = await applyPartitions({ knex, config: RETENTION, listLocks: true });
    const dropEnd = Date.now();
    await sleep(AFTER * 1000);
    instance.stop();
    await Promise.race([ended, sleep(5000)]);
    await Promise.all(probes.map((p) => p.stop()));
    const loadAfter = (await import('node:os')).loadavg();

    console.log(`\nretention round: ${dropEnd - dropStart} ms (partitions made ahead: ${run.created.length}; kept: ${JSON.stringify(run.kept)})`);
    console.log('\n| partition | rows | size | lock wait ms | DROP under the lock ms | lock to commit returned ms (files unlinked after the locks are released) | tables locked |');
    console.log('|---|---|---|---|---|---|---|');
    for (const d of run.dropped) {
      const rows = d.partition === ev.name ? EVENTS : d.partition === em.name ? OLD_EMAILS : 0;
      const size = d.partition === ev.name ? ev.bytes : d.partition === em.name ? em.bytes : '';
      console.log(`| ${d.partition} | ${rows.toLocaleString('en')} | ${size} | ${d.waitMs.toFixed(1)} | ${d.dropMs.toFixed(1)} | ${d.holdMs.toFixed(1)} | ${(d.locks ?? []).join(', ')} |`);
    }
    const windows: Window[] = [
      { name: `before (${BEFORE - 5} s)`, from: started + 5000, to: dropStart },
      { name: 'drop start to 1 s after its end', from: dropStart, to: dropEnd + 1000 },
      { name: `after (${AFTER - 1} s)`, from: dropEnd + 1000, to: dropEnd + AFTER * 1000 },
    ];
    const sums = windows.map((w) => summarise(samples, w));
    console.log('\n| sends, window | s | requests | req/s | non-2xx | p50 ms | p99 ms | max ms |');
    console.log('|---|---|---|---|---|---|---|---|');
    for (const s of sums) console.log(`| ${s.name} | ${s.seconds.toFixed(1)} | ${s.requests} | ${s.rps.toFixed(0)} | ${s.non2xx} | ${s.p50} | ${s.p99} | ${s.max} |`);
    console.log('\n| lock probe (what a statement needing that lock waited) | p50 ms before | max ms before | max ms from the drop\'s start to its end | probes then |');
    console.log('|---|---|---|---|---|');
    for (const p of probes) {
      const before = p.samples.filter((x) => x.at >= started + 5000 && x.at < dropStart).map((x) => x.ms).sort((a, c) => a - c);
      const during = p.samples.filter((x) => x.at >= dropStart && x.at <= dropEnd + 200).map((x) => x.ms);
      console.log(`| ${p.name} | ${quantile(before, 0.5).toFixed(1)} | ${(before.at(-1) ?? NaN).toFixed(1)} | ${Math.max(...during).toFixed(1)} | ${during.length} |`);
    }
    const [b, d] = sums;
    // What writers waited: the probes of the parents the drops locked, from the round's start to its end.
    const stall = Math.max(...probes.slice(0, 2).map((p) => Math.max(...p.samples.filter((x) => x.at >= dropStart && x.at <= dropEnd + 200).map((x) => x.ms))));
    const held = Math.max(...run.dropped.map((x) => x.waitMs + x.dropMs));
    console.log(`\nsend p99 during / before: ${(d!.p99 / b!.p99).toFixed(2)} x; max during ${d!.max} ms`);
    console.log(`steal ${(stealSince(steal.at).share * 100).toFixed(1)} %, load average ${loadBefore.map((x) => x.toFixed(1)).join(' ')} -> ${loadAfter.map((x) => x.toFixed(1)).join(' ')}`);
    const left = await listPartitions(knex, partitioned('events'));
    console.log(`targets: lock wait + DROP under the lock ≤ 1000 ms: ${held <= 1000 ? 'met' : 'MISSED'} (${held.toFixed(1)} ms); the longest wait of a writer of events or emails during the round ≤ 1000 ms: ${stall <= 1000 ? 'met' : 'MISSED'} (${stall.toFixed(1)} ms); the month gone: ${left.some((p) => p.name === ev.name) ? 'MISSED' : 'met'}; sends' non-2xx during: ${d!.non2xx}`);
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await sink?.close();
    await cluster.stop();
  }
});
