import type { Knex } from 'knex';

/**
 * The trigram index of contact addresses (`contacts_email_trgm_idx`, GIN) takes each new contact's entries into its
 * pending list, and the insert that finds the list past `gin_pending_list_limit` (4 MB by default) merges the whole list
 * into the index before it can commit: about every 5,000 new contacts, one batch of POST /v1/send waited 50-500 ms for
 * it (bench/send.ts, fsync on: the store's p99 73-89 ms against 24-51 ms with the merge off its path; BENCHMARKS.md
 * section 52). The workers now merge the list every second (db/searchIndexes.ts, worker/housekeeping.ts), in the
 * background, as PostgreSQL's documentation advises for steady response times, and the limit is 8 MB, so that sends
 * creating up to ~10,000 contacts a second never merge it themselves. A bulk import, which creates them faster, still
 * merges on its way, at every 8 MB; 16 MB left a larger list behind it, whose merge then slowed the sends right after
 * (bench/contactImport.ts: p99 40-42 ms against 22-30; 24-28 at 8 MB). A search reads the pending list in full: at
 * most a second of new contacts while the workers run.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER INDEX contacts_email_trgm_idx SET (gin_pending_list_limit = 8192)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER INDEX contacts_email_trgm_idx RESET (gin_pending_list_limit)');
}
