import type { Knex } from 'knex';

/**
 * One tracking event per email and kind per window (issue 26): the last time an `email.opened` or an `email.clicked`
 * of one link was recorded for an email, by people or by proxies and scanners (link: md5 of tracking/record.ts
 * windowKey, as a UUID). The tracker's one
 * statement (tracking/record.ts) inserts or moves the row with ON CONFLICT … WHERE the window has passed, and writes
 * the event only for the rows it inserted or moved; the email's `opens` and `clicks` still count every hit. The rows
 * go with their email.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE TABLE tracking_event_windows (
    project_id uuid NOT NULL,
    email_id uuid NOT NULL,
    link uuid NOT NULL,
    last_event_at timestamptz NOT NULL,
    CONSTRAINT tracking_event_windows_pkey PRIMARY KEY (project_id, email_id, link),
    CONSTRAINT tracking_event_windows_email_fkey FOREIGN KEY (project_id, email_id) REFERENCES emails (project_id, id) ON DELETE CASCADE
  )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS tracking_event_windows');
}
