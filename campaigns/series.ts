import type { Knex } from 'knex';

/**
 * A campaign's opens and clicks over time (GET /campaigns/:id/stats?series=hour|day): the console's chart of how a
 * campaign was read after it went out.
 *
 * A point is an hour or a UTC day and counts the `email.opened` and `email.clicked` events of the campaign's emails
 * recorded in it: the events GET /events lists, at most one per email and kind (per link for clicks) in each tracking
 * window (tracking/record.ts), mail proxies' and scanners' included. So `opens` here is at most the stats' `opens`
 * (every pixel fetch). Test copies are not counted.
 *
 * The points run from the bucket the campaign started in (the first event's when it has no start: a campaign written
 * straight into the database) to now, every bucket present (zeros included) so that the chart's gaps are real, and at
 * most SERIES_POINTS of them: the first week by hour, the first 90 days by day.
 */
export type SeriesInterval = 'hour' | 'day';
export const SERIES_INTERVALS: readonly SeriesInterval[] = ['hour', 'day'];

export const SERIES_POINTS: Record<SeriesInterval, number> = { hour: 168, day: 90 };

export interface SeriesPoint {
  /** The bucket's start (ISO 8601, UTC): an hour, or a UTC day's midnight. */
  at: string;
  opens: number;
  clicks: number;
}

export interface CampaignSeries {
  interval: SeriesInterval;
  points: SeriesPoint[];
}

/**
 * The statement of campaignSeries (its bindings: campaignSeriesBindings; exported for EXPLAIN). One statement: the
 * campaign's opens and clicks by hour as they were recorded (campaign_hourly_stats, migration 20261203000001: written
 * with the events by EVENT_EFFECTS), summed per bucket, then joined to every bucket of the range: a few rows per hour
 * of the campaign's life, whatever its size. `date_trunc(…, 'UTC')`: the same buckets whatever the session's time zone.
 */
export const campaignSeriesSql = `
  WITH hits AS (
    SELECT date_trunc(?, hour, 'UTC') AS at, sum(opened)::int AS opens, sum(clicked)::int AS clicks
    FROM campaign_hourly_stats
    WHERE project_id = ?::uuid AND campaign_id = ?::uuid AND (opened > 0 OR clicked > 0)
    GROUP BY 1),
  range AS (
    SELECT coalesce(date_trunc(?, k.started_at, 'UTC'), (SELECT min(at) FROM hits)) AS first
    FROM campaigns k WHERE k.project_id = ?::uuid AND k.id = ?::uuid)
  SELECT b.at, coalesce(h.opens, 0) AS opens, coalesce(h.clicks, 0) AS clicks
  FROM range r
  CROSS JOIN LATERAL generate_series(r.first, least(r.first + ?::int * ?::interval, date_trunc(?, now(), 'UTC')), ?::interval) AS b(at)
  LEFT JOIN hits h ON h.at = b.at
  WHERE r.first IS NOT NULL
  ORDER BY b.at`;

/** The bindings of campaignSeriesSql, in order. */
export function campaignSeriesBindings(projectId: string, campaignId: string, interval: SeriesInterval): (string | number)[] {
  const step = `1 ${interval}`;
  return [interval, projectId, campaignId, interval, projectId, campaignId, SERIES_POINTS[interval] - 1, step, interval, step];
}

export async function campaignSeries(db: Knex, projectId: string, campaignId: string, interval: SeriesInterval): Promise<CampaignSeries> {
  const { rows } = await db.raw(campaignSeriesSql, campaignSeriesBindings(projectId, campaignId, interval));
  return {
    interval,
    points: (rows as { at: Date; opens: number; clicks: number }[]).map((r) => ({ at: r.at.toISOString(), opens: r.opens, clicks: r.clicks })),
  };
}
