import type { Knex } from 'knex';
import { backfillCampaignStats as backfillKeptStats } from './20261203000001_campaign_stats';

/**
 * A campaign's counts add up (issue 32, point 5): campaign_stats also counts its emails CANCELLED, SUPPRESSED and
 * BOUNCED (a bounced email was sent; the stats' `sent` is SENT + BOUNCED, `delivered` SENT alone), so that
 * sent + queued + failed + cancelled + suppressed = its recipients, for every campaign. The writers keep them with
 * the other status counts (db/queries/campaignTally.ts statusTally), in the statements that change the emails. What was
 * recorded before this is counted once, from the emails, into shard 0.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE campaign_stats
    ADD COLUMN cancelled bigint NOT NULL DEFAULT 0, ADD COLUMN suppressed bigint NOT NULL DEFAULT 0, ADD COLUMN bounced bigint NOT NULL DEFAULT 0`);
  await backfillOutcomes(knex);
}

/** Counts the CANCELLED, SUPPRESSED and BOUNCED emails of campaigns (all, one project's or one campaign's) into shard 0. */
async function backfillOutcomes(knex: Knex, scope: { projectId?: string; campaignId?: string } = {}): Promise<void> {
  const { projectId, campaignId } = scope;
  await knex.raw(`
    INSERT INTO campaign_stats AS s (project_id, campaign_id, shard, cancelled, suppressed, bounced)
    SELECT e.project_id, e.campaign_id, 0, count(*) FILTER (WHERE e.status = 'CANCELLED'),
           count(*) FILTER (WHERE e.status = 'SUPPRESSED'), count(*) FILTER (WHERE e.status = 'BOUNCED')
    FROM emails e
    WHERE e.campaign_id IS NOT NULL AND NOT e.is_test AND e.status IN ('CANCELLED', 'SUPPRESSED', 'BOUNCED')
      ${projectId ? 'AND e.project_id = ?::uuid' : ''} ${campaignId ? 'AND e.campaign_id = ?::uuid' : ''}
    GROUP BY 1, 2
    ON CONFLICT (project_id, campaign_id, shard) DO UPDATE SET
      cancelled = s.cancelled + excluded.cancelled, suppressed = s.suppressed + excluded.suppressed, bounced = s.bounced + excluded.bounced`,
  [...(projectId ? [projectId] : []), ...(campaignId ? [campaignId] : [])]);
}

/**
 * Counts what is already recorded into the kept stats, every count of today's schema (tests that write a campaign's
 * past straight into the database, and the bench seed, which bypasses the writers). It adds: only for campaigns not
 * counted yet.
 */
export async function backfillCampaignStats(knex: Knex, scope: { projectId?: string; campaignId?: string } = {}): Promise<void> {
  await backfillKeptStats(knex, scope);
  await backfillOutcomes(knex, scope);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE campaign_stats DROP COLUMN cancelled, DROP COLUMN suppressed, DROP COLUMN bounced');
}
