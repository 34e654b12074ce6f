/**
 * A Herald process for the benchmarks, exactly as bin/api.ts or bin/worker.ts start it (startHerald with the
 * configuration from the environment), plus IPC: it says `ready` (with the API port) once it serves, and on request
 * reports the SQL statements its knex pool ran (BENCH_COUNT_QUERIES=1) and its memory (process.memoryUsage()), and
 * writes a heap snapshot.
 * Roles: BENCH_ROLES = api | worker | all.
 * BENCH_STATIC_DIR (bench/consolePages.ts): `/bench-static/<name>/…` is answered, on the same port, by the console's own
 * file server (api/console.ts `consoleApp`) over `<BENCH_STATIC_DIR>/<name>` instead of dist/web: static pages built
 * beside the console, served by the same process and the same code as the console's files.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import Koa from 'koa';
import { consoleApp } from '../../api/console';
import { configOrExit, startHerald, stopOnSignals } from '../../bin/runtime';

const roles = process.env.BENCH_ROLES ?? 'api';
const counts = new Map<string, number>();

startHerald(configOrExit(), { api: roles !== 'worker', worker: roles !== 'api' }).then((running) => {
  stopOnSignals(running);
  if (process.env.BENCH_STATIC_DIR && running.server) serveStaticPages(running.server, process.env.BENCH_STATIC_DIR);
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

/**
 * Puts `/bench-static/<name>/<rest>` in front of Herald's own request listener: each name is a Koa app of
 * `consoleApp({ dir: <root>/<name> })`, asked for `/app/<rest>` (so index.html, `no-cache` with an ETag, and the assets,
 * brotli or gzip from their precompressed files with a year of cache, exactly as the console's are served). Herald's
 * request id and metrics middleware are not in front of these (microseconds a request): the static page can only be
 * the faster for it.
 */
function serveStaticPages(server: Server, root: string): void {
  const herald = server.listeners('request')[0] as (req: IncomingMessage, res: ServerResponse) => void;
  const apps = new Map<string, (req: IncomingMessage, res: ServerResponse) => void>();
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const m = /^\/bench-static\/([a-z0-9-]+)(\/[^?]*)?(\?.*)?$/.exec(req.url ?? '');
    if (!m) return herald(req, res);
    let handle = apps.get(m[1]!);
    if (!handle) {
      const app = new Koa();
      app.use(consoleApp({ dir: path.join(root, m[1]!) }));
      handle = app.callback();
      apps.set(m[1]!, handle);
    }
    req.url = `/app${m[2] ?? ''}${m[3] ?? ''}`;
    handle(req, res);
  });
}
