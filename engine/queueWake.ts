import pg from 'pg';
import { wfQueueRunner } from '@dbos-inc/dbos-sdk/internal/wfqueue';
import { DBOSExecutor } from '@dbos-inc/dbos-sdk/internal/dbos-executor';
import type { Logger } from '../logging/logger';

/**
 * Enqueued workflows start at once instead of at their queue's next poll.
 *
 * DBOS 5.3.0 (the newest) finds enqueued workflows only by polling each queue on a timer, a transaction of several
 * statements per queue per poll and per worker. Polled every 100 ms, an idle worker spent ~25 % of a core on it and on
 * PostgreSQL's side; and a campaign started through the API waited for the next poll (50 ms on average) before its
 * workflow ran (BENCHMARKS.md section 44). So an enqueue is announced (`NOTIFY`, its queue's name as the payload) and
 * every worker listens: the one that hears it polls that queue at once, with the queue runner's own poll (the rows are
 * claimed with SKIP LOCKED, so the workers that hear the same news share it as their timers' polls do). The timers
 * stay, rarer (EMBEDDED_QUEUE_POLL_MS), for what no one announces: a notification lost with a dropped connection, and
 * delayed starts (a scheduled campaign), which DBOS moves to the queue by its own clock.
 *
 * The poll is internal to DBOS (its queue runner's `pollQueue`, reached through the package's `internal/*` exports),
 * which is why the version is pinned; test/engine/queueWake.test.ts fails if a new version moves it.
 */
export const ENQUEUED_CHANNEL = 'herald_dbos_enqueued';

/** How often a worker polls each DBOS queue besides the announcements. */
export const EMBEDDED_QUEUE_POLL_MS = 1000;

/** What Herald uses of DBOS's queue runner: private in its types, stable in 5.3.0. */
interface QueueRunnerInternals {
  isRunning: boolean;
  states: Map<string, { queue: unknown }>;
  pollQueue(exec: unknown, queue: unknown): Promise<boolean>;
  /** Reads the queues table into `states`: DBOS does it once a second, so a queue registered after launch is unknown until then. */
  refreshDbQueues(exec: unknown, now: number): Promise<void>;
}

/** Whether this DBOS exposes the poll the wake-ups use (test/engine/queueWake.test.ts). */
export function queuePollAvailable(): boolean {
  const runner = wfQueueRunner as unknown as Partial<QueueRunnerInternals>;
  return typeof runner.pollQueue === 'function' && typeof runner.refreshDbQueues === 'function' && runner.states instanceof Map;
}

/**
 * Polls a queue of the DBOS launched in this process now, once per call, never two polls of one queue at once from
 * here: news that arrives during a poll makes one more after it (the poll may have begun before the enqueue committed).
 */
export function queuePoller(log: Logger): (queue: string) => void {
  const runner = wfQueueRunner as unknown as QueueRunnerInternals;
  const polling = new Set<string>();
  const again = new Set<string>();
  return (queue) => {
    if (polling.has(queue)) {
      again.add(queue);
      return;
    }
    polling.add(queue);
    void (async () => {
      try {
        do {
          again.delete(queue);
          const exec = DBOSExecutor.globalInstance;
          if (!runner.isRunning || !exec) return;
          // A queue registered since the runner last read the table (within a second of launch) is read now.
          if (!runner.states.has(queue)) await runner.refreshDbQueues(exec, Date.now());
          const state = runner.states.get(queue);
          if (!state) return;
          await runner.pollQueue(exec, state.queue);
        } while (again.has(queue));
      } catch (err) {
        log.warn({ err, queue }, 'could not poll the workflow queue at once; its timer will');
      } finally {
        polling.delete(queue);
      }
    })();
  };
}

/** Announces an enqueue on `queue` (see above). Never fails the start: the timers find what an announcement misses. */
export function enqueueAnnouncer(databaseUrl: string, log: Logger) {
  // One connection, opened on the first announcement: an API that starts no workflow holds none.
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1, idleTimeoutMillis: 60_000 });
  pool.on('error', (err) => log.warn({ err }, 'workflow announcement connection failed'));
  return {
    async announce(queue: string): Promise<void> {
      await pool.query('SELECT pg_notify($1, $2)', [ENQUEUED_CHANNEL, queue])
        .catch((err: unknown) => log.warn({ err, queue }, 'could not announce an enqueued workflow; a worker polls for it'));
    },
    close: () => pool.end(),
  };
}

/**
 * Listens for announced enqueues and hands each queue's name to `heard`. A lost connection is opened again after a
 * second (what was announced meanwhile waits for the timers).
 */
export async function listenForEnqueues(databaseUrl: string, log: Logger, heard: (queue: string) => void): Promise<{ stop(): Promise<void> }> {
  let stopped = false;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  const again = (err?: unknown) => {
    if (stopped) return;
    log.warn({ err }, 'lost the workflow announcements; listening again in 1 s');
    retry = setTimeout(() => { connect().catch(again); }, 1000);
  };
  const connect = async (): Promise<void> => {
    const c = new pg.Client({ connectionString: databaseUrl });
    let gone = false;
    const lost = (err?: Error) => {
      if (gone) return;
      gone = true;
      if (client === c) client = undefined;
      c.end().catch(() => undefined);
      again(err);
    };
    c.on('notification', (n) => { if (n.channel === ENQUEUED_CHANNEL && n.payload) heard(n.payload); });
    const early = () => undefined; // a failed connect rejects below; pg may also emit it
    c.on('error', early);
    try {
      await c.connect();
      await c.query(`LISTEN ${ENQUEUED_CHANNEL}`);
    } catch (err) {
      gone = true;
      c.end().catch(() => undefined);
      throw err;
    }
    c.off('error', early);
    c.on('error', lost);
    c.on('end', () => lost());
    client = c;
  };
  await connect();
  return {
    async stop() {
      stopped = true;
      clearTimeout(retry);
      const c = client;
      client = undefined;
      c?.removeAllListeners('end');
      await c?.end().catch(() => undefined);
    },
  };
}
