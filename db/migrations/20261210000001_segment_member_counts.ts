import type { Knex } from 'knex';

/**
 * A segment's member count, kept on its row with the time it was counted (audience/segments.ts): GET /segments and
 * GET /segments/:id answer the kept count instead of counting every segment of the page when read. Counted when read,
 * a dynamic segment's count reads every contact its condition may match (`data.plan = pro` at 1,000,000 contacts: a
 * scan of them all; a rare value scans them all too, for a handful of members), 5 s for one page of four segments
 * (BENCHMARKS.md section 37); a count that stops at 1,000 does not help the rare ones.
 *
 * - member_count / member_count_error: the count, or why the stored condition cannot be evaluated (then the count is
 *   NULL), as of members_counted_at (NULL: never counted).
 * - members_recount_since: a recount under way since then (a claim, so that several API nodes reading the same
 *   segment do not each count it); a claim older than the recount's give-up time is taken over.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE segments
    ADD COLUMN member_count integer,
    ADD COLUMN member_count_error text,
    ADD COLUMN members_counted_at timestamptz,
    ADD COLUMN members_recount_since timestamptz`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE segments
    DROP COLUMN member_count, DROP COLUMN member_count_error, DROP COLUMN members_counted_at, DROP COLUMN members_recount_since`);
}
