import type { Server } from 'node:http';
import { createApp } from '../api/app';
import { ConfigError, loadConfig, type Config } from '../config';
import { openDatabase, type Database } from '../db/database';
import { createLogger, type Logger } from '../logging/logger';
import { ensureDefaultProject, type CreatedProject } from '../projects/service';

/** Reads the configuration or exits with the message that names the bad variable. */
export function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
}

function printDefaultProject(project: CreatedProject, port: number): void {
  // Shown once, on stdout and not through the logger: these keys are stored only as hashes.
  console.log(`
Herald created the project "Default" (${project.id}). Its API keys are shown only this once:
  secret key: ${project.secretKey}
  public key: ${project.publicKey}

Try it:
  curl -X POST http://localhost:${port}/contacts \\
    -H "Authorization: Bearer ${project.secretKey}" -H "Content-Type: application/json" \\
    -d '{"email":"ada@example.com","data":{"firstName":"Ada"}}'
`);
}

export interface Running {
  config: Config;
  log: Logger;
  db: Database;
  server: Server;
  stop(): Promise<void>;
}

/** Starts the HTTP API on the configured database; returns once it listens. */
export async function startApi(config: Config, log: Logger = createLogger(config.logLevel)): Promise<Running> {
  const db = await openDatabase(config, log);
  const created = await ensureDefaultProject(db.knex);
  const app = createApp({ knex: db.knex, log, apiRateLimitPerMinute: config.apiRateLimitPerMinute });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(config.port, () => resolve(s));
    s.once('error', reject);
  });
  const port = (server.address() as { port: number }).port;
  if (created) printDefaultProject(created, port);
  log.info({ port, engine: config.engine, database: config.databaseUrl ? 'external' : 'embedded', dataDir: config.dataDir }, 'Herald API listening');

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      log.info('shutting down');
      // Stop accepting connections and let in-flight requests finish before the pool goes away.
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await db.close();
    })();
    return stopping;
  };
  return { config, log, db, server, stop };
}

/** Runs until SIGTERM/SIGINT, then shuts down gracefully. */
export function stopOnSignals(running: Pick<Running, 'stop' | 'log'>): void {
  const onSignal = (signal: NodeJS.Signals) => {
    running.log.info({ signal }, 'signal received');
    running.stop().then(() => process.exit(0), (err) => {
      running.log.error({ err }, 'shutdown failed');
      process.exit(1);
    });
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
}
