import os from 'node:os';
import pg from 'pg';
import type { Logger } from '../logging/logger';

/**
 * Who a worker process is, proven to be unique while it lives, and a heartbeat that says it still lives.
 *
 * The executor id names a worker's delivery claims (a restart requeues them at once) and, on the embedded engine, the
 * DBOS workflows it recovers. Two live processes under one id would requeue each other's claims (measured: 1,527
 * duplicates out of 5,000 when two workers on one host both defaulted to `herald-<host>-worker`). So a process holds
 * its id with a session-level advisory lock on a connection of its own, for as long as it runs. PostgreSQL releases the
 * lock when that session ends, however the process died.
 * - EXECUTOR_ID set: the lock is taken or the worker refuses to start, naming the variable and the live holder.
 * - EXECUTOR_ID unset: the process takes the first free id of `herald-1`, `herald-2`, ... A restarted worker, on
 *   any host and under any hostname, thus takes over the id of a worker that died, with its claims and workflows.
 *
 * Liveness: the same connection stamps `workers.heartbeat_at` every HEARTBEAT_MS. The delivery queue of any worker
 * requeues the claims of an id whose heartbeat is older than STALE_AFTER_MS (worker/deliveryQueue.ts): a worker that
 * never comes back costs 15 s, not a lease of minutes.
 *
 * The advisory lock needs a real session: behind a transaction pooler (PgBouncer), a released server connection would
 * keep the lock after the worker died, and another client of the pooler would inherit it. So this connection goes to
 * DATABASE_SESSION_URL (PostgreSQL itself, or a session-mode pool), not through DATABASE_URL's pooler.
 *
 * One pool, one engine, one rate (issue 25): a worker joining a database whose live workers run another ENGINE or
 * SEND_RATE_PER_SECOND would run workflows no other worker sees, or pace the shared queue at its own rate. So a worker
 * compares its settings with those recorded on the pace row (`joinCluster`), and takes its id there, under the row's
 * lock: the first worker records them; one with other values refuses to start, naming the difference, while any worker
 * of the recorded ones lives (holds its id's lock); when none does, its values become the cluster's. Changing the rate
 * is thus: stop every worker, start them all with the new value. (Taking the id before the comparison, as it once was,
 * let workers started together with a new rate see each other as live workers of the old one, and one refused: a
 * worker counts as live only once it has joined.) An API process (which starts workflows on its ENGINE) refuses an
 * engine other than that of the live workers.
 */
export const HEARTBEAT_MS = 3_000;
export const STALE_AFTER_MS = 15_000;
/** The first int4 of the two-key advisory lock: Herald's worker ids, apart from any other use of advisory locks. */
const LOCK_SPACE = 0x48657264; // "Herd"
/** How many default ids a process tries before giving up (as many live workers as that share one database). */
const MAX_SLOTS = 1000;

export class ExecutorIdInUseError extends Error {}
/** A process whose ENGINE or SEND_RATE_PER_SECOND differs from those of the live workers on its database. */
export class ClusterMismatchError extends Error {}

/** What every process of one Herald database must agree on. */
export interface ClusterSettings {
  engine: 'embedded' | 'temporal';
  /** Workers only: the API does not deliver. */
  sendRatePerSecond?: number;
}

export interface WorkerIdentity {
  readonly executorId: string;
  /** Ends the heartbeat and releases the id (the row stays, stale: the next process to take the id reuses it). */
  release(): Promise<void>;
}

export interface IdentityOptions {
  databaseUrl: string;
  log: Logger;
  /** EXECUTOR_ID: this id or none. */
  requested?: string;
  /** This worker's engine and rate: checked against (or recorded as) the cluster's before the id is registered. */
  cluster?: ClusterSettings;
  /** Called when the id cannot be held any longer: the database session was lost and another process now holds it. */
  onLost(err: Error): void;
  heartbeatMs?: number;
}

