import type { Knex } from 'knex';

/**
 * A campaign's results kept as they happen, so that GET /campaigns/:id/stats (and its chart, ?series=hour|day) reads a
 * few small rows whatever the campaign's size, instead of counting its 600,000 emails and their events on each request
 * (855 ms, 1.2 s with the chart: BENCHMARKS.md §25).
 *
 * - `campaign_stats`: per campaign, its emails by status (`total`, `queued` = QUEUED or SENDING, `sent`, `failed`) and
 *   their open and click counts (`opens`, `clicks`: every hit; `unique_opens`, `unique_clicks`: emails whose first
 *   open or click by a person was recorded). Added to by the statements that write those columns of a campaign's
 *   emails, each in the same statement (db/queries/campaignStats.ts campaignTally): the batches that queue the
 *   campaign (campaigns/batches.ts), the delivery outcomes (sending/delivery.ts), the cancel and the failure
 *   (campaigns/lifecycle.ts), hard bounces (bounces/bounces.ts) and the tracker (tracking/record.ts).
 * - `campaign_hourly_stats`: per campaign and UTC hour, its `email.opened` and `email.clicked` events (the chart) and
 *   the emails whose first `email.bounced`, `email.complained` or `contact.unsubscribed` came that hour (the stats'
 *   bounced, complained and unsubscribed: each email once).
 * - `campaign_link_stats`: per campaign and link, its clicks (every `email.clicked` event) and the emails with a click
 *   by a person on it (`unique_clicks`). These two are written by EVENT_EFFECTS (db/queries/events.ts), the one way
 *   events are recorded, in the statement that records them.
 * Each row is spread over 8 shards picked by the writer's database session, as project_daily_stats is, so that
 * concurrent delivery workers and trackers do not queue on one row lock. Test copies are not counted. Deleting emails or
 * events (a contact's deletion) does not take them back out: these are the campaign's history, as the overview's are.
 * A campaign's rows go with it (campaigns/campaigns.ts deleteCampaign); no foreign key to campaigns, so that an outcome
 * recorded while its cancelled campaign is deleted is never refused.
 *
 * The chart no longer reads the events, so their index for it (events_engagement_idx) goes.
 *
 * Not a trigger: a statement trigger's transition tables copy every changed row (an email's row carries its HTML)
 * on every write of the table, which cost the events table 42 % (migration 20261125000001).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE campaign_stats (
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      campaign_id uuid NOT NULL,
      shard smallint NOT NULL,
      total bigint NOT NULL DEFAULT 0, queued bigint NOT NULL DEFAULT 0, sent bigint NOT NULL DEFAULT 0, failed bigint NOT NULL DEFAULT 0,
      opens bigint NOT NULL DEFAULT 0, unique_opens bigint NOT NULL DEFAULT 0, clicks bigint NOT NULL DEFAULT 0, unique_clicks bigint NOT NULL DEFAULT 0,
      -- Serves the stats' read (WHERE project_id = ? AND campaign_id = ?) and the writers' upsert.
      CONSTRAINT campaign_stats_pkey PRIMARY KEY (project_id, campaign_id, shard))`);
  await knex.raw(`
    CREATE TABLE campaign_hourly_stats (
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      campaign_id uuid NOT NULL,
      hour timestamptz NOT NULL,
      shard smallint NOT NULL,
      opened bigint NOT NULL DEFAULT 0, clicked bigint NOT NULL DEFAULT 0,
      bounced bigint NOT NULL DEFAULT 0, complained bigint NOT NULL DEFAULT 0, unsubscribed bigint NOT NULL DEFAULT 0,
      -- Serves the stats' and the chart's reads (WHERE project_id = ? AND campaign_id = ?, by hour) and EVENT_EFFECTS' upsert.
      CONSTRAINT campaign_hourly_stats_pkey PRIMARY KEY (project_id, campaign_id, hour, shard))`);
  await knex.raw(`
    CREATE TABLE campaign_link_stats (
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      campaign_id uuid NOT NULL,
      -- '' for a click without a link (none is recorded so: the primary key wants a value).
      url text NOT NULL,
      shard smallint NOT NULL,
      clicks bigint NOT NULL DEFAULT 0, unique_clicks bigint NOT NULL DEFAULT 0,
      -- Serves the clicks per link (WHERE project_id = ? AND campaign_id = ?) and EVENT_EFFECTS' upsert.
      CONSTRAINT campaign_link_stats_pkey PRIMARY KEY (project_id, campaign_id, url, shard))`);
  await backfillCampaignStats(knex);
  // The chart's index of open and click events (migration 20261202000001) serves nothing now, and costs every open.
  await knex.raw('DROP INDEX IF EXISTS events_engagement_idx');
}

/**
 * Counts what is already recorded into the three tables (shard 0): every project's campaigns, one project's (the bench
 * seed, which loads its rows with the writers' statements bypassed) or one campaign's (tests that write a campaign's
 * past straight into the database). Only for campaigns not counted yet: it adds, it does not replace.
 */
