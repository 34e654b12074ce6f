/**
 * How durably a statement commits, by what it writes (issue 33).
 *
 * Herald's PostgreSQL runs with fsync and `synchronous_commit` on: a commit returns once its WAL is flushed to disk, so
 * whatever a 2xx or an SMTP 250 acknowledged survives a crash. A few statements write only bookkeeping whose last
 * moments may be lost in a crash without breaking any promise: the API's rate counts (a crash gives a project a few
 * more requests in that minute), a key's `last_used_at`, a session's `last_seen_at` (kept to the minute). Those commit
 * with `synchronous_commit = off`: the commit returns without waiting for the flush, and the WAL writer flushes it
 * within 3 × `wal_writer_delay` (600 ms by default); any later durable commit flushes it too, as WAL is flushed in order.
 *
 * Why it matters more than one flush: such a statement updates ONE row per project (`rate_limits`), and a row lock is
 * held until the commit returns, so with a durable commit every batch of requests waited for the previous batch's
 * disk flush before it could count (bench/send.ts with BENCH_WAITS=1: `Lock:transactionid`).
 *
 * NEVER for what an answer acknowledges: emails, their events, contacts, idempotent answers, raw messages.
 */

/**
 * A condition that is always true and, evaluated, makes the statement's transaction commit without waiting for its WAL
 * flush (`set_config(…, is_local => true)` lasts to the end of the transaction, which the commit still reads). Put it
 * in the WHERE of the rows a statement writes, so that it is evaluated whenever the statement writes anything.
 *
 * Only in a statement that runs on its own (autocommit, on the pool): inside a caller's transaction it would make that
 * whole transaction's commit asynchronous.
 */
export const COMMIT_WITHOUT_FLUSH = `set_config('synchronous_commit', 'off', true) IS NOT NULL`;
