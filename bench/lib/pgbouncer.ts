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
    `${target.pathname.slice(1)} = host=${target.searchParams.get('host') ?? target.hostname} port=${target.port} dbname=${target.pathname.slice(1)} user=${decodeURIComponent(target.username)} password=${decodeURIComponent(target.password)}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    // Loopback only, for a throwaway cluster: no client authentication; the server login is the one above.
    'auth_type = any',
    'admin_users = pgbouncer',
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

/**
 * What transaction pooling does to the session features Herald uses, each tried through `bouncer` (pool of at least
 * 2 server connections) and reported in a line: named prepared statements, a session-level advisory lock, SET outside
 * a transaction (a tracked and an untracked parameter), LISTEN/NOTIFY, and the `options` startup parameter.
 */
export async function probeTransactionPooling(cluster: BenchCluster, bouncer: Bouncer): Promise<string[]> {
  const lines: string[] = [];
  const client = async (url = bouncer.url) => { const c = new pg.Client({ connectionString: url }); await c.connect(); return c; };
  // Named statements from two clients at once: pg prepares a name once per client connection, PgBouncer hands it
  // whichever server connection is free.
  for (const named of [true, false]) {
    const clients = await Promise.all(Array.from({ length: 6 }, () => client()));
    const errors = new Map<string, number>();
    let ok = 0;
    await Promise.all(clients.map(async (c, i) => {
      for (let j = 0; j < 30; j++) {
        try {
          await c.query(named ? { name: 'herald_probe', text: 'SELECT $1::int + 1 AS n', values: [i * 100 + j] } : { text: 'SELECT $1::int + 1 AS n', values: [i * 100 + j] });
          ok++;
        } catch (err) {
          const m = (err as Error).message;
          errors.set(m, (errors.get(m) ?? 0) + 1);
        }
      }
    }));
    await Promise.all(clients.map((c) => c.end()));
    lines.push(`${named ? 'named' : 'unnamed'} statements, 6 clients × 30: ${ok} of 180 answered${errors.size ? `; ${[...errors].map(([m, n]) => `${n} × "${m}"`).join(', ')}` : ''}`);
  }
  const key = 0x48657264;
  const a = await client();
  const took = (await a.query('SELECT pg_try_advisory_lock($1::int, 7) AS ok', [key])).rows[0].ok as boolean;
  await a.end();
  await sleep(200);
  const held = (await cluster.knex.raw("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND classid::text::bigint = ? AND objid = 7", [key])).rows[0].n as number;
  const others = await Promise.all([1, 2, 3, 4].map(() => client()));
  const got = await Promise.all(others.map(async (c) => (await c.query('SELECT pg_try_advisory_lock($1::int, 7) AS ok', [key])).rows[0].ok as boolean));
  await Promise.all(others.map((c) => c.end()));
  lines.push(`session advisory lock: taken (${took}), its client gone, still held by ${held} server connection(s); 4 new clients try it: ${got.map(String).join(', ')}`);
  await bouncer.admin('KILL herald');
  await bouncer.admin('RESUME herald');
  const t = await client();
  const u = await client();
  await t.query("SET TIME ZONE 'Pacific/Auckland'");
  await t.query("SET statement_timeout = '1234ms'");
  // Ten reads from each client, two at a time, so that they meet each other's server connections.
  const seen = { tz: [0, 0], st: [0, 0] };
  for (let i = 0; i < 10; i++) {
    const [a1, b1] = await Promise.all([t.query('SELECT current_setting($1) AS tz, current_setting($2) AS st, pg_sleep(0.01)', ['TimeZone', 'statement_timeout']), u.query('SELECT current_setting($1) AS tz, current_setting($2) AS st, pg_sleep(0.01)', ['TimeZone', 'statement_timeout'])]);
    if (a1.rows[0].tz === 'Pacific/Auckland') seen.tz[0]!++;
    if (b1.rows[0].tz === 'Pacific/Auckland') seen.tz[1]!++;
    if (a1.rows[0].st === '1234ms') seen.st[0]!++;
    if (b1.rows[0].st === '1234ms') seen.st[1]!++;
  }
  await Promise.all([t.end(), u.end()]);
  lines.push(`SET outside a transaction, then 10 reads from its client and 10 from another: TimeZone (a parameter PgBouncer tracks) seen by ${seen.tz[0]} and ${seen.tz[1]}; statement_timeout (not tracked) seen by ${seen.st[0]} and ${seen.st[1]}`);
  await bouncer.admin('KILL herald');
  await bouncer.admin('RESUME herald');
  const l = await client();
  let heard = 0;
  l.on('notification', () => { heard++; });
  await l.query('LISTEN herald_probe');
  const n = await client();
  await n.query("NOTIFY herald_probe, 'x'");
  await sleep(1000);
  await Promise.all([l.end(), n.end()]);
  lines.push(`LISTEN, then NOTIFY from another client: ${heard} notification(s) heard in 1 s`);
  try {
    const o = await client(`${bouncer.url}?options=${encodeURIComponent('-c idle_in_transaction_session_timeout=60000')}`);
    await o.end();
    lines.push('the options startup parameter (DBOS\'s connections carry one): accepted');
  } catch (err) {
    lines.push(`the options startup parameter (DBOS's connections carry one): refused, "${(err as Error).message}"`);
  }
  return lines;
}
