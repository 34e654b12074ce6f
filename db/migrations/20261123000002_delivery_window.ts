import type { Knex } from 'knex';

/**
 * The sends of the last second, across all workers (worker/sendWindow.ts): at low rates a send begins only while fewer
 * than the limit have completed within the window or are still in flight, so no second at the receiving server holds
 * more than the limit, however late a send's bytes arrive. A handful of rows: finished ones are pruned as it goes.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('delivery_window', (t) => {
    t.bigIncrements('id');
    // The worker process (executor id) whose send this is: its restart drops its rows (sends that died with it).
    t.text('holder').notNullable();
    t.timestamp('started_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('completed_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('delivery_window');
}
