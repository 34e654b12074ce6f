import type { Knex } from 'knex';
import { rateWindow } from '../mail/transport';

/**
 * A sliding-window gate shared by every worker, for low send rates (SHARED_WINDOW_MAX_RATE and below): a send may begin
 * only while (sends completed within the last window) + (sends in flight) < limit, counted across all workers in
 * PostgreSQL. Each message reaches the SMTP server after its send began and before it completed, so no window of
 * arrival times holds more than `limit` messages, whatever the sends' latencies.
 *
 * Why, on top of the shared pace (deliveryQueue.ts): the pace starts sends 1/rate apart, but a send's latency varies
 * (a new SMTP connection, a busy machine: measured 5 to 190 ms on this 2-core box), and a slow send followed by fast
 * ones from another worker put 15 or 16 messages into one second at 14/s. The per-process gate of mail/transport.ts
 * holds only per worker. At higher rates the two statements per send would cost more than they guard, and a
 * provider's limit of hundreds a second is not counted to the millisecond.
 */
export const SHARED_WINDOW_MAX_RATE = 50;
/** A send still open after this is taken to have died with its worker. */
const STALE_SEND_MS = 60_000;
/** Completed sends are pruned this long after the window. */
const KEEP_MS = 5_000;

export interface SendWindow {
  /** Waits for room in the window and records the send as in flight; answers its ticket. */
  acquire(): Promise<string>;
  /** Records the send as completed. */
  release(ticket: string): Promise<void>;
  /** Forgets a send that did not happen (its campaign was cancelled meanwhile): it takes no room in the window. */
  abandon(ticket: string): Promise<void>;
}

export function sharedSendWindow(knex: Knex, ratePerSecond: number, holder: string): SendWindow {
  const { limit, windowMs } = rateWindow(ratePerSecond);
  let forgotten: Promise<unknown> | undefined;
  // This process's sends wait their turn in the order they asked (their slots' order: transactional mail first);
  // racing each other for room that frees up would let a campaign email overtake a password reset.
  let line: Promise<unknown> = Promise.resolve();
  async function acquireInTurn(): Promise<string> {
    // A restarted worker's sends that were open when it stopped will never complete. (`.then`: a query builder
    // awaited twice runs twice; the promise runs once.)
    forgotten ??= knex('delivery_window').where({ holder }).delete().then(() => undefined);
    await forgotten;
    for (;;) {
      const got = await knex.transaction(async (trx): Promise<{ ticket: string } | { waitMs: number }> => {
        // The pace row serialises the acquires of all workers (claims take it too, briefly).
        await trx.raw("SELECT 1 FROM delivery_pace WHERE name = 'email' FOR UPDATE");
        await trx.raw(`DELETE FROM delivery_window WHERE completed_at < now() - ?::int * interval '1 millisecond'
          OR (completed_at IS NULL AND started_at < now() - ?::int * interval '1 millisecond')`, [windowMs + KEEP_MS, STALE_SEND_MS]);
        const { rows: [busy] } = await trx.raw(
          `SELECT count(*)::int AS n,
                  extract(epoch FROM (min(completed_at) + ?::int * interval '1 millisecond' - now())) * 1000 AS frees_in_ms
           FROM delivery_window WHERE completed_at IS NULL OR completed_at > now() - ?::int * interval '1 millisecond'`,
          [windowMs, windowMs],
        );
        const { n, frees_in_ms: freesInMs } = busy as { n: number; frees_in_ms: number | null };
        if (n >= limit) return { waitMs: freesInMs === null ? 10 : Math.max(1, Number(freesInMs)) };
        const [row] = await trx('delivery_window').insert({ holder }).returning('id');
        return { ticket: String((row as { id: string | number }).id) };
      });
      if ('ticket' in got) return got.ticket;
      await new Promise((r) => setTimeout(r, Math.min(got.waitMs, 100)));
    }
  }
  return {
    acquire() {
      const mine = line.then(acquireInTurn);
      line = mine.catch(() => undefined);
      return mine;
    },
    async release(ticket) {
      await knex('delivery_window').where({ id: ticket }).update({ completed_at: knex.fn.now() });
    },
    async abandon(ticket) {
      await knex('delivery_window').where({ id: ticket }).delete();
    },
  };
}
