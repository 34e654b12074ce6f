import type { Knex } from 'knex';

/**
 * `events_engagement_idx`: a campaign's opens and clicks over time (GET /campaigns/:id/stats?series=hour|day,
 * campaigns/series.ts). The series reads the campaign's emails (emails_campaign_contact_key) and, for each, its open
 * and click events' times: this index holds exactly those, by (project, email), with the time and the name in the
 * index, so the read is an index-only scan that never visits the events table. Only the two event names are indexed,
 * so the other events (sent, delivered, custom ones: most of the table) cost it nothing when they are written.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE INDEX events_engagement_idx ON events (project_id, email_id, created_at) INCLUDE (name)
    WHERE name IN ('email.opened', 'email.clicked') AND email_id IS NOT NULL`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS events_engagement_idx');
}
