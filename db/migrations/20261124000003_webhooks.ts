import type { Knex } from 'knex';

/**
 * Signed outbound webhooks (issue 16, point 3; webhooks/).
 *
 * `webhook_endpoints`: a project's receivers, the event types each wants, and its `whsec_` secret sealed with the
 * installation's secret (core/sealed.ts), never stored in clear.
 *
 * `webhook_deliveries`: the outbox, one row per (event, endpoint) with the exact payload it carries. Rows are written by
 * triggers in the very statement that records what caused them, so the outbox commits or rolls back with the cause:
 * - `events` (AFTER INSERT, per statement, transition table): email.sent/failed (the delivery queue's raw SQL), the
 *   tracking events, contact.subscribed/unsubscribed and campaign.sent (recordEvents) — whoever writes the event;
 * - `contacts` (AFTER INSERT / AFTER UPDATE, per statement): contact.created and contact.updated (a real change:
 *   `updated_at` moved), from upsertContacts, patchContact or any other writer.
 * Only endpoints that are enabled and want the type get a row: a project without one pays an index probe per statement.
 * The worker (worker/webhookQueue.ts) claims due rows per endpoint with FOR UPDATE SKIP LOCKED.
 *
 * `webhook_attempts`: every attempt's status code, latency and error (GET /webhooks/:id/deliveries).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_endpoints', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('herald_uuidv7()'));
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('url').notNullable();
    t.specificType('events', 'text[]').notNullable();
    t.boolean('enabled').notNullable().defaultTo(true);
    t.binary('secret').notNullable();
    // Set when a delivery exhausted its retries; cleared by the next success.
    t.timestamp('failing_since', { useTz: true });
    t.text('last_error');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  // Serves GET /webhooks (keyset on id within the project) and the triggers' lookup of a project's endpoints (a few
  // rows: enabled and events are filtered on them). The claim reads every enabled endpoint, a small table, in one pass.
  await knex.raw('CREATE INDEX webhook_endpoints_project_idx ON webhook_endpoints (project_id, id)');

  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('herald_uuidv7()'));
    t.uuid('project_id').notNullable();
    t.uuid('endpoint_id').notNullable().references('webhook_endpoints.id').onDelete('CASCADE');
    t.text('type').notNullable();
    t.uuid('event_id');
    t.jsonb('payload').notNullable();
    t.text('status').notNullable().defaultTo('PENDING').checkIn(['PENDING', 'DELIVERING', 'SUCCEEDED', 'FAILED']);
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('next_attempt_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.text('claimed_by');
    t.timestamp('claimed_at', { useTz: true });
    t.integer('last_status_code');
    t.integer('last_latency_ms');
    t.text('last_error');
    t.timestamp('delivered_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  // Serves GET /webhooks/:id/deliveries (keyset on id) and the redelivery of one.
  await knex.raw('CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, id)');
  // The queue: an endpoint's due deliveries, oldest first (the claim's per-endpoint LATERAL probe).
  await knex.raw("CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE status = 'PENDING'");
  // In flight: the per-endpoint concurrency count and the requeue of a dead worker's claims.
  await knex.raw("CREATE INDEX webhook_deliveries_claimed_idx ON webhook_deliveries (endpoint_id, claimed_by) WHERE status = 'DELIVERING'");

  await knex.schema.createTable('webhook_attempts', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('herald_uuidv7()'));
    t.uuid('delivery_id').notNullable().references('webhook_deliveries.id').onDelete('CASCADE');
    t.integer('attempt').notNullable();
    t.integer('status_code');
    t.integer('latency_ms').notNullable();
    t.text('error');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  // Serves the attempts of a page of deliveries.
  await knex.raw('CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id, id)');

  // ---- the outbox triggers ----
  const timestamp = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  await knex.raw(`
    CREATE FUNCTION herald_webhook_events() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO webhook_deliveries (project_id, endpoint_id, type, event_id, payload)
      SELECT ev.project_id, w.id, ev.name, ev.id,
             jsonb_build_object('type', ev.name, 'timestamp', ${timestamp('ev.created_at')}, 'data',
               jsonb_strip_nulls(jsonb_build_object(
                 'eventId', ev.id, 'emailId', ev.email_id, 'contactId', ev.contact_id,
                 'to', e.to_email, 'subject', e.subject, 'campaignId', e.campaign_id,
                 'email', c.email)) || ev.data)
      FROM inserted ev
      JOIN webhook_endpoints w ON w.project_id = ev.project_id AND w.enabled AND ev.name = ANY (w.events)
      LEFT JOIN emails e ON e.project_id = ev.project_id AND e.id = ev.email_id
      LEFT JOIN contacts c ON c.project_id = ev.project_id AND c.id = ev.contact_id AND ev.name LIKE 'contact.%'
      ORDER BY ev.id, w.id;
      RETURN NULL;
    END $$`);
  await knex.raw(`CREATE TRIGGER webhook_outbox_events AFTER INSERT ON events
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION herald_webhook_events()`);

  const contactData = (type: string) => `jsonb_build_object('type', '${type}', 'timestamp', ${timestamp('now()')}, 'data',
    jsonb_build_object('contactId', n.id, 'email', n.email, 'subscribed', n.subscribed, 'data', n.data,
      'createdAt', ${timestamp('n.created_at')}, 'updatedAt', ${timestamp('n.updated_at')}))`;
  await knex.raw(`
    CREATE FUNCTION herald_webhook_contacts_created() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO webhook_deliveries (project_id, endpoint_id, type, payload)
      SELECT n.project_id, w.id, 'contact.created', ${contactData('contact.created')}
      FROM inserted_contacts n
      JOIN webhook_endpoints w ON w.project_id = n.project_id AND w.enabled AND 'contact.created' = ANY (w.events)
      ORDER BY n.id, w.id;
      RETURN NULL;
    END $$`);
  await knex.raw(`CREATE TRIGGER webhook_outbox_contacts_created AFTER INSERT ON contacts
    REFERENCING NEW TABLE AS inserted_contacts FOR EACH STATEMENT EXECUTE FUNCTION herald_webhook_contacts_created()`);
  await knex.raw(`
    CREATE FUNCTION herald_webhook_contacts_updated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO webhook_deliveries (project_id, endpoint_id, type, payload)
      SELECT n.project_id, w.id, 'contact.updated', ${contactData('contact.updated')}
      FROM updated_contacts n
      JOIN old_contacts o ON o.project_id = n.project_id AND o.id = n.id
      JOIN webhook_endpoints w ON w.project_id = n.project_id AND w.enabled AND 'contact.updated' = ANY (w.events)
      WHERE (n.email, n.subscribed, n.data) IS DISTINCT FROM (o.email, o.subscribed, o.data)
      ORDER BY n.id, w.id;
      RETURN NULL;
    END $$`);
  await knex.raw(`CREATE TRIGGER webhook_outbox_contacts_updated AFTER UPDATE ON contacts
    REFERENCING OLD TABLE AS old_contacts NEW TABLE AS updated_contacts FOR EACH STATEMENT EXECUTE FUNCTION herald_webhook_contacts_updated()`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TRIGGER IF EXISTS webhook_outbox_contacts_updated ON contacts');
  await knex.raw('DROP TRIGGER IF EXISTS webhook_outbox_contacts_created ON contacts');
  await knex.raw('DROP TRIGGER IF EXISTS webhook_outbox_events ON events');
  await knex.raw('DROP FUNCTION IF EXISTS herald_webhook_contacts_updated()');
  await knex.raw('DROP FUNCTION IF EXISTS herald_webhook_contacts_created()');
  await knex.raw('DROP FUNCTION IF EXISTS herald_webhook_events()');
  await knex.schema.dropTableIfExists('webhook_attempts');
  await knex.schema.dropTableIfExists('webhook_deliveries');
  await knex.schema.dropTableIfExists('webhook_endpoints');
}
