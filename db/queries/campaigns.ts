import type { Knex } from 'knex';

export interface LinkStats {
  url: string;
  /** Every click on it, scanners' too. */
  clicks: number;
  /** Emails whose recipient followed it (clicks flagged as a scanner's are not counted). */
  uniqueClicks: number;
}

export interface CampaignStats {
  /** = queued + sent + failed + cancelled + suppressed. */
  totalRecipients: number;
  queued: number;
  /** Handed to the receiving server: delivered, or bounced since. */
  sent: number;
  delivered: number;
  /** Not sent because the campaign was cancelled (or failed) first. */
  cancelled: number;
  /** Not sent because the address was on the suppression list when its turn came. */
  suppressed: number;
  /** Unique opens: emails opened at least once by a person (proxies and scanners do not count); = uniqueOpens. */
  opened: number;
  /** Unique clicks: emails with at least one click by a person; = uniqueClicks. */
  clicked: number;
  bounced: number;
  complained: number;
  failed: number;
  unsubscribed: number;
  /** uniqueOpens / delivered. */
  openRate: number;
  /** uniqueClicks / delivered. */
  clickRate: number;
  /** Every open recorded, mail proxies' and scanners' included. */
  opens: number;
  uniqueOpens: number;
  /** Every click recorded, scanners' included. */
  clicks: number;
  uniqueClicks: number;
  /** Clicks per link, most clicked first (at most STATS_LINKS links). */
  links: LinkStats[];
}

export const STATS_LINKS = 200;

/**
 * A campaign's stats in one statement, from its results as they were kept (migration 20261203000001): its emails by
 * status and their open and click counts (campaign_stats), the emails with a bounce, a complaint or an unsubscribe
 * (campaign_hourly_stats) and its clicks per link (campaign_link_stats), a few rows per campaign (8 shards, its hours,
 * its links) whatever its size. Rates are of delivered emails. Test copies are not counted. `delivered` is what the
 * receiving servers accepted and did not bounce since (status SENT): SMTP gives no later receipt to count.
 */
export async function campaignStats(db: Knex, projectId: string, campaignId: string): Promise<CampaignStats> {
  const { rows } = await db.raw(campaignStatsSql, [projectId, campaignId, projectId, campaignId, projectId, campaignId, STATS_LINKS]);
  const r = rows[0] as {
    total: number; queued: number; sent: number; failed: number; cancelled: number; suppressed: number; bounced_emails: number;
    opens: number; unique_opens: number; clicks: number; unique_clicks: number; bounced: number; complained: number; unsubscribed: number; links: LinkStats[];
  };
  const rate = (n: number) => (r.sent > 0 ? Math.round((n / r.sent) * 10_000) / 10_000 : 0);
  return {
    totalRecipients: r.total, queued: r.queued, sent: r.sent + r.bounced_emails, delivered: r.sent, cancelled: r.cancelled, suppressed: r.suppressed, opened: r.unique_opens,
    clicked: r.unique_clicks, bounced: r.bounced, complained: r.complained, failed: r.failed,
    unsubscribed: r.unsubscribed, openRate: rate(r.unique_opens), clickRate: rate(r.unique_clicks),
    opens: r.opens, uniqueOpens: r.unique_opens, clicks: r.clicks, uniqueClicks: r.unique_clicks, links: r.links,
  };
}

/** The statement of campaignStats (bindings: project, campaign three times, link limit); exported for EXPLAIN. */
export const campaignStatsSql = `
  WITH s AS (
    SELECT coalesce(sum(total), 0)::int AS total, coalesce(sum(queued), 0)::int AS queued, coalesce(sum(sent), 0)::int AS sent,
           coalesce(sum(failed), 0)::int AS failed, coalesce(sum(cancelled), 0)::int AS cancelled, coalesce(sum(suppressed), 0)::int AS suppressed,
           coalesce(sum(bounced), 0)::int AS bounced_emails, coalesce(sum(opens), 0)::int AS opens, coalesce(sum(unique_opens), 0)::int AS unique_opens,
           coalesce(sum(clicks), 0)::int AS clicks, coalesce(sum(unique_clicks), 0)::int AS unique_clicks
    FROM campaign_stats WHERE project_id = ?::uuid AND campaign_id = ?::uuid),
  h AS (
    SELECT coalesce(sum(bounced), 0)::int AS bounced, coalesce(sum(complained), 0)::int AS complained,
           coalesce(sum(unsubscribed), 0)::int AS unsubscribed
    FROM campaign_hourly_stats WHERE project_id = ?::uuid AND campaign_id = ?::uuid),
  links AS (
    SELECT nullif(url, '') AS url, sum(clicks)::int AS clicks, sum(unique_clicks)::int AS unique_clicks
    FROM campaign_link_stats WHERE project_id = ?::uuid AND campaign_id = ?::uuid
    GROUP BY url ORDER BY clicks DESC, nullif(url, '') LIMIT ?)
  SELECT s.*, h.*,
         coalesce((SELECT json_agg(json_build_object('url', url, 'clicks', clicks, 'uniqueClicks', unique_clicks) ORDER BY clicks DESC, url) FROM links), '[]'::json) AS links
  FROM s, h`;