export async function backfillCampaignStats(knex: Knex, scope: { projectId?: string; campaignId?: string } = {}): Promise<void> {
  const { projectId, campaignId } = scope;
  const mine = (alias: string) => [projectId ? `AND ${alias}.project_id = ?::uuid` : '', campaignId ? 'AND e.campaign_id = ?::uuid' : ''].join(' ');
  const bindings = [...(projectId ? [projectId] : []), ...(campaignId ? [campaignId] : [])];
  await knex.raw(`
    INSERT INTO campaign_stats (project_id, campaign_id, shard, total, queued, sent, failed, opens, unique_opens, clicks, unique_clicks)
    SELECT e.project_id, e.campaign_id, 0, count(*), count(*) FILTER (WHERE e.status IN ('QUEUED', 'SENDING')),
           count(*) FILTER (WHERE e.status = 'SENT'), count(*) FILTER (WHERE e.status = 'FAILED'),
           coalesce(sum(e.opens), 0), count(e.first_opened_at), coalesce(sum(e.clicks), 0), count(e.first_clicked_at)
    FROM emails e WHERE e.campaign_id IS NOT NULL AND NOT e.is_test ${mine('e')}
    GROUP BY 1, 2`, bindings);
  await knex.raw(`
    WITH ev AS (
      SELECT v.project_id, e.campaign_id, v.email_id, v.name, v.created_at
      FROM events v JOIN emails e ON e.project_id = v.project_id AND e.id = v.email_id
      WHERE v.email_id IS NOT NULL AND e.campaign_id IS NOT NULL AND NOT e.is_test ${mine('v')}
        AND v.name IN ('email.opened', 'email.clicked', 'email.bounced', 'email.complained', 'contact.unsubscribed')),
    firsts AS (
      SELECT DISTINCT ON (email_id, name) * FROM ev WHERE name IN ('email.bounced', 'email.complained', 'contact.unsubscribed')
      ORDER BY email_id, name, created_at)
    INSERT INTO campaign_hourly_stats (project_id, campaign_id, hour, shard, opened, clicked, bounced, complained, unsubscribed)
    SELECT project_id, campaign_id, date_trunc('hour', created_at, 'UTC'), 0,
           count(*) FILTER (WHERE name = 'email.opened' AND NOT first), count(*) FILTER (WHERE name = 'email.clicked' AND NOT first),
           count(*) FILTER (WHERE name = 'email.bounced' AND first), count(*) FILTER (WHERE name = 'email.complained' AND first),
           count(*) FILTER (WHERE name = 'contact.unsubscribed' AND first)
    FROM (SELECT *, false AS first FROM ev WHERE name IN ('email.opened', 'email.clicked') UNION ALL SELECT *, true FROM firsts) x
    GROUP BY 1, 2, 3`, bindings);
  await knex.raw(`
    INSERT INTO campaign_link_stats (project_id, campaign_id, url, shard, clicks, unique_clicks)
    SELECT v.project_id, e.campaign_id, coalesce(v.data->>'url', ''), 0, count(*),
           count(DISTINCT v.email_id) FILTER (WHERE v.data->>'bot' IS DISTINCT FROM 'true')
    FROM events v JOIN emails e ON e.project_id = v.project_id AND e.id = v.email_id
    WHERE v.name = 'email.clicked' AND v.email_id IS NOT NULL AND e.campaign_id IS NOT NULL AND NOT e.is_test ${mine('v')}
    GROUP BY 1, 2, 3`, bindings);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`CREATE INDEX IF NOT EXISTS events_engagement_idx ON events (project_id, email_id, created_at) INCLUDE (name)
    WHERE name IN ('email.opened', 'email.clicked') AND email_id IS NOT NULL`);
  await knex.raw('DROP TABLE IF EXISTS campaign_link_stats');
  await knex.raw('DROP TABLE IF EXISTS campaign_hourly_stats');
  await knex.raw('DROP TABLE IF EXISTS campaign_stats');
}
