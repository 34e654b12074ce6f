/**
 * A Herald process for the benchmarks, exactly as bin/api.ts or bin/worker.ts start it (startHerald with the
 * configuration from the environment), plus IPC: it says `ready` (with the API port) once it serves, and on request
 * reports the SQL statements its knex pool ran (BENCH_COUNT_QUERIES=1) and its memory (process.memoryUsage()), and
 * writes a heap snapshot.
 * Roles: BENCH_ROLES = api | worker | all.
 */
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import { configOrExit, startHerald, stopOnSignals } from '../../bin/runtime';

const roles = process.env.BENCH_ROLES ?? 'api';
const counts = new Map<string, number>();

startHerald(configOrExit(), { api: roles !== 'worker', worker: roles !== 'api' }).then((running) => {
  stopOnSignals(running);
  if (process.env.BENCH_COUNT_QUERIES === '1') {
    running.db.knex.on('query', (q: { sql: string }) => {
      const sql = q.sql.replace(/\s+/g, ' ').slice(0, 140);
      counts.set(sql, (counts.get(sql) ?? 0) + 1);
    });
  }
  process.on('message', (m: { type?: string }) => {
    if (m.type === 'queries') {
      process.send!({ type: 'queries', counts: [...counts].sort((a, b) => b[1] - a[1]) });
      counts.clear();
    } else if (m.type === 'mem') {
      process.send!({ type: 'mem', ...process.memoryUsage() });
    } else if (m.type === 'heap-snapshot') {
      // Diagnostics: what is live (a snapshot holds only reachable objects), and the memory after a full GC.
      const file = v8.writeHeapSnapshot(path.join((m as { dir?: string }).dir ?? os.tmpdir(), `herald-${process.pid}-${Date.now()}.heapsnapshot`));
      process.send!({ type: 'heap-snapshot', file, ...process.memoryUsage() });
    }
  });
  const port = running.server ? (running.server.address() as AddressInfo).port : undefined;
  process.send!({ type: 'ready', port });
}, (err: Error) => {
  console.error(`Herald failed to start: ${err.stack ?? err.message}`);
  process.exit(1);
});
