import type { Knex } from 'knex';

/**
 * Waiters in the shared send window (worker/sendWindow.ts): a send that finds the window full leaves a row saying since
 * when it waits, so that the room freed next goes to the send that asked first, whichever worker asks for it first.
 * Without them, a transactional email that had waited for a full window lost the freed room to a later campaign email
 * of another worker as often as not (a priority test saw 11 campaign emails overtake one at 2/s on a loaded machine).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('delivery_window', (t) => {
    // A waiter's `started_at` is when it first asked (its place in line); `seen_at` when it last did (staleness).
    t.boolean('waiting').notNullable().defaultTo(false);
    t.timestamp('seen_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex('delivery_window').where({ waiting: true }).delete();
  await knex.schema.alterTable('delivery_window', (t) => {
    t.dropColumn('waiting');
    t.dropColumn('seen_at');
  });
}