async function connect(databaseUrl: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'herald worker identity' });
  await client.connect();
  return client;
}

async function tryLock(client: pg.Client, id: string): Promise<boolean> {
  const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::int, hashtext($2)) AS ok', [LOCK_SPACE, id]);
  return rows[0]!.ok;
}

async function register(client: pg.Client, id: string): Promise<void> {
  await client.query(
    `INSERT INTO workers (executor_id, host, pid, started_at, heartbeat_at) VALUES ($1, $2, $3, now(), now())
     ON CONFLICT (executor_id) DO UPDATE SET host = excluded.host, pid = excluded.pid, started_at = now(), heartbeat_at = now()`,
    [id, os.hostname(), process.pid],
  );
}

/** The workers other than this session that hold their id now (see above), by executor id, with host and pid. */
async function liveWorkers(client: pg.Client): Promise<string[]> {
  const { rows } = await client.query<{ executor_id: string; host: string; pid: number }>(
    `SELECT w.executor_id, w.host, w.pid FROM workers w
     WHERE EXISTS (SELECT 1 FROM pg_locks l
       WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.pid <> pg_backend_pid()
         AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
         AND l.classid::text::bigint = $1 AND l.objid::text::bigint = (hashtext(w.executor_id)::bigint & 4294967295))
     ORDER BY w.executor_id`,
    [LOCK_SPACE],
  );
  return rows.map((r) => `${r.executor_id} (host ${r.host}, pid ${r.pid})`);
}

const describeSettings = (engine: string, rate: number | undefined) => `ENGINE=${engine}${rate === undefined ? '' : ` at SEND_RATE_PER_SECOND=${rate}`}`;

/**
 * Compares `wanted` with the cluster's settings on the pace row, under that row's lock (so two workers starting at once
 * with different values cannot both win): records them when none are recorded, or when they differ and no other worker
 * lives (with `sendRatePerSecond` only: the API records nothing); refuses when they differ and one does. A worker's
 * `takeId` runs first under that lock (see the top of this file); a refusal leaves the id to the caller to release.
 */
