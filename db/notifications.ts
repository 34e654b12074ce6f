import pg from 'pg';
import type { Logger } from '../logging/logger';

/**
 * PostgreSQL's LISTEN/NOTIFY between Herald's processes: news that lets a loop look at once instead of at its next poll
 * (engine/queueWake.ts: DBOS's enqueued workflows; worker/emailNews.ts: emails committed to the delivery queue). News is
 * a hint, never the only way: what a lost notification leaves, the loops' own polls find.
 */

/**
 * Sends notifications through one connection of its own, opened on the first one: a process that never notifies holds
 * none. A failed notification is logged, never thrown (the pollers find what it announced).
 */
export function notifier(databaseUrl: string, log: Logger): { notify(channel: string, payload: string): Promise<void>; close(): Promise<void> } {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1, idleTimeoutMillis: 60_000 });
  pool.on('error', (err) => log.warn({ err }, 'notification connection failed'));
  return {
    async notify(channel, payload) {
      await pool.query('SELECT pg_notify($1, $2)', [channel, payload])
        .catch((err: unknown) => log.warn({ err, channel }, 'could not notify the other processes; their polls find what it announced'));
    },
    close: () => pool.end(),
  };
}

/**
 * LISTENs on `channels` on a session of its own (a transaction pooler hears nothing: give it DATABASE_SESSION_URL) and
 * hands each notification to `heard`. A lost connection is opened again after a second; what was notified meanwhile
 * waits for the pollers.
 */
export async function listen(databaseUrl: string, channels: readonly string[], log: Logger, heard: (channel: string, payload: string) => void): Promise<{ stop(): Promise<void> }> {
  let stopped = false;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  const again = (err?: unknown) => {
    if (stopped) return;
    log.warn({ err, channels }, 'lost the notifications; listening again in 1 s');
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
    c.on('notification', (n) => { if (channels.includes(n.channel)) heard(n.channel, n.payload ?? ''); });
    const early = () => undefined; // a failed connect rejects below; pg may also emit it
    c.on('error', early);
    try {
      await c.connect();
      for (const channel of channels) await c.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
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
