import fs from 'node:fs';
import path from 'node:path';
import { readClusterInfo } from './cluster';

/**
 * The Temporal side of the test run: globalSetup starts one `temporal server start-dev` (the pinned CLI, installed by
 * scripts/temporal.js) with a namespace per test file of test/temporal/, so files running in parallel never take each
 * other's tasks (Herald's task queue names are fixed). Under CI=true a missing CLI fails the run; elsewhere the Temporal
 * suites skip with one line that says how to get it.
 */

const TEMPORAL_TESTS = path.resolve(__dirname, '..', 'temporal');

/** The namespace of a test file of test/temporal/. */
export function namespaceOf(testFile: string): string {
  return `herald-${path.basename(testFile).replace(/\.test\.ts$/, '').replace(/[^A-Za-z0-9-]/g, '-').toLowerCase()}`;
}

/** One namespace per test file of test/temporal/ (created by the dev server at launch). */
export function testNamespaces(): string[] {
  return fs.readdirSync(TEMPORAL_TESTS).filter((f) => f.endsWith('.test.ts')).map(namespaceOf);
}

export interface TestTemporal {
  address: string;
  namespace: string;
  uiUrl?: string;
}

/** Why the Temporal suites skip here (set by globalSetup when the CLI is missing outside CI). */
export const SKIP_FILE_ENV = 'HERALD_TEST_TEMPORAL_SKIP';

/** The dev server and this file's namespace, or undefined (with the reason printed once) when there is none. */
export function testTemporal(testFile: string): TestTemporal | undefined {
  const info = readClusterInfo().temporal;
  if (!info) return undefined;
  return { address: info.address, namespace: namespaceOf(testFile), ...(info.uiUrl ? { uiUrl: info.uiUrl } : {}) };
}

/**
 * Registers the file's tests when a Temporal server is there, or one skipped test that says how to get the CLI
 * (never under CI: globalSetup has already failed the run).
 */
export function describeTemporal(testFile: string, name: string, body: (temporal: TestTemporal) => void): void {
  const temporal = testTemporal(testFile);
  if (temporal) {
    describe(name, () => body(temporal));
    return;
  }
  const reason = `skipped: ${process.env[SKIP_FILE_ENV] ?? 'no Temporal dev server in this run'}`;
  process.stdout.write(`${reason}\n`);
  test.skip(reason, () => undefined);
}
