import vm from 'node:vm';
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
// Node emits warnings on the real process. The `process` a test sees is Jest's copy, an event emitter of its own
// that never hears them; code run in Node's main context (outside the test's vm context) gets the real one.
const realProcess = vm.runInThisContext('process') as NodeJS.Process;
realProcess.on('warning', onWarning);

afterAll(() => {
  realProcess.off('warning', onWarning);
  const found = [...seen.map((s) => `in the test process:\n${s}`), ...childPgWarnings().map((s) => `in a child process:\n${s}`)];
  if (found.length > 0) {
    throw new Error(`pg: concurrent queries on one client (deprecated, an error on pg 9):\n\n${found.join('\n\n')}`);
  }
});
