import type { Knex } from 'knex';

/**
 * GET /emails (emails/emails.ts): one index per filter, each ending in the keyset column `id`, so that a filtered page
 * is a short range scan newest first, whatever the depth of its cursor. The date range (`since`/`until`) is a range of
 * ids (UUIDv7 carries the email's creation time), so it needs no index of its own: the primary key (project_id, id)
 * serves it alone, and each index below serves it together with its filter.
 */
export async function up(knex: Knex): Promise<void> {
  // Serves GET /emails?status=… (and its count).
  await knex.raw('CREATE INDEX emails_project_status_idx ON emails (project_id, status, id)');
  // Serves GET /emails?to=… (a recipient's mail).
  await knex.raw('CREATE INDEX emails_project_to_idx ON emails (project_id, to_email, id)');
  // Serves GET /emails?campaignId=… (a campaign's mail, its test copies included).
  await knex.raw('CREATE INDEX emails_project_campaign_idx ON emails (project_id, campaign_id, id) WHERE campaign_id IS NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  for (const name of ['emails_project_campaign_idx', 'emails_project_to_idx', 'emails_project_status_idx']) {
    await knex.raw(`DROP INDEX IF EXISTS ${name}`);
  }
}
