import type { Knex } from 'knex';

/**
 * The cluster's engine and send rate, recorded where every worker already meets (issue 25): on the delivery pace row
 * (delivery_pace, name 'email'). The first worker to start records its ENGINE and SEND_RATE_PER_SECOND; a worker that
 * starts with other values while workers of the recorded ones still live refuses to start, naming the difference
 * (worker/workerIdentity.ts). When none lives, the new values are recorded: restarting every worker with a new rate
 * changes it. NULL: nothing recorded yet.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('delivery_pace', (t) => {
    t.text('engine');
    t.double('send_rate_per_second');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('delivery_pace', (t) => {
    t.dropColumns('engine', 'send_rate_per_second');
  });
}
