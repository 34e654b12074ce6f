import type { Knex } from 'knex';

/**
 * The webhook outbox rows of events are written by EVENT_EFFECTS (db/queries/events.ts), the one way events are
 * recorded, in the same statement as the events, no longer by the statement trigger `webhook_outbox_events`: its
 * transition table cost 42 % on every event insert even when no endpoint listened (BENCHMARKS.md section 12), and the
 * open pixel and click redirect insert an event per hit. The contacts' triggers stay (contact.created / updated have
 * many writers).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('DROP TRIGGER IF EXISTS webhook_outbox_events ON events');
  await knex.raw('DROP FUNCTION IF EXISTS herald_webhook_events()');
}

export async function down(knex: Knex): Promise<void> {
  // As 20261124000003_webhooks created them.
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
}
