import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import { Connection } from '@temporalio/client';

/**
 * `temporal server start-dev` (the pinned CLI of scripts/temporal.js) on free loopback ports: a whole Temporal server
 * (frontend, history, matching, SQLite in memory) with its Web UI, in one process. The test setup starts one per run,
 * `npm run cluster` one for a cluster on this machine.
 */
export interface DevServer {
  /** host:port of the frontend (TEMPORAL_ADDRESS). */
  address: string;
  /** The Web UI, unless headless. */
  uiUrl?: string;
  pid: number;
  process: ChildProcess;
  /** What the server wrote to stderr (its log, at the chosen level), unless it goes to `logFile`. */
  log(): string;
  stop(): Promise<void>;
}

export interface DevServerOptions {
  /** The temporal CLI. */
  cli: string;
  /** Namespaces created at launch (`default` always is). */
  namespaces?: string[];
  /** Dynamic config (`--dynamic-config-value KEY=JSON`). */
  dynamicConfig?: Record<string, unknown>;
  /** Search attributes registered at launch (Herald registers its own at start anyway). */
  searchAttributes?: Record<string, string>;
  headless?: boolean;
  /** A file to keep the server's state in across restarts; in memory when unset. */
  dbFile?: string;
  port?: number;
  uiPort?: number;
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** Where the server's log goes (a file outlives this process); kept in memory when unset. */
  logFile?: string;
  startTimeoutMs?: number;
}

/** A free loopback TCP port (closed again before use: another process could take it, which is unlikely enough here). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export async function startDevServer(opts: DevServerOptions): Promise<DevServer> {
  const port = opts.port ?? (await freePort());
  const uiPort = opts.uiPort ?? (await freePort());
  const [httpPort, metricsPort] = [await freePort(), await freePort()];
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--http-port', String(httpPort),
    '--metrics-port', String(metricsPort), '--log-level', opts.logLevel ?? 'error'];
  if (opts.headless) args.push('--headless');
  else args.push('--ui-port', String(uiPort));
  if (opts.dbFile) args.push('--db-filename', opts.dbFile);
  for (const ns of opts.namespaces ?? []) args.push('--namespace', ns);
  for (const [k, v] of Object.entries(opts.dynamicConfig ?? {})) args.push('--dynamic-config-value', `${k}=${JSON.stringify(v)}`);
  for (const [k, v] of Object.entries(opts.searchAttributes ?? {})) args.push('--search-attribute', `${k}=${v}`);
  const logFd = opts.logFile ? fs.openSync(opts.logFile, 'a') : undefined;
  const child = spawn(opts.cli, args, { stdio: ['ignore', 'ignore', logFd ?? 'pipe'], detached: true });
  if (logFd !== undefined) fs.closeSync(logFd);
  let log = '';
  child.stderr?.setEncoding('utf8').on('data', (s: string) => { log = (log + s).slice(-64 * 1024); });
  const readLog = () => (opts.logFile ? fs.readFileSync(opts.logFile, 'utf8').slice(-64 * 1024) : log);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const address = `127.0.0.1:${port}`;
  const server: DevServer = {
    address,
    ...(opts.headless ? {} : { uiUrl: `http://127.0.0.1:${uiPort}` }),
    pid: child.pid!,
    process: child,
    log: readLog,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      try { process.kill(-child.pid!, 'SIGTERM'); } catch { /* gone */ }
      const timer = setTimeout(() => { try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ } }, 5000);
      await exited;
      clearTimeout(timer);
    },
  };
  // Ready when the frontend answers and every namespace asked for is there.
  const deadline = Date.now() + (opts.startTimeoutMs ?? 60_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`temporal server start-dev exited (${child.exitCode}): ${readLog()}`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: '1s' });
      try {
        for (const namespace of ['default', ...(opts.namespaces ?? [])]) await connection.workflowService.describeNamespace({ namespace });
        return server;
      } finally {
        await connection.close();
      }
    } catch (err) {
      if (Date.now() > deadline) {
        await server.stop();
        throw new Error(`temporal server start-dev did not come up at ${address}: ${(err as Error).message}\n${readLog()}`, { cause: err });
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
