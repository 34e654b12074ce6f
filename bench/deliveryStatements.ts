/**
 * The delivery queue's two statements alone, as the worker runs them (named statements, one connection): the claim of
 * up to 200 queued emails (worker/deliveryQueue.ts CLAIM_SQL) and the outcome write of 5 of them at a time (BENCH_WRITE_BATCH)
 * (sending/delivery.ts RECORD_SQL, all SENT), over BENCH_EMAILS queued emails. Measures the PostgreSQL backend's CPU
 * per email for each (from /proc, so the machine's other load does not count), which bench/delivery.ts mixes with
 * SMTP, the worker and the engine.
 *
 *   npx tsx bench/deliveryStatements.ts
 *   BENCH_TREE=/path/to/other/checkout npx tsx bench/deliveryStatements.ts   (the statements of another checkout)
 *
 * Environment: BENCH_EMAILS (default 10000), BENCH_TREE (another checkout whose statements, migrations and schema are
 * measured, e.g. the code before a change; run alternately with this one), BENCH_MONTHS (past months given a
 * partition of each partitioned table before the measure, as a database a year old has them: db/partitions.ts; only
 * where the tree partitions), BENCH_PLAN_CACHE_MODE (plan_cache_mode of the connection: auto, PostgreSQL's default
 * and Herald's, force_generic_plan or force_custom_plan; a tree whose runner pins the outcome write's generic plan
 * resets it after each write). Its own embedded PostgreSQL (fsync off unless BENCH_DURABLE=1).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT, runBench } from './lib/proc';

const root = path.resolve(process.env.BENCH_TREE ?? REPO_ROOT);
const N = Number(process.env.BENCH_EMAILS ?? 10_000);
const MONTHS = Number(process.env.BENCH_MONTHS ?? 0);
const MODE = process.env.BENCH_PLAN_CACHE_MODE ?? 'auto';
/** Outcomes per write (the worker gathered 5-8 a write before BENCHMARKS.md section 50, up to 20 since). */
const WRITE_BATCH = Number(process.env.BENCH_WRITE_BATCH ?? 5);

interface PgConnection {
  query(q: string | { name: string; text: string; values: unknown[] }): Promise<{ rows: Record<string, unknown>[] }>;
}

/** knex's `?` placeholders numbered as db/prepared.ts numbers them. */
const numbered = (sql: string) => { let n = 0; return { text: sql.replace(/\?/g, () => `$${++n}`), count: (sql.match(/\?/g) ?? []).length }; };

runBench('bench:delivery-statements', 10 * 60_000, async () => {
  // The tree's own modules (its schema, its statements), as bench/delivery.ts runs another tree's worker.
  const { startCluster } = await import(path.join(root, 'bench/lib/cluster')) as typeof import('./lib/cluster');
  const { benchProject, queueEmails } = await import(path.join(root, 'bench/lib/herald')) as typeof import('./lib/herald');
  const { CLAIM_SQL } = await import(path.join(root, 'worker/deliveryQueue')) as { CLAIM_SQL: string };
  // The tree's own runner of the outcome write where it exports one (with its way of planning: db/prepared.ts's
  // generic plan pinned), otherwise the statement sent by name as db/prepared.ts sends it.
  type Runner = (db: unknown, bindings: readonly unknown[]) => Promise<{ rows: Record<string, unknown>[] }>;
  const { RECORD_SQL, runRecord } = await import(path.join(root, 'sending/delivery')) as { RECORD_SQL: string; runRecord?: Runner };
  const cluster = await startCluster('delivery-statements');
  try {
    const project = await benchProject(cluster);
    const record = numbered(RECORD_SQL);
    // This branch's outcome write carries each email's partition key (a 7th binding); main's does not.
    const withKey = record.count === 7;
    if (MONTHS > 0 && withKey) {
      const { createMonthlyPartitions, monthStart, PARTITIONED_TABLES } = await import(path.join(root, 'db/partitions')) as typeof import('../db/partitions');
      for (const t of PARTITIONED_TABLES) await createMonthlyPartitions(cluster.knex, t, monthStart(new Date(), -MONTHS), monthStart(new Date()));
    }
    const { rows: [parts] } = await cluster.knex.raw(`SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = to_regclass('emails')`);
    await queueEmails(cluster, project.id, N, 'statements');
    const client = cluster.knex.client as { acquireConnection(): Promise<PgConnection>; releaseConnection(c: PgConnection): Promise<unknown> };
    const conn = await client.acquireConnection();
    try {
      const pid = Number((await conn.query('SELECT pg_backend_pid() AS pid')).rows[0]!.pid);
      await conn.query(`SET plan_cache_mode = ${MODE}`);
      // A knex-like handle whose every statement runs on this connection (db/prepared.ts's runners take one).
      const onConn = { client: { emit: () => undefined, acquireConnection: async () => conn, releaseConnection: async () => undefined } };
      const hz = 100;
      const cpuMs = () => { const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' '); return ((Number(f[11]) + Number(f[12])) * 1000) / hz; };
      const claim = numbered(CLAIM_SQL).text;
      let claimCpu = 0, recordCpu = 0, emails = 0, writes = 0;
      const started = performance.now();
      for (;;) {
        let c = cpuMs();
        const { rows } = await conn.query({ name: 'bench_claim', text: claim, values: [10, 200, 1000, 0.01, 'bench-statements', 0.01] });
        claimCpu += cpuMs() - c;
        const got = rows.filter((r) => r.id) as { project_id: string; id: string; partition_at?: Date }[];
        if (got.length === 0) break;
        for (let i = 0; i < got.length; i += WRITE_BATCH) {
          const batch = got.slice(i, i + WRITE_BATCH);
          const values: unknown[] = [batch.map((r) => r.project_id), batch.map((r) => r.id), batch.map(() => 'SENT'),
            batch.map((r) => `<${r.id}@example.com>`), batch.map(() => null), batch.map(() => 0)];
          if (withKey) values.push(batch.map((r) => r.partition_at ?? null));
          c = cpuMs();
          if (runRecord) await runRecord(onConn, values);
          else await conn.query({ name: 'bench_record', text: record.text, values });
          recordCpu += cpuMs() - c;
          writes++;
        }
        emails += got.length;
      }
      const seconds = (performance.now() - started) / 1000;
      console.log(`tree ${root}: ${Number(parts!.n)} partitions of emails, plan_cache_mode ${MODE}${runRecord ? ' (the outcome write: the tree\'s runner)' : ''}, ${emails} emails in ${writes} outcome writes, ${seconds.toFixed(1)} s; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
      console.log(`backend CPU ms per email: claim ${(claimCpu / emails).toFixed(3)}, outcome write ${(recordCpu / emails).toFixed(3)}`);
      console.log(JSON.stringify({ tree: root, partitions: Number(parts!.n), mode: MODE, emails, claimCpuMsPerEmail: claimCpu / emails, recordCpuMsPerEmail: recordCpu / emails }));
    } finally {
      await client.releaseConnection(conn);
    }
  } finally {
    await cluster.stop();
  }
});
