/**
 * What a scrape of GET /metrics costs with a large database: 1,000,000 emails (90 % SENT, 5 % FAILED, 3 % QUEUED,
 * 2 % CANCELLED: 30,000 in the delivery queue) and 100,000 automation executions (5 % of them live), analysed.
 *
 *   npx tsx bench/metrics.ts          (npm run bench:metrics)
 *
 * Measured in this process, against its own embedded PostgreSQL (bench/lib/cluster.ts):
 * - one reading of the database gauges (metrics/database.ts readDatabase: the one statement every scrape shares),
 *   BENCH_READINGS times (default 200), p50 / p99;
 * - a whole scrape without the cache (the reading plus the exposition of every series), and a scrape served from the
 *   cache (the exposition alone), the same number of times;
 * - beside them, what the designs it avoids would cost: `count(*) … GROUP BY status` over the table, and an uncapped
 *   count of the queue, BENCH_NAIVE times (default 10);
 * - how far the estimates are from the exact counts, and the plan of the reading (EXPLAIN ANALYZE, BUFFERS).
 *
 * Environment: BENCH_EMAILS (default 1,000,000), BENCH_EXECUTIONS (default 100,000), BENCH_READINGS, BENCH_NAIVE.
 */
import { EMAIL_STATUSES, readDatabase } from '../metrics/database';
import { createMetrics } from '../metrics/metrics';
import { createProject } from '../projects/service';
import { startCluster } from './lib/cluster';
import { machine, runBench } from './lib/proc';

const EMAILS = Number(process.env.BENCH_EMAILS ?? 1_000_000);
const EXECUTIONS = Number(process.env.BENCH_EXECUTIONS ?? 100_000);
const READINGS = Number(process.env.BENCH_READINGS ?? 200);
const NAIVE = Number(process.env.BENCH_NAIVE ?? 10);

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
const ms = (n: number) => `${n.toFixed(2)} ms`;

async function timed(n: number, fn: () => Promise<unknown>): Promise<{ p50: number; p99: number; mean: number }> {
  const all: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await fn();
    all.push(performance.now() - started);
  }
  const sorted = [...all].sort((a, b) => a - b);
  return { p50: pct(sorted, 50), p99: pct(sorted, 99), mean: all.reduce((a, b) => a + b, 0) / all.length };
}

runBench('bench:metrics', 20 * 60_000, async () => {
  const cluster = await startCluster('metrics');
  try {
    console.log(`machine: ${machine(cluster.version)}`);
    const { knex } = cluster;
    const project = await createProject('Bench metrics');
    console.log(`loading ${EMAILS} emails and ${EXECUTIONS} automation executions …`);
    const loadStarted = performance.now();
    await knex.raw(
      `INSERT INTO emails (project_id, from_email, to_email, subject, html, status, priority, created_at)
       SELECT ?::uuid, 'orders@example.com', 'customer-' || (g % 50000) || '@example.org', 'Shipped', '<p>Hello</p>',
              CASE WHEN g % 100 < 90 THEN 'SENT' WHEN g % 100 < 95 THEN 'FAILED' WHEN g % 100 < 98 THEN 'QUEUED' ELSE 'CANCELLED' END,
              g % 2, now() - (? - g) * interval '1 second'
       FROM generate_series(0, ? - 1) g`,
      [project.id, EMAILS, EMAILS],
    );
    const [{ id: contactId }] = await knex('contacts').insert({ project_id: project.id, email: 'journey@example.org' }).returning('id');
    const [{ id: automationId }] = await knex('automations').insert({ project_id: project.id, name: 'bench', trigger_event: 'x', steps: JSON.stringify([]) }).returning('id');
    await knex.raw(
      `INSERT INTO automation_executions (project_id, automation_id, contact_id, status, exclusive)
       SELECT ?::uuid, ?::uuid, ?::uuid, CASE WHEN g % 100 = 0 THEN 'RUNNING' WHEN g % 100 < 5 THEN 'WAITING' ELSE 'COMPLETED' END, false
       FROM generate_series(0, ? - 1) g`,
      [project.id, automationId, contactId, EXECUTIONS],
    );
    await knex.raw('VACUUM ANALYZE emails');
    await knex.raw('VACUUM ANALYZE automation_executions');
    const size = (await knex.raw("SELECT pg_size_pretty(pg_total_relation_size('emails')) AS s")).rows[0].s as string;
    console.log(`loaded and analysed in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s; emails: ${size}`);

    // Warm the caches as a running Herald's would be.
    for (let i = 0; i < 10; i++) await readDatabase(knex);

    const reading = await timed(READINGS, () => readDatabase(knex));
    const uncached = createMetrics(knex, { cacheMs: 0 });
    const scrape = await timed(READINGS, () => uncached.render());
    const cached = createMetrics(knex, { cacheMs: 60_000 });
    await cached.render();
    const fromCache = await timed(READINGS, () => cached.render());
    const groupBy = await timed(NAIVE, () => knex.raw('SELECT status, count(*) FROM emails GROUP BY status'));
    const queueCount = await timed(NAIVE, () => knex.raw("SELECT count(*) FROM emails WHERE status = 'QUEUED'"));

    console.log('\n| Measure | p50 | p99 | mean |');
    console.log('|---|---|---|---|');
    for (const [name, m] of [
      ['one reading of the database gauges (the shared statement)', reading],
      ['a whole scrape without the cache (reading + exposition)', scrape],
      ['a scrape served from the cache (exposition only)', fromCache],
      [`count(*) GROUP BY status over the table (avoided; ${NAIVE} runs)`, groupBy],
      [`count(*) of the queue, uncapped, through its index (${NAIVE} runs)`, queueCount],
    ] as const) console.log(`| ${name} | ${ms(m.p50)} | ${ms(m.p99)} | ${ms(m.mean)} |`);
    console.log(`\nratio: GROUP BY count p50 / reading p50 = ${(groupBy.p50 / reading.p50).toFixed(1)}x`);

    const snapshot = await readDatabase(knex);
    const exact = Object.fromEntries((await knex.raw('SELECT status, count(*)::int AS n FROM emails GROUP BY status')).rows.map((r: { status: string; n: number }) => [r.status, r.n]));
    console.log(`\nestimated: ${snapshot.emails?.estimated}; queue depth ${snapshot.queueDepth}, oldest ${snapshot.queueOldestAgeSeconds.toFixed(0)} s; executions ${JSON.stringify(snapshot.executions)}`);
    console.log('| Status | exact | estimate | error |');
    console.log('|---|---|---|---|');
    for (const status of EMAIL_STATUSES) {
      const e = exact[status] ?? 0;
      const est = snapshot.emails?.byStatus[status] ?? 0;
      console.log(`| ${status} | ${e} | ${est} | ${e === 0 ? (est === 0 ? '0' : `+${est}`) : `${(((est - e) / e) * 100).toFixed(2)} %`} |`);
    }

    let sql = '';
    let bindings: readonly unknown[] = [];
    const capture = (q: { sql: string; bindings: readonly unknown[] }) => { sql = q.sql; bindings = q.bindings; };
    knex.on('query', capture);
    await readDatabase(knex);
    knex.off('query', capture);
    const plan = await knex.raw(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${sql.replace(/\$\d+/g, '?')}`, bindings as never);
    console.log('\nplan of the reading:');
    for (const r of plan.rows as { 'QUERY PLAN': string }[]) console.log(`    ${r['QUERY PLAN']}`);
  } finally {
    await cluster.stop();
  }
});
