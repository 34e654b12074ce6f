import type { Knex } from 'knex';

/**
 * The suppression list: addresses of a project that Herald never mails again (a hard bounce, repeated soft bounces, a
 * complaint, or the user's own entry), one row per address. Every way of sending checks it: /v1/send, SMTP submission and automation
 * sends store the email as SUPPRESSED (status added here) instead of queuing it; a campaign's audience query leaves the
 * addresses out.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('suppressions', (t) => {
    t.uuid('id').notNullable().defaultTo(knex.raw('herald_uuidv7()'));
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('email').notNullable();
    t.text('reason').notNullable().checkIn(['manual', 'soft_bounce', 'hard_bounce', 'complaint'], 'suppressions_reason_check');
    /** What put it there: the bounce's diagnostic, the email it concerned, or the user's note. */
    t.jsonb('details').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Serves the send-time check (project_id = ? AND email = ANY(?)), DELETE /suppressions/:email and the upsert.
    t.primary(['project_id', 'email'], { constraintName: 'suppressions_pkey' });
  });
  // GET /suppressions: keyset on id, newest first, with or without the reason filter.
  await knex.raw('CREATE UNIQUE INDEX suppressions_project_id_idx ON suppressions (project_id, id)');
  await knex.raw('CREATE INDEX suppressions_project_reason_id_idx ON suppressions (project_id, reason, id)');

  await knex.raw(`DO $$ DECLARE c text; BEGIN
    FOR c IN SELECT conname FROM pg_constraint WHERE conrelid = 'emails'::regclass AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%status%' LOOP
      EXECUTE format('ALTER TABLE emails DROP CONSTRAINT %I', c);
    END LOOP; END $$`);
  // BOUNCED: sent, then refused for good by the recipient's server (a hard bounce: bounces/bounces.ts).
  await knex.raw(`ALTER TABLE emails ADD CONSTRAINT emails_status_check CHECK (status IN ('QUEUED', 'SENDING', 'SENT', 'FAILED', 'CANCELLED', 'SUPPRESSED', 'BOUNCED'))`);
  // A bounce address names an email by its id alone (bounces/token.ts). Ids are UUIDv7, in insertion order: a BRIN
  // index finds one among millions by reading a few pages, and costs the hot insert path next to nothing.
  await knex.raw('CREATE INDEX emails_id_brin ON emails USING brin (id) WITH (pages_per_range = 16)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS emails_id_brin');
  await knex.raw('ALTER TABLE emails DROP CONSTRAINT emails_status_check');
  await knex.raw(`ALTER TABLE emails ADD CONSTRAINT emails_status_check CHECK (status IN ('QUEUED', 'SENDING', 'SENT', 'FAILED', 'CANCELLED'))`);
  await knex.schema.dropTable('suppressions');
}
