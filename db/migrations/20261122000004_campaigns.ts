import type { Knex } from 'knex';

/** Campaigns, and the columns that tie emails to them. Each index names the query it serves. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('campaigns', (t) => {
    t.uuid('id').notNullable().defaultTo(knex.raw('herald_uuidv7()'));
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('description');
    t.text('subject').notNullable();
    t.text('body').notNullable();
    t.text('from_email').notNullable();
    t.text('from_name');
    t.text('reply_to');
    t.text('audience_type').notNullable().checkIn(['ALL', 'SEGMENT', 'FILTERED']);
    t.uuid('segment_id');
    t.jsonb('audience_filter');
    t.text('status').notNullable().defaultTo('DRAFT').checkIn(['DRAFT', 'SCHEDULED', 'SENDING', 'SENT', 'CANCELLED', 'FAILED']);
    t.timestamp('scheduled_at', { useTz: true });
    t.timestamp('started_at', { useTz: true });
    t.timestamp('completed_at', { useTz: true });
    t.timestamp('cancelled_at', { useTz: true });
    t.integer('total_recipients');
    t.text('error');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Serves GET/PATCH/DELETE /campaigns/:id, the campaign workflow's reads, and GET /campaigns (keyset on id).
    t.primary(['project_id', 'id'], { constraintName: 'campaigns_pkey' });
  });
  // Serves "is this segment used by a scheduled or sending campaign?" (segment deletes).
  await knex.raw("CREATE INDEX campaigns_segment_idx ON campaigns (project_id, segment_id) WHERE segment_id IS NOT NULL");

  // Set once the engine accepted the campaign's workflow start; until then the dispatcher may (re)start it.
  await knex.schema.alterTable('campaigns', (t) => {
    t.timestamp('dispatched_at', { useTz: true });
  });
  // Serves the dispatcher: scheduled campaigns whose workflow start was never confirmed.
  await knex.raw("CREATE INDEX campaigns_undispatched_idx ON campaigns (updated_at) WHERE status = 'SCHEDULED' AND dispatched_at IS NULL");

  await knex.schema.alterTable('emails', (t) => {
    t.uuid('campaign_id');
    // Test sends of a campaign ([TEST] copies): delivered like the others, never counted in its stats.
    t.boolean('is_test').notNullable().defaultTo(false);
    // Campaign emails are rendered when they are delivered (from the campaign, which cannot change once it is
    // scheduled, and the contact), so the audience materialises as one INSERT … SELECT per batch.
    t.text('subject').nullable().alter();
    t.text('html').nullable().alter();
    // A test copy may go to an address that is not a contact (a test send changes nothing else).
    t.uuid('contact_id').nullable().alter();
  });
  // Each contact at most once per campaign: a retried batch inserts nothing twice (ON CONFLICT DO NOTHING).
  // Also serves the campaign's stats and its cancel (WHERE project_id = ? AND campaign_id = ? [AND status …]).
  await knex.raw('CREATE UNIQUE INDEX emails_campaign_contact_key ON emails (project_id, campaign_id, contact_id) WHERE campaign_id IS NOT NULL AND NOT is_test');
  // Serves the campaign's unsubscribe count in its stats (events of its emails).
  await knex.raw('CREATE INDEX events_email_idx ON events (project_id, email_id) WHERE email_id IS NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS events_email_idx');
  await knex.raw('DROP INDEX IF EXISTS emails_campaign_contact_key');
  await knex.schema.alterTable('emails', (t) => {
    t.dropColumn('campaign_id');
    t.dropColumn('is_test');
  });
  await knex.schema.dropTableIfExists('campaigns');
}
