import type { Knex } from 'knex';

/**
 * `raw_messages`: a message submitted over SMTP, kept as its client built it (MIME bytes), stored once per submission
 * and shared by the emails of its recipients, as attachments are for an API send. `emails.raw_message_id` names it;
 * delivery sends those bytes with the headers Herald sets (mail/rawMessage.ts) instead of composing a message.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('raw_messages', (t) => {
    t.uuid('id').notNullable().defaultTo(knex.raw('herald_uuidv7()'));
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.binary('content').notNullable();
    t.integer('size').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Serves delivery's load of one email's message: WHERE project_id = ? AND id = ?.
    t.primary(['project_id', 'id'], { constraintName: 'raw_messages_pkey' });
  });
  await knex.raw('ALTER TABLE emails ADD COLUMN raw_message_id uuid');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE emails DROP COLUMN raw_message_id');
  await knex.schema.dropTable('raw_messages');
}
