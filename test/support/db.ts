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
