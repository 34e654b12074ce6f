import type { Knex } from 'knex';

/**
 * Open and click tracking (issue 16, point 2).
 * - `projects.track_*`: the project's tracking settings (GET/PATCH /settings): transactional mail (POST /v1/send,
 *   automation sends) off by default, campaigns on by default.
 * - `emails.track_opens` / `track_clicks`: the effective choice for this email, fixed when it is queued; delivery adds
 *   the pixel and rewrites the links by them.
 * - `emails.opens` / `clicks`: every open and click recorded; `first_opened_at` / `first_clicked_at`: the first one
 *   that was not a mail proxy or a scanner (so an email with a first_* time is a unique open / click).
 * - `events_clicks_idx`: clicks per link of a campaign's emails (campaign stats), only the click events indexed.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE projects
    ADD COLUMN track_send_opens boolean NOT NULL DEFAULT false,
    ADD COLUMN track_send_clicks boolean NOT NULL DEFAULT false,
    ADD COLUMN track_campaign_opens boolean NOT NULL DEFAULT true,
    ADD COLUMN track_campaign_clicks boolean NOT NULL DEFAULT true`);
  await knex.raw(`ALTER TABLE emails
    ADD COLUMN track_opens boolean NOT NULL DEFAULT false,
    ADD COLUMN track_clicks boolean NOT NULL DEFAULT false,
    ADD COLUMN opens integer NOT NULL DEFAULT 0,
    ADD COLUMN first_opened_at timestamptz,
    ADD COLUMN clicks integer NOT NULL DEFAULT 0,
    ADD COLUMN first_clicked_at timestamptz`);
  await knex.raw(`CREATE INDEX events_clicks_idx ON events (project_id, email_id) WHERE name = 'email.clicked' AND email_id IS NOT NULL`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS events_clicks_idx');
  await knex.raw(`ALTER TABLE emails DROP COLUMN track_opens, DROP COLUMN track_clicks, DROP COLUMN opens, DROP COLUMN first_opened_at,
    DROP COLUMN clicks, DROP COLUMN first_clicked_at`);
  await knex.raw(`ALTER TABLE projects DROP COLUMN track_send_opens, DROP COLUMN track_send_clicks, DROP COLUMN track_campaign_opens,
    DROP COLUMN track_campaign_clicks`);
}
