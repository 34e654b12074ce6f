import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { BenchCluster } from './cluster';
import { freePort, sleep } from './proc';

/**
 * PgBouncer (Debian's package) in front of a bench cluster, in transaction pooling mode, for one benchmark run: its
 * configuration, log and pid file live in the cluster's temporary directory, and it stops with the benchmark.
 *
 * Installed when missing (`apt-get install -y pgbouncer`, as root; otherwise the error says to). Debian 12 ships 1.18,
 * which does not carry named prepared statements across server connections (1.21's max_prepared_statements), so
 * Herald runs behind it with DATABASE_PREPARED_STATEMENTS=false.
 */
export interface Bouncer {
  /** The `herald` database through PgBouncer (same user and password as the cluster's URL). */
  url: string;
  version: string;
  poolSize: number;
  pid: number;
  /** A statement on PgBouncer's admin console (SHOW POOLS, SHOW SERVERS, …). */
  admin(sql: string): Promise<Record<string, unknown>[]>;
  stop(): Promise<void>;
}

function binary(): string {
  for (const p of ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer']) if (fs.existsSync(p)) return p;
  if (process.getuid?.() === 0) {
    console.log('pgbouncer is not installed: apt-get install -y pgbouncer');
    execFileSync('apt-get', ['install', '-y', 'pgbouncer'], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    for (const p of ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer']) if (fs.existsSync(p)) return p;
  }
  throw new Error('pgbouncer is not installed: run `apt-get install -y pgbouncer` (Debian) as root, then this benchmark again');
}

export async function startPgBouncer(cluster: BenchCluster, opts: { poolSize: number }): Promise<Bouncer> {
  const bin = binary();
  const version = execFileSync(bin, ['--version'], { encoding: 'utf8' }).split('\n')[0]!.trim();
  const target = new URL(cluster.url);
  const port = await freePort();
  const dir = path.join(cluster.dataDir, 'pgbouncer');
  fs.mkdirSync(dir, { recursive: true });
  const root = process.getuid?.() === 0;
  // PgBouncer refuses to run as root: as root it runs as the postgres user, as the cluster does.
  if (root) execFileSync('chown', ['postgres', dir]);
  const ini = path.join(dir, 'pgbouncer.ini');
  const pidFile = path.join(dir, 'pgbouncer.pid');
  fs.writeFileSync(ini, [
    '[databases]',
    `${target.pathname.slice(1)} = host=${target.hostname} port=${target.port} dbname=${target.pathname.slice(1)} user=${decodeURIComponent(target.username)} password=${decodeURIComponent(target.password)}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    // Loopback only, for a throwaway cluster: no client authentication; the server login is the one above.
    'auth_type = any',
    'pool_mode = transaction',
    `default_pool_size = ${opts.poolSize}`,
    'max_client_conn = 2000',
    'max_db_connections = 0',
    // Herald's connections idle in its pools for long stretches: as deployed, not closed by PgBouncer meanwhile.
    'server_idle_timeout = 600',
    `logfile = ${path.join(dir, 'pgbouncer.log')}`,
    `pidfile = ${pidFile}`,
    'log_connections = 0',
    'log_disconnections = 0',
    '',
  ].join('\n'));
  fs.chmodSync(ini, 0o644);
  const args = root ? ['-u', 'postgres', '--', bin, ini] : [ini];
  const child = spawn(root ? 'runuser' : bin, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  let exited = false;
  child.once('exit', () => { exited = true; });
  const url = `postgres://${target.username}:${target.password}@127.0.0.1:${port}${target.pathname}`;
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.end();
      break;
    } catch (err) {
      if (exited || Date.now() > deadline) throw new Error(`pgbouncer did not start: ${(err as Error).message} (log: ${path.join(dir, 'pgbouncer.log')})`, { cause: err });
      await sleep(100);
    }
  }
  const pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
  // A benchmark that dies (its watchdog, Ctrl-C) leaves no PgBouncer behind.
  const killNow = () => { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } };
  process.once('exit', killNow);
  const adminClient = new pg.Client({ connectionString: `postgres://pgbouncer@127.0.0.1:${port}/pgbouncer` });
  await adminClient.connect();
  return {
    url,
    version,
    poolSize: opts.poolSize,
    pid,
    admin: async (sql) => (await adminClient.query(sql)).rows as Record<string, unknown>[],
    async stop() {
      process.off('exit', killNow);
      await adminClient.end().catch(() => undefined);
      if (exited) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }, 5000);
        child.once('exit', () => { clearTimeout(timer); resolve(); });
        try { process.kill(pid, 'SIGINT'); } catch { resolve(); } // SIGINT: PgBouncer's immediate shutdown
      });
    },
  };
}
