import type { Knex } from 'knex';

/**
 * The embedded engine's delivery queue is the emails table itself (worker/deliveryQueue.ts): workers claim QUEUED
 * rows in batches, paced by one shared row. Each index names the query it serves.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('emails', (t) => {
    // 0 = transactional, 1 = campaign: transactional mail is claimed first when both wait for the same rate budget.
    t.smallint('priority').notNullable().defaultTo(0);
    // Not claimed before this time: the backoff of a transient SMTP failure.
    t.timestamp('available_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Which worker process claimed the email (SENDING), and when: its own restart, or an expired lease, requeues it.
    t.text('claimed_by');
    t.timestamp('claimed_at', { useTz: true });
  });
  // Serves the claim: QUEUED emails in (priority, id) order, i.e. transactional first, then first in first out.
  await knex.raw("CREATE INDEX emails_queue_idx ON emails (priority, id) WHERE status = 'QUEUED'");
  // Serves the requeue of a crashed worker's claims (by worker on restart, by claim time when the lease expires).
  await knex.raw("CREATE INDEX emails_claims_idx ON emails (claimed_by, claimed_at) WHERE status = 'SENDING'");

  // The pace of the delivery queue, shared by every worker: the theoretical time of the next send (GCRA).
  await knex.schema.createTable('delivery_pace', (t) => {
    t.text('name').primary();
    t.timestamp('next_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex('delivery_pace').insert({ name: 'email' });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('delivery_pace');
  await knex.raw('DROP INDEX IF EXISTS emails_claims_idx');
  await knex.raw('DROP INDEX IF EXISTS emails_queue_idx');
  await knex.schema.alterTable('emails', (t) => {
    t.dropColumns('priority', 'available_at', 'claimed_by', 'claimed_at');
  });
}
