import knexFactory, { type Knex } from 'knex';
import { Model } from 'objection';
import pg from 'pg';
import type { Config } from '../config';
import type { Logger } from '../logging/logger';
import { attachEmbeddedPostgres, type EmbeddedCluster } from './embedded';
import { migrationSource } from './migrations';
import { parseTimestamptz } from './timestamps';

// COUNT(*) and other int8 values come back as strings by default; our counts fit comfortably in a JS number.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
// A timestamptz read by position (db/timestamps.ts: the same Date as pg's parser, in a third of the time).
pg.types.setTypeParser(pg.types.builtins.TIMESTAMPTZ, parseTimestamptz);

export interface Database {
  knex: Knex;
  /** Connection URL in use (holds a password: never log it). */
  url: string;
  /**
   * Where a connection that needs a session of its own goes (a session-level advisory lock, LISTEN): DATABASE_SESSION_URL
   * when `url` is a transaction pooler's, else `url` itself. Holds a password too.
   */
  sessionUrl: string;
  close(): Promise<void>;
}

export interface KnexOptions {
  poolMax?: number;
  applicationName?: string;
  /**
   * false: statements that Herald names (db/prepared.ts, knex's `.options({ name })`) are sent unnamed, as the
   * connection is then a transaction pooler's (DATABASE_PREPARED_STATEMENTS).
   */
  preparedStatements?: boolean;
}

export function createKnex(url: string, opts: KnexOptions = {}): Knex {
  return knexFactory({
    client: 'pg',
    connection: { connectionString: url, application_name: opts.applicationName ?? 'herald' },
    pool: {
      min: 0,
      max: opts.poolMax ?? 10,
      ...(opts.preparedStatements === false ? { afterCreate: (connection: pg.Client, done: (err: Error | null, c: pg.Client) => void) => done(null, withoutStatementNames(connection)) } : {}),
    },
    migrations: { migrationSource, tableName: 'knex_migrations' },
  });
}

/**
 * A pg connection that sends every statement unnamed. Behind a transaction pooler, consecutive transactions of one
 * client connection run on different server connections: a statement that pg prepared by name on one (and then only
 * binds, believing it prepared) is unknown on the next (`prepared statement "herald_admit" does not exist`), and one
 * that another client prepared there collides (`already exists`; BENCHMARKS.md §34 measured both). PgBouncer
 * 1.21 and later carry named statements across its server connections (max_prepared_statements); Debian 12's 1.18
 * does not. One place for every named statement, Herald's (db/prepared.ts) and knex's (`.options({ name })`) alike.
 */
function withoutStatementNames(connection: pg.Client): pg.Client {
  const query = connection.query.bind(connection) as (...args: unknown[]) => unknown;
  (connection as unknown as { query: (...args: unknown[]) => unknown }).query = (config: unknown, ...rest: unknown[]) => {
    // A config object loses its name, and so does a pg Query submitted as it is (db/prepared.ts's generic plans);
    // another submittable (a COPY stream, a cursor) is passed as it is.
    if (config instanceof pg.Query) (config as { name?: string }).name = undefined;
    const named = typeof config === 'object' && config !== null && typeof (config as { submit?: unknown }).submit !== 'function' && (config as { name?: unknown }).name;
    return query(named ? { ...config, name: undefined } : config, ...rest);
  };
  return connection;
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
export async function openDatabase(config: Pick<Config, 'databaseUrl' | 'dataDir'> & Partial<Pick<Config, 'databaseSessionUrl' | 'databasePreparedStatements'>>, log?: Logger, opts: KnexOptions & { migrate?: boolean } = {}): Promise<Database> {
  let cluster: EmbeddedCluster | undefined;
  let url = config.databaseUrl;
  if (!url) {
    cluster = await attachEmbeddedPostgres({ dataDir: config.dataDir, log });
    url = cluster.url;
  }
  const knex = createKnex(url, { ...(config.databasePreparedStatements === false ? { preparedStatements: false } : {}), ...opts });
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
    sessionUrl: config.databaseSessionUrl ?? url,
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
