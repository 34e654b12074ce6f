import type { Knex } from 'knex';

export interface LinkStats {
  url: string;
  /** Every click on it, scanners' too. */
  clicks: number;
  /** Emails whose recipient followed it (clicks flagged as a scanner's are not counted). */
  uniqueClicks: number;
}

export interface CampaignStats {
  totalRecipients: number;
  queued: number;
  sent: number;
  delivered: number;
  /** Unique opens: emails opened at least once by a person (proxies and scanners do not count); = uniqueOpens. */
  opened: number;
  /** Unique clicks: emails with at least one click by a person; = uniqueClicks. */
  clicked: number;
  bounced: number;
  complained: number;
  failed: number;
  unsubscribed: number;
  /** uniqueOpens / sent. */
  openRate: number;
  /** uniqueClicks / sent. */
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
 * A campaign's stats in one statement: its email rows by status and their open and click counts (tracking/record.ts
 * keeps them on the row), the distinct emails that have each other kind of event, and the clicks per link from the
 * click events (events_clicks_idx). The emails are read through emails_campaign_contact_key, their events through
 * the (project_id, email_id) indexes. Rates are of sent emails. Test copies are not counted. `delivered` is what the
 * receiving servers accepted and did not bounce since (status SENT): SMTP gives no later receipt to count.
 */
export async function campaignStats(db: Knex, projectId: string, campaignId: string): Promise<CampaignStats> {
  const { rows } = await db.raw(campaignStatsSql, [projectId, campaignId, projectId, projectId, STATS_LINKS]);
  const r = rows[0] as {
    total: number; queued: number; sent: number; failed: number; opens: number; unique_opens: number; clicks: number; unique_clicks: number;
    events: Record<string, number>; links: LinkStats[];
  };
  const ev = (name: string) => r.events[name] ?? 0;
  const rate = (n: number) => (r.sent > 0 ? Math.round((n / r.sent) * 10_000) / 10_000 : 0);
  return {
    totalRecipients: r.total, queued: r.queued, sent: r.sent, delivered: r.sent, opened: r.unique_opens,
    clicked: r.unique_clicks, bounced: ev('email.bounced'), complained: ev('email.complained'), failed: r.failed,
    unsubscribed: ev('contact.unsubscribed'), openRate: rate(r.unique_opens), clickRate: rate(r.unique_clicks),
    opens: r.opens, uniqueOpens: r.unique_opens, clicks: r.clicks, uniqueClicks: r.unique_clicks, links: r.links,
  };
}

/** The statement of campaignStats (bindings: project, campaign, project, project, link limit); exported for EXPLAIN. */
export const campaignStatsSql = `
  WITH e AS (
    SELECT id, status, opens, clicks, first_opened_at, first_clicked_at
    FROM emails WHERE project_id = ?::uuid AND campaign_id = ?::uuid AND NOT is_test),
  ev AS (
    SELECT ev.name, count(DISTINCT ev.email_id)::int AS n
    FROM events ev JOIN e ON ev.email_id = e.id
    WHERE ev.project_id = ?::uuid AND ev.email_id IS NOT NULL AND ev.name IN ('email.bounced', 'email.complained', 'contact.unsubscribed')
    GROUP BY ev.name),
  links AS (
    SELECT ev.data->>'url' AS url, count(*)::int AS clicks,
           (count(DISTINCT ev.email_id) FILTER (WHERE NOT coalesce((ev.data->>'bot')::boolean, false)))::int AS unique_clicks
    FROM events ev JOIN e ON ev.email_id = e.id
    WHERE ev.project_id = ?::uuid AND ev.name = 'email.clicked' AND ev.email_id IS NOT NULL
    GROUP BY 1 ORDER BY clicks DESC, url LIMIT ?)
  SELECT count(*)::int AS total,
         count(*) FILTER (WHERE status IN ('QUEUED', 'SENDING'))::int AS queued,
         count(*) FILTER (WHERE status = 'SENT')::int AS sent,
         count(*) FILTER (WHERE status = 'FAILED')::int AS failed,
         coalesce(sum(opens), 0)::int AS opens,
         count(first_opened_at)::int AS unique_opens,
         coalesce(sum(clicks), 0)::int AS clicks,
         count(first_clicked_at)::int AS unique_clicks,
         coalesce((SELECT json_object_agg(name, n) FROM ev), '{}'::json) AS events,
         coalesce((SELECT json_agg(json_build_object('url', url, 'clicks', clicks, 'uniqueClicks', unique_clicks) ORDER BY clicks DESC, url) FROM links), '[]'::json) AS links
  FROM e`;
