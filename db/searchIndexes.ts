import type { Knex } from 'knex';
import { COMMIT_WITHOUT_FLUSH } from './commits';

/** GIN indexes whose pending list the workers merge in the background (migration 20261211000001). */
export const PENDING_LIST_INDEXES = ['contacts_email_trgm_idx'] as const;

/**
 * Merges the pending entries of PENDING_LIST_INDEXES into their indexes (`gin_clean_pending_list`), so that no insert
 * has to (see the migration): answers the pending-list pages merged. Next to nothing when there are none. Several
 * workers at once take turns on the index's lock; a merge lost in a crash leaves the entries pending, which the next
 * merge takes, so it commits without waiting for its WAL flush (db/commits.ts).
 */
export async function mergePendingEntries(knex: Knex): Promise<number> {
  const { rows } = await knex.raw(
    `SELECT coalesce(sum(gin_clean_pending_list(to_regclass(i))), 0)::int AS pages FROM unnest(?::text[]) i WHERE ${COMMIT_WITHOUT_FLUSH}`,
    [[...PENDING_LIST_INDEXES]]);
  return (rows[0] as { pages: number }).pages;
}