/** An A/B campaign's sample figures of one variant: the campaign's own counts and rates, but for its links. */
export type VariantStats = Omit<CampaignStats, 'links' | 'opened' | 'clicked'> & {
  /** The variant's position (0 is A). */
  variant: number;
};

/**
 * The sample's stats of each of an A/B campaign's `variants` (positions 0 … variants − 1), from what was kept as it
 * happened (campaign_variant_stats, migration 20261207000001): one statement over a few rows per variant. A variant
 * with no email yet has zeros. Counted as the campaign's own: `sent` includes emails bounced since, `delivered` not,
 * `bounced` is the emails with a bounce, rates are of delivered.
 */
export async function campaignVariantStats(db: Knex, projectId: string, campaignId: string, variants: number): Promise<VariantStats[]> {
  const { rows } = await db.raw(
    `SELECT v.variant, coalesce(sum(s.total), 0)::int AS total, coalesce(sum(s.queued), 0)::int AS queued, coalesce(sum(s.sent), 0)::int AS sent,
            coalesce(sum(s.failed), 0)::int AS failed, coalesce(sum(s.cancelled), 0)::int AS cancelled, coalesce(sum(s.suppressed), 0)::int AS suppressed,
            coalesce(sum(s.bounced), 0)::int AS bounced_emails, coalesce(sum(s.bounce_events), 0)::int AS bounced,
            coalesce(sum(s.complained), 0)::int AS complained, coalesce(sum(s.unsubscribed), 0)::int AS unsubscribed,
            coalesce(sum(s.opens), 0)::int AS opens, coalesce(sum(s.unique_opens), 0)::int AS unique_opens,
            coalesce(sum(s.clicks), 0)::int AS clicks, coalesce(sum(s.unique_clicks), 0)::int AS unique_clicks
     FROM generate_series(0, ?::int - 1) AS v(variant)
     LEFT JOIN campaign_variant_stats s ON s.project_id = ?::uuid AND s.campaign_id = ?::uuid AND s.variant = v.variant
     GROUP BY v.variant ORDER BY v.variant`,
    [variants, projectId, campaignId],
  );
  return (rows as Record<string, number>[]).map((r) => {
    const rate = (n: number) => (r.sent! > 0 ? Math.round((n / r.sent!) * 10_000) / 10_000 : 0);
    return {
      variant: r.variant!, totalRecipients: r.total!, queued: r.queued!, sent: r.sent! + r.bounced_emails!, delivered: r.sent!, cancelled: r.cancelled!,
      suppressed: r.suppressed!, failed: r.failed!, bounced: r.bounced!, complained: r.complained!, unsubscribed: r.unsubscribed!,
      opens: r.opens!, uniqueOpens: r.unique_opens!, clicks: r.clicks!, uniqueClicks: r.unique_clicks!, openRate: rate(r.unique_opens!), clickRate: rate(r.unique_clicks!),
    };
  });
}

/** What decides an A/B test (campaigns/abDecision.ts): each variant's delivered sample emails and their unique opens and clicks. */
export async function campaignVariantFigures(db: Knex, projectId: string, campaignId: string, variants: number) {
  return (await campaignVariantStats(db, projectId, campaignId, variants))
    .map((s) => ({ variant: s.variant, delivered: s.delivered, uniqueOpens: s.uniqueOpens, uniqueClicks: s.uniqueClicks }));
}

/** A deleted campaign's results (migration 20261203000001), in its delete's transaction. */
export async function deleteCampaignStats(trx: Knex.Transaction, projectId: string, campaignId: string): Promise<void> {
  for (const table of ['campaign_stats', 'campaign_hourly_stats', 'campaign_link_stats', 'campaign_variant_stats']) {
    await trx(table).where({ project_id: projectId, campaign_id: campaignId }).delete();
  }
}
