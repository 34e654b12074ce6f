import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Where globalSetup leaves the test cluster's coordinates for the test workers (and globalTeardown). */
export const CLUSTER_FILE = path.join(os.tmpdir(), `herald-test-cluster-${process.env.JEST_RUN_ID ?? 'default'}.json`);

export interface ClusterInfo {
  dataDir: string;
  /** Superuser URL of the `postgres` database. */
  adminUrl: string;
  /** URL with the database name replaced by `{db}`. */
  urlPattern: string;
  template: string;
  /** The run's Temporal dev server (test/support/temporal.ts), when the Temporal CLI is there. */
  temporal?: { address: string; uiUrl?: string; pid: number };
}

export function readClusterInfo(): ClusterInfo {
  const raw = process.env.HERALD_TEST_CLUSTER ?? fs.readFileSync(CLUSTER_FILE, 'utf8');
  return JSON.parse(raw) as ClusterInfo;
}
