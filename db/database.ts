import knexFactory, { type Knex } from 'knex';
import { Model } from 'objection';
import pg from 'pg';
import type { Config } from '../config';
import type { Logger } from '../logging/logger';
import { attachEmbeddedPostgres, type EmbeddedCluster } from './embedded';
import { migrationSource } from './migrations';

// COUNT(*) and other int8 values come back as strings by default; our counts fit comfortably in a JS number.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export interface Database {
  knex: Knex;
  /** Connection URL in use (holds a password: never log it). */
  url: string;
  close(): Promise<void>;
}

export interface KnexOptions {
  poolMax?: number;
  applicationName?: string;
}

export function createKnex(url: string, opts: KnexOptions = {}): Knex {
  return knexFactory({
    client: 'pg',
    connection: { connectionString: url, application_name: opts.applicationName ?? 'herald' },
    pool: { min: 0, max: opts.poolMax ?? 10 },
    migrations: { migrationSource, tableName: 'knex_migrations' },
  });
}

/** Runs pending migrations. Several processes may start at once: the one holding knex's lock migrates, the others wait for it. */
/** Whether `db` is a transaction (the caller's), not the pool: a query helper then runs in it instead of opening one. */
export function isTransaction(db: Knex | Knex.Transaction): db is Knex.Transaction {
  return (db as Knex.Transaction).isTransaction === true;
}

export async function migrate(knex: Knex, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await knex.migrate.latest();
      return;
    } catch (err) {
      if ((err as Error).name !== 'MigrationLocked' || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/**
 * Opens the database of the configuration: `DATABASE_URL` when set, otherwise the embedded cluster under
 * `DATA_DIR/pg` (attached when another Herald process runs it, started otherwise). Binds Objection's models.
 */
export async function openDatabase(config: Pick<Config, 'databaseUrl' | 'dataDir'>, log?: Logger, opts: KnexOptions & { migrate?: boolean } = {}): Promise<Database> {
  let cluster: EmbeddedCluster | undefined;
  let url = config.databaseUrl;
  if (!url) {
    cluster = await attachEmbeddedPostgres({ dataDir: config.dataDir, log });
    url = cluster.url;
  }
  const knex = createKnex(url, opts);
  try {
    if (opts.migrate !== false) await migrate(knex);
  } catch (err) {
    await knex.destroy();
    await cluster?.release();
    throw err;
  }
  Model.knex(knex);
  return {
    knex,
    url,
    async close() {
      await knex.destroy();
      await cluster?.release();
    },
  };
}

/** True when the database answers a trivial query within the timeout (health checks). */
export async function ping(knex: Knex, timeoutMs = 2000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      knex.raw('SELECT 1'),
      new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('timeout')), timeoutMs); }),
    ]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}
