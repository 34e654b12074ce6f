import type { Knex } from 'knex';

/**
 * The trigram index of contact addresses (`contacts_email_trgm_idx`, GIN) takes each new contact's entries into its
 * pending list, and the insert that finds the list past `gin_pending_list_limit` (4 MB by default) merges the whole list
 * into the index before it can commit: about every 5,000 new contacts, one batch of POST /v1/send waited 50-500 ms for
 * it (bench/send.ts, fsync on: the store's p99 73-89 ms against 24-51 ms with a larger limit; BENCHMARKS.md section
 * 52). The workers now merge the list every two seconds (db/searchIndexes.ts, worker/housekeeping.ts), in the
 * background, as PostgreSQL's documentation advises for steady response times; the larger limit keeps the inserts
 * from doing it themselves meanwhile. A search reads the pending list in full, so it stays small: two seconds of new
 * contacts.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER INDEX contacts_email_trgm_idx SET (gin_pending_list_limit = 16384)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER INDEX contacts_email_trgm_idx RESET (gin_pending_list_limit)');
}
