import type { Knex } from 'knex';

/**
 * The trigram index of contact addresses with the address first: `(email gin_trgm_ops, project_id)`, where it had
 * `(project_id, email gin_trgm_ops)`. A search is `project_id = ? AND email LIKE '%term%'`, and GIN takes the scan keys
 * of its columns in their order: with the project first, a search read the whole posting tree of its project's id
 * (every contact of the project: 255 pages at 1,000,000 contacts) before its few matches, 7-8 ms for a rare term; with
 * the address first, the trigrams' matches lead and the project's posting tree is only looked into at them: 2.1-2.7
 * ms, 117-141 pages, and no slower for a small project beside a large one (1.4 ms for a common term in a project of
 * 100,000; BENCHMARKS.md section 60). Same entries, same size (88 MB at 1,100,000 contacts), same writes, and the same
 * estimates for the planner, so a dynamic segment's `email contains` keeps it too.
 *
 * Built beside the old one without locking writes out (CONCURRENTLY, so outside a transaction), with the pending-list
 * limit of 20261211000001, then put in its place under the old name. A run cut short is finished by the next: an
 * invalid build is dropped and made again, and an index already in the new order is left alone.
 */
export const config = { transaction: false };

const NAME = 'contacts_email_trgm_idx';
const NEXT = 'contacts_email_trgm_idx_next';

async function swap(knex: Knex, columns: string): Promise<void> {
  const state = async (name: string) => (await knex.raw(
    `SELECT pg_get_indexdef(x.indexrelid) AS def, x.indisvalid AS valid FROM pg_index x WHERE x.indexrelid = to_regclass(?)`, [name])).rows[0] as { def: string; valid: boolean } | undefined;
  if ((await state(NAME))?.def.includes(`gin ${columns}`)) return;
  const next = await state(NEXT);
  if (next && !next.valid) await knex.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${NEXT}`);
  if (!next?.valid) await knex.raw(`CREATE INDEX CONCURRENTLY ${NEXT} ON contacts USING gin ${columns} WITH (gin_pending_list_limit = 8192)`);
  await knex.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${NAME}`);
  await knex.raw(`ALTER INDEX ${NEXT} RENAME TO ${NAME}`);
}

export async function up(knex: Knex): Promise<void> {
  await swap(knex, '(email gin_trgm_ops, project_id)');
}

export async function down(knex: Knex): Promise<void> {
  await swap(knex, '(project_id, email gin_trgm_ops)');
}
