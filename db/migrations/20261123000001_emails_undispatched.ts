import type { Knex } from 'knex';

/**
 * Emails are no longer started as engine workflows one by one (Temporal delivers from the emails table too, like the
 * embedded engine): a committed QUEUED row is all a delivery needs, so `emails.dispatched_at` and the index of the
 * dispatcher that restarted undispatched emails go. (Campaigns keep theirs: their workflows are still started.)
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS emails_undispatched_idx');
  await knex.schema.alterTable('emails', (t) => {
    t.dropColumn('dispatched_at');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('emails', (t) => {
    t.timestamp('dispatched_at', { useTz: true });
  });
  await knex.raw("CREATE INDEX emails_undispatched_idx ON emails (created_at) WHERE status = 'QUEUED' AND dispatched_at IS NULL");
}
