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
 * The advisory lock needs a real session: behind PgBouncer, point workers at PostgreSQL or use session pooling.
 */
export const HEARTBEAT_MS = 3_000;
export const STALE_AFTER_MS = 15_000;
/** The first int4 of the two-key advisory lock: Herald's worker ids, apart from any other use of advisory locks. */
const LOCK_SPACE = 0x48657264; // "Herd"
/** How many default ids a process tries before giving up (as many live workers as that share one database). */
const MAX_SLOTS = 1000;

export class ExecutorIdInUseError extends Error {}

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

/** Takes this process's executor id (see above) and starts its heartbeat. */
export async function claimWorkerIdentity(opts: IdentityOptions): Promise<WorkerIdentity> {
  const { databaseUrl, log } = opts;
  let client = await connect(databaseUrl);
  let executorId: string | undefined;
  try {
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
    await register(client, executorId);
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
  const id = executorId;

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
