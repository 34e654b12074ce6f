import { realProcess } from './nodeRealm';
import { childPgWarnings, PG_CONCURRENT_QUERY } from './processes';

/**
 * Fails a test file in which pg warned that a client was given a query while it was still executing one
 * (`DeprecationWarning: Calling client.query() when the client is already executing a query`): on pg 9 that is an
 * error. Covers this Jest worker (the app, engine and workers a test runs in-process) and every child a test
 * starts through support/processes.ts (bin/worker.ts, bin/api.ts, bin/start.ts, the CLI), whose stderr is watched
 * there. pg warns once per loaded copy of its module: once per test file here, once per child process there.
 */
const seen: string[] = [];
const onWarning = (warning: Error): void => {
  if (warning.message.includes(PG_CONCURRENT_QUERY)) seen.push(warning.stack ?? String(warning));
};
// Node emits warnings on the real process, not on the copy a test file sees.
realProcess.on('warning', onWarning);

afterAll(() => {
  realProcess.off('warning', onWarning);
  const found = [...seen.map((s) => `in the test process:\n${s}`), ...childPgWarnings().map((s) => `in a child process:\n${s}`)];
  if (found.length > 0) {
    throw new Error(`pg: concurrent queries on one client (deprecated, an error on pg 9):\n\n${found.join('\n\n')}`);
  }
});
