import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { Model } from 'objection';
import pg from 'pg';
import { createKnex } from '../../db/database';
import { readClusterInfo } from './cluster';

export interface TestDatabase {
  name: string;
  url: string;
  knex: Knex;
  close(): Promise<void>;
}

/**
 * A database of its own for one test file, cloned from the migrated template (milliseconds, no migrations),
 * so test files run in parallel without seeing each other's rows. Binds Objection's models to it.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const info = readClusterInfo();
  const name = `t_${process.env.HERALD_TEST_RUN ?? 'x'}_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: info.adminUrl });
  await admin.connect();
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.query(`CREATE DATABASE ${name} TEMPLATE ${info.template}`);
        break;
      } catch (err) {
        // 55006: the template is busy with another clone; retry shortly.
        if ((err as { code?: string }).code !== '55006' || attempt > 50) throw err;
        await new Promise((r) => setTimeout(r, 50 + Math.random() * 100));
      }
    }
  } finally {
    await admin.end();
  }
  const url = info.urlPattern.replace('{db}', name);
  const knex = createKnex(url, { poolMax: 10 });
  Model.knex(knex);
  return {
    name,
    url,
    knex,
    async close() {
      await knex.destroy();
    },
  };
}

/**
 * VACUUM ANALYZE of `tables`, again until every page of theirs (of each partition, for a partitioned one) is marked
 * all-visible: the EXPLAIN tests' plans turn on it (an index-only read is priced by the share of pages it need not
 * visit), and a VACUUM that runs while another session of the database holds a snapshot older than the rows just
 * written (autovacuum's ANALYZE of a table the file filled a moment before) leaves them unmarked, so that the same test
 * read another plan from one run to the next (a window of events' count priced as a sort, seen on 2026-11-30).
 */
export async function vacuumAnalyze(knex: Knex, tables: readonly string[], timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const t of tables) await knex.raw(`VACUUM ANALYZE ${t}`);
    const { rows } = await knex.raw(
      `SELECT c.relname FROM unnest(?::regclass[]) t CROSS JOIN LATERAL pg_partition_tree(t) p JOIN pg_class c ON c.oid = p.relid
       WHERE c.relkind = 'r' AND c.relallvisible < c.relpages`, [[...tables]]);
    if (rows.length === 0) return;
    if (Date.now() > deadline) throw new Error(`VACUUM left pages of ${rows.map((r: { relname: string }) => r.relname).join(', ')} not all-visible for ${timeoutMs} ms: a session holds an old snapshot`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
