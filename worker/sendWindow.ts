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
/**
 * A waiter that has not looked again for this long has died with its worker, or its worker is stalled: a live one looks
 * at least every 100 ms, and the others do not keep the room for a stalled one longer than this.
 */
const STALE_WAITER_MS = 1_000;
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

/** A row's id as `returning('id')` gives it (a bigint arrives as a string), as a ticket. */
const idOf = (row: unknown): string => String((row as { id: string | number }).id);

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
    // Across workers, sends take freed room in the order they first asked: one that finds the window full leaves a
    // waiter row (the head of this process's line: at most one per process), and a send that finds room while an
    // earlier waiter exists lets it have the room. Otherwise the workers race for each room that frees up, and a
    // worker slowed by its machine loses its transactional email's turn to another's campaign emails again and again.
    let waiter: string | undefined;
    for (;;) {
      const got = await knex.transaction(async (trx): Promise<{ ticket: string } | { waitMs: number }> => {
        // The pace row serialises the acquires of all workers (claims take it too, briefly).
        await trx.raw("SELECT 1 FROM delivery_pace WHERE name = 'email' FOR UPDATE");
        await trx.raw(`DELETE FROM delivery_window WHERE completed_at < now() - ?::int * interval '1 millisecond'
          OR (completed_at IS NULL AND NOT waiting AND started_at < now() - ?::int * interval '1 millisecond')
          OR (waiting AND seen_at < now() - ?::int * interval '1 millisecond')`, [windowMs + KEEP_MS, STALE_SEND_MS, STALE_WAITER_MS]);
        const { rows: [busy] } = await trx.raw(
          `SELECT count(*) FILTER (WHERE NOT w.waiting AND (w.completed_at IS NULL OR w.completed_at > now() - ?::int * interval '1 millisecond'))::int AS n,
                  extract(epoch FROM (min(w.completed_at) FILTER (WHERE w.completed_at > now() - ?::int * interval '1 millisecond')
                    + ?::int * interval '1 millisecond' - now())) * 1000 AS frees_in_ms,
                  -- Waiters ahead of this send: all of them when it has no waiter row (or lost it as stale).
                  count(*) FILTER (WHERE w.waiting AND (me.id IS NULL OR (w.started_at, w.id) < (me.started_at, me.id)))::int AS ahead
           FROM delivery_window w LEFT JOIN (SELECT started_at, id FROM delivery_window WHERE id = ?::bigint AND waiting) me ON true`,
          [windowMs, windowMs, windowMs, waiter ?? null],
        );
        const { n, frees_in_ms: freesInMs, ahead } = busy as { n: number; frees_in_ms: number | null; ahead: number };
        if (n < limit && ahead === 0) {
          // The waiter row, if any, becomes the send's: the same ticket.
          const [kept] = waiter ? await trx('delivery_window').where({ id: waiter }).update({ waiting: false, seen_at: null, started_at: trx.fn.now() }).returning('id') : [];
          return { ticket: idOf(kept ?? (await trx('delivery_window').insert({ holder }).returning('id'))[0]) };
        }
        // Still in line; a waiter pruned as stale (this process stalled for a second) is in line again, from now.
        if (waiter && (await trx('delivery_window').where({ id: waiter }).update({ seen_at: trx.fn.now() }).returning('id')).length === 0) waiter = undefined;
        if (!waiter) waiter = idOf((await trx('delivery_window').insert({ holder, waiting: true, seen_at: trx.fn.now() }).returning('id'))[0]);
        // Full: until the oldest completed send leaves the window. Room kept for an earlier waiter: a moment, while it
        // takes it (it looks again when the room frees, as this one would have).
        if (n >= limit) return { waitMs: freesInMs === null ? 10 : Math.max(1, Number(freesInMs)) };
        return { waitMs: 10 };
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
