import type { Knex } from 'knex';

/**
 * Templates, emails (one row per recipient, the delivery outbox), attachments, events and idempotency keys.
 * Tenant tables key on (project_id, id): every query names the project (see the contacts table). Each index
 * names the query it serves.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('templates', (t) => {
    t.uuid('id').notNullable().defaultTo(knex.raw('herald_uuidv7()'));
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('description');
    t.text('subject').notNullable();
    t.text('body').notNullable();
    t.text('from_email');
    t.text('from_name');
    t.text('reply_to');
    t.text('type').notNullable().defaultTo('TRANSACTIONAL').checkIn(['TRANSACTIONAL', 'MARKETING']);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Serves GET/PATCH/DELETE /templates/:id, the send-time template lookup, and GET /templates (keyset on id).
    t.primary(['project_id', 'id'], { constraintName: 'templates_pkey' });
  });

  // Attachment bytes, stored once per send request and shared by the emails of its recipients.
  await knex.schema.createTable('attachments', (t) => {
    t.uuid('id').notNullable().defaultTo(knex.raw('herald_uuidv7()'));
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('filename').notNullable();
    t.text('content_type').notNullable();
    t.text('content_id');
    t.text('disposition').notNullable().defaultTo('attachment').checkIn(['attachment', 'inline']);
    t.binary('content').notNullable();
    t.integer('size').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Serves the delivery activity's load: WHERE project_id = ? AND id = ANY(?).
    t.primary(['project_id', 'id'], { constraintName: 'attachments_pkey' });
  });

  await knex.schema.createTable('emails', (t) => {
    t.uuid('id').notNullable().defaultTo(knex.raw('herald_uuidv7()'));
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.uuid('contact_id').notNullable();
    t.uuid('template_id');
    t.text('from_email').notNullable();
    t.text('from_name');
    t.text('reply_to');
    t.text('to_email').notNullable();
    t.text('to_name');
    t.text('subject').notNullable();
    t.text('html').notNullable();
    t.jsonb('headers').notNullable().defaultTo('{}');
    t.specificType('attachment_ids', 'uuid[]').notNullable().defaultTo('{}');
    t.text('status').notNullable().defaultTo('QUEUED').checkIn(['QUEUED', 'SENDING', 'SENT', 'FAILED', 'CANCELLED']);
    t.integer('attempts').notNullable().defaultTo(0);
    t.text('message_id');
    t.text('error');
    // Id of the email.sent / email.failed event this email will record: the send API answers with it up front.
    t.uuid('event_id').notNullable().defaultTo(knex.raw('herald_uuidv7()'));
    // Set once the engine has accepted the email's delivery workflow; until then the dispatcher may (re)start it.
    t.timestamp('dispatched_at', { useTz: true });
    t.timestamp('sent_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Serves the delivery activity (WHERE project_id = ? AND id = ?) and per-project email lists.
    t.primary(['project_id', 'id'], { constraintName: 'emails_pkey' });
    // Deleting a contact deletes its mail history with it (data-subject erasure).
    t.foreign(['project_id', 'contact_id'], 'emails_contact_fkey').references(['project_id', 'id']).inTable('contacts').onDelete('CASCADE');
  });
  // Serves the dispatcher: queued emails whose workflow start was never confirmed (a crash between commit and start).
  await knex.raw("CREATE INDEX emails_undispatched_idx ON emails (created_at) WHERE status = 'QUEUED' AND dispatched_at IS NULL");
  // Serves the contact FK's cascade and a contact's mail history.
  await knex.raw('CREATE INDEX emails_contact_idx ON emails (project_id, contact_id, id)');

  await knex.schema.createTable('events', (t) => {
    t.uuid('id').notNullable().defaultTo(knex.raw('herald_uuidv7()'));
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.uuid('contact_id');
    t.uuid('email_id');
    t.jsonb('data').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Serves GET /events (keyset on id, since/until on the time-ordered id).
    t.primary(['project_id', 'id'], { constraintName: 'events_pkey' });
    t.foreign(['project_id', 'contact_id'], 'events_contact_fkey').references(['project_id', 'id']).inTable('contacts').onDelete('CASCADE');
  });
  // Serves GET /events?name=… (and later event.<name> audience filters).
  await knex.raw('CREATE INDEX events_name_idx ON events (project_id, name, id)');
  // Serves GET /events?since=…&until=… (time windows; ids of email events are assigned when the email is queued,
  // so the id's own timestamp is not the event's time).
  await knex.raw('CREATE INDEX events_created_idx ON events (project_id, created_at)');
  // Serves GET /events?contactId=…, the contact FK's cascade, and per-contact event conditions.
  await knex.raw('CREATE INDEX events_contact_idx ON events (project_id, contact_id, id)');

  // Running totals per event name, kept in the same transaction as each event insert, so GET /events/names
  // never aggregates the events table. Counts are of events recorded (erasing a contact does not decrement them).
  await knex.schema.createTable('event_names', (t) => {
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.bigInteger('count').notNullable().defaultTo(0);
    t.timestamp('last_seen_at', { useTz: true }).notNullable();
    // Serves GET /events/names (WHERE project_id = ? ORDER BY name) and the per-insert upsert.
    t.primary(['project_id', 'name'], { constraintName: 'event_names_pkey' });
  });

  await knex.schema.createTable('idempotency_keys', (t) => {
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('key').notNullable();
    t.text('endpoint').notNullable();
    t.binary('request_hash').notNullable();
    t.integer('response_status');
    t.jsonb('response_body');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Serves the claim (INSERT … ON CONFLICT) and the replay lookup.
    t.primary(['project_id', 'key'], { constraintName: 'idempotency_keys_pkey' });
  });
  // Serves the expiry sweep: DELETE … WHERE created_at < now() - interval '24 hours'.
  await knex.raw('CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at)');
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['idempotency_keys', 'event_names', 'events', 'emails', 'attachments', 'templates']) {
    await knex.schema.dropTableIfExists(table);
  }
}
