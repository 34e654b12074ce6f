import type { Knex } from 'knex';

/**
 * Deletes the rows of `table` that `where` picks, `batch` at a time, each batch its own short statement (no long
 * transaction, no long lock), until a batch finds fewer: the total. `where` is SQL on the table's own columns; a
 * concurrent sweep of the same rows (another worker) only finds fewer (SKIP LOCKED).
 */
export async function deleteInBatches(knex: Knex, table: string, where: string, bindings: readonly Knex.Value[], batch = 5000): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = await knex.raw(
      `DELETE FROM ?? WHERE ctid = ANY (ARRAY(SELECT ctid FROM ?? WHERE ${where} LIMIT ? FOR UPDATE SKIP LOCKED))`,
      [table, table, ...bindings, batch],
    );
    const count = (deleted as { rowCount: number }).rowCount;
    total += count;
    if (count < batch) return total;
  }
}
