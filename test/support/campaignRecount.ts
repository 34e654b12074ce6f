import type { Knex } from 'knex';
import { campaignSeries, SERIES_INTERVALS } from '../../campaigns/series';
import { campaignStats, campaignVariantStats, STATS_LINKS } from '../../db/queries/campaigns';

/**
 * A campaign's stats counted from its rows (and, since migration 20261206000010, its emails by every status), as GET /campaigns/:id/stats answered before its results were kept as they
 * happen (migration 20261203000001): the reference the kept results must equal, whichever statements wrote the
 * campaign's emails and events (queueing, delivery, cancel, failure, bounces, complaints, unsubscribes, opens, clicks).
 * Holds while none of the campaign's emails was deleted (a contact's deletion keeps what was sent: history).
 */
const recount = (ofVariant: boolean) => `
  WITH e AS (
    SELECT id, status, opens, clicks, first_opened_at, first_clicked_at
    FROM emails WHERE project_id = ?::uuid AND campaign_id = ?::uuid AND NOT is_test ${ofVariant ? 'AND variant = ?::smallint' : ''}),
  ev AS (
    SELECT ev.name, count(DISTINCT ev.email_id)::int AS n
    FROM events ev JOIN e ON ev.email_id = e.id
    WHERE ev.project_id = ?::uuid AND ev.name IN ('email.bounced', 'email.complained', 'contact.unsubscribed')
    GROUP BY ev.name),
  links AS (
    SELECT ev.data->>'url' AS url, count(*)::int AS clicks,
           (count(DISTINCT ev.email_id) FILTER (WHERE NOT coalesce((ev.data->>'bot')::boolean, false)))::int AS unique_clicks
    FROM events ev JOIN e ON ev.email_id = e.id
    WHERE ev.project_id = ?::uuid AND ev.name = 'email.clicked'
    GROUP BY 1 ORDER BY clicks DESC, url LIMIT ?),
  hours AS (
    SELECT date_trunc('hour', ev.created_at, 'UTC') AS at, count(*) FILTER (WHERE ev.name = 'email.opened')::int AS opens,
           count(*) FILTER (WHERE ev.name = 'email.clicked')::int AS clicks
    FROM events ev JOIN e ON ev.email_id = e.id
    WHERE ev.project_id = ?::uuid AND ev.name IN ('email.opened', 'email.clicked')
    GROUP BY 1)
  SELECT count(*)::int AS total,
         count(*) FILTER (WHERE status IN ('QUEUED', 'SENDING'))::int AS queued,
         count(*) FILTER (WHERE status IN ('SENT', 'BOUNCED'))::int AS sent,
         count(*) FILTER (WHERE status = 'SENT')::int AS delivered,
         count(*) FILTER (WHERE status = 'FAILED')::int AS failed,
         count(*) FILTER (WHERE status = 'CANCELLED')::int AS cancelled,
         count(*) FILTER (WHERE status = 'SUPPRESSED')::int AS suppressed,
         coalesce(sum(opens), 0)::int AS opens, count(first_opened_at)::int AS unique_opens,
         coalesce(sum(clicks), 0)::int AS clicks, count(first_clicked_at)::int AS unique_clicks,
         coalesce((SELECT json_object_agg(name, n) FROM ev), '{}'::json) AS events,
         coalesce((SELECT json_agg(json_build_object('url', url, 'clicks', clicks, 'uniqueClicks', unique_clicks) ORDER BY clicks DESC, url) FROM links), '[]'::json) AS links,
         coalesce((SELECT json_agg(json_build_object('at', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:00:00.000"Z"'), 'opens', opens, 'clicks', clicks) ORDER BY at) FROM hours), '[]'::json) AS hours
  FROM e`;
const RECOUNT = recount(false);

/** Checks that the campaign's kept stats and hourly chart equal a recount of its rows; answers the stats. */
export async function expectStatsKept(knex: Knex, projectId: string, campaignId: string): Promise<Awaited<ReturnType<typeof campaignStats>>> {
  const { rows } = await knex.raw(RECOUNT, [projectId, campaignId, projectId, projectId, STATS_LINKS, projectId]);
  const r = rows[0];
  const kept = await campaignStats(knex, projectId, campaignId);
  expect({
    totalRecipients: kept.totalRecipients, queued: kept.queued, sent: kept.sent, delivered: kept.delivered, failed: kept.failed,
    cancelled: kept.cancelled, suppressed: kept.suppressed, opens: kept.opens,
    uniqueOpens: kept.uniqueOpens, clicks: kept.clicks, uniqueClicks: kept.uniqueClicks, bounced: kept.bounced,
    complained: kept.complained, unsubscribed: kept.unsubscribed, links: kept.links,
  }).toEqual({
    totalRecipients: r.total, queued: r.queued, sent: r.sent, delivered: r.delivered, failed: r.failed, cancelled: r.cancelled,
    suppressed: r.suppressed, opens: r.opens, uniqueOpens: r.unique_opens,
    clicks: r.clicks, uniqueClicks: r.unique_clicks, bounced: r.events['email.bounced'] ?? 0,
    complained: r.events['email.complained'] ?? 0, unsubscribed: r.events['contact.unsubscribed'] ?? 0, links: r.links,
  });
  // The counts add up: every recipient is queued, sent, failed, cancelled or suppressed.
  expect(kept.queued + kept.sent + kept.failed + kept.cancelled + kept.suppressed).toBe(kept.totalRecipients);
  // The chart: the hours with opens or clicks, as counted from the events.
  const byHour = (await campaignSeries(knex, projectId, campaignId, SERIES_INTERVALS[0]!)).points.filter((p) => p.opens > 0 || p.clicks > 0);
  expect(byHour).toEqual(r.hours);
  // An A/B campaign's: each variant's sample, kept apart (campaign_variant_stats), equals a recount of its emails.
  const variants = Number((await knex('campaign_variants').where({ project_id: projectId, campaign_id: campaignId }).count({ n: '*' }))[0]!.n);
  for (const v of variants ? await campaignVariantStats(knex, projectId, campaignId, variants) : []) {
    const { rows: [c] } = await knex.raw(recount(true), [projectId, campaignId, v.variant, projectId, projectId, STATS_LINKS, projectId]);
    expect({
      variant: v.variant, totalRecipients: v.totalRecipients, queued: v.queued, sent: v.sent, delivered: v.delivered, failed: v.failed, cancelled: v.cancelled,
      suppressed: v.suppressed, opens: v.opens, uniqueOpens: v.uniqueOpens, clicks: v.clicks, uniqueClicks: v.uniqueClicks, bounced: v.bounced,
      complained: v.complained, unsubscribed: v.unsubscribed,
    }).toEqual({
      variant: v.variant, totalRecipients: c.total, queued: c.queued, sent: c.sent, delivered: c.delivered, failed: c.failed, cancelled: c.cancelled,
      suppressed: c.suppressed, opens: c.opens, uniqueOpens: c.unique_opens, clicks: c.clicks, uniqueClicks: c.unique_clicks,
      bounced: c.events['email.bounced'] ?? 0, complained: c.events['email.complained'] ?? 0, unsubscribed: c.events['contact.unsubscribed'] ?? 0,
    });
    expect(v.queued + v.sent + v.failed + v.cancelled + v.suppressed).toBe(v.totalRecipients);
  }
  return kept;
}