export async function joinCluster(client: pg.Client, wanted: ClusterSettings, log: Logger, takeId?: () => Promise<void>): Promise<void> {
  await client.query('BEGIN');
  try {
    const { rows: [pace] } = await client.query<{ engine: string | null; send_rate_per_second: number | null }>(
      "SELECT engine, send_rate_per_second FROM delivery_pace WHERE name = 'email' FOR UPDATE");
    await takeId?.();
    const recorded = pace?.engine ? { engine: pace.engine, rate: pace.send_rate_per_second === null ? undefined : Number(pace.send_rate_per_second) } : undefined;
    const differences = recorded ? [
      ...(recorded.engine !== wanted.engine ? ['ENGINE'] : []),
      ...(wanted.sendRatePerSecond !== undefined && recorded.rate !== wanted.sendRatePerSecond ? ['SEND_RATE_PER_SECOND'] : []),
    ] : [];
    if (recorded && differences.length) {
      const live = await liveWorkers(client);
      if (live.length) {
        throw new ClusterMismatchError(`this database's workers run ${describeSettings(recorded.engine, recorded.rate)} (live: ${live.join(', ')}); `
          + `this process has ${describeSettings(wanted.engine, wanted.sendRatePerSecond)}: ${differences.join(' and ')} differ${differences.length === 1 ? 's' : ''}. `
          + 'Start it with the same values, or, to change the cluster\'s, stop every worker and start them all with the new values (README, "Changing the engine or the send rate").');
      }
      if (wanted.sendRatePerSecond !== undefined) {
        log.warn({ from: describeSettings(recorded.engine, recorded.rate), to: describeSettings(wanted.engine, wanted.sendRatePerSecond) }, 'no worker of the cluster\'s settings is running: this worker\'s become the cluster\'s');
      }
    }
    if (wanted.sendRatePerSecond !== undefined && (!recorded || differences.length)) {
      await client.query("UPDATE delivery_pace SET engine = $1, send_rate_per_second = $2 WHERE name = 'email'", [wanted.engine, wanted.sendRatePerSecond]);
    }
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/** For an API process: refuses an ENGINE other than that of the live workers (joinCluster without a rate). */
export async function checkClusterEngine(databaseUrl: string, engine: ClusterSettings['engine'], log: Logger): Promise<void> {
  const client = await connect(databaseUrl);
  try {
    await joinCluster(client, { engine }, log);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Takes this process's executor id (see above) and starts its heartbeat. */
export async function claimWorkerIdentity(opts: IdentityOptions): Promise<WorkerIdentity> {
  const { databaseUrl, log } = opts;
  let client = await connect(databaseUrl);
  let executorId: string | undefined;
  // A session-level advisory lock: it outlives the transaction of joinCluster it is taken in, and ends with the session.
  const takeId = async () => {
    if (opts.requested) {
      if (!(await tryLock(client, opts.requested))) {
        const { rows } = await client.query<{ host: string; pid: number; started_at: Date }>('SELECT host, pid, started_at FROM workers WHERE executor_id = $1', [opts.requested]);
        const holder = rows[0] ? ` (host ${rows[0].host}, pid ${rows[0].pid}, since ${rows[0].started_at.toISOString()})` : '';
        throw new ExecutorIdInUseError(`EXECUTOR_ID=${opts.requested} is held by a live Herald worker${holder}. `
          + 'Give each worker process an EXECUTOR_ID of its own, or leave EXECUTOR_ID unset and Herald takes a free one.');
      }
      executorId = opts.requested;
    } else {
      for (let slot = 1; slot <= MAX_SLOTS && !executorId; slot++) {
        if (await tryLock(client, `herald-${slot}`)) executorId = `herald-${slot}`;
      }
      if (!executorId) throw new ExecutorIdInUseError(`all of herald-1 to herald-${MAX_SLOTS} are held by live workers; set EXECUTOR_ID`);
    }
  };
  try {
    if (opts.cluster) await joinCluster(client, opts.cluster, log, takeId);
    else await takeId();
    await register(client, executorId!);
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
  const id = executorId!;

  let released = false;
  let beating: Promise<void> = Promise.resolve();
  const onError = (err: Error) => log.warn({ err: err.message }, 'worker identity: database session lost; reconnecting');
  client.on('error', onError);

  /**
   * One heartbeat. After a lost session (a database restart, a network cut), the id must be taken again: the lock
   * went with the session. Meanwhile other workers may have requeued this one's claims; that costs duplicates of the
   * sends in flight, no more. If another process took the id in between, this one must not go on under it.
   */
  const beat = async () => {
    try {
      await client.query('UPDATE workers SET heartbeat_at = now() WHERE executor_id = $1', [id]);
    } catch {
      if (released) return;
      const fresh = await connect(databaseUrl).catch(() => undefined);
      if (!fresh) return; // the next beat tries again
      client.removeListener('error', onError);
      void client.end().catch(() => undefined);
      client = fresh;
      client.on('error', onError);
      if (await tryLock(client, id)) {
        await register(client, id);
        log.info({ executorId: id }, 'worker identity: session restored, id held again');
      } else {
        released = true;
        clearInterval(timer);
        opts.onLost(new ExecutorIdInUseError(`EXECUTOR_ID=${id} was taken by another process while this one had lost its database session`));
      }
    }
  };
  const timer = setInterval(() => { beating = beating.then(beat).catch(() => undefined); }, opts.heartbeatMs ?? HEARTBEAT_MS);
  timer.unref();

  return {
    executorId: id,
    async release() {
      if (released) return;
      released = true;
      clearInterval(timer);
      await beating;
      client.removeListener('error', onError);
      // Ending the session releases the lock.
      await client.end().catch(() => undefined);
    },
  };
}
