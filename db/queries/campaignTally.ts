/**
 * How the statements that change a campaign's emails keep its counts (campaign_stats, migration 20261203000001) in
 * the same statement: each names the rows it changed, with what each adds to which count, and campaignTally folds them
 * into one upsert per campaign. A statement whose rows change no count (a claim: QUEUED → SENDING) writes nothing.
 */

/** campaign_stats' counts. */
export type TallyColumn = 'total' | 'queued' | 'sent' | 'failed' | 'cancelled' | 'suppressed' | 'bounced' | 'opens' | 'unique_opens' | 'clicks' | 'unique_clicks';

/** Each (campaign) row is spread over this many shards, picked by the writer's session (as event_names and project_daily_stats). */
export const CAMPAIGN_STATS_SHARDS = 8;

/**
 * The CTEs `campaign_tally` and `campaign_variant_tally` (for a statement's WITH list) that add up `rows`, a relation
 * with `project_id`, `campaign_id` (NULL: not a campaign's email), `variant` (an A/B campaign's sample email's variant;
 * NULL otherwise) and one column per name in `columns` (what each row adds to that count, negative to take away):
 * into campaign_stats, one upsert per campaign, and for the sample's emails also into campaign_variant_stats, one per
 * campaign and variant (migration 20261207000001); each in key order, so that concurrent writers of one shard lock
 * its rows in the same order. A statement about plain campaigns' emails finds no row for the second.
 */
export function campaignTally(rows: string, columns: readonly TallyColumn[]): string {
  const sums = columns.map((c) => `sum(t.${c})`);
  const upsert = (table: string, keys: string[]) => `
    INSERT INTO ${table} AS s (project_id, campaign_id, ${keys.map((k) => `${k}, `).join('')}shard, ${columns.join(', ')})
    SELECT t.project_id, t.campaign_id, ${keys.map((k) => `t.${k}, `).join('')}pg_backend_pid() % ${CAMPAIGN_STATS_SHARDS}, ${sums.join(', ')}
    FROM tallied AS t
    WHERE t.campaign_id IS NOT NULL${keys.map((k) => ` AND t.${k} IS NOT NULL`).join('')}
    GROUP BY t.project_id, t.campaign_id${keys.map((k) => `, t.${k}`).join('')}
    HAVING ${sums.map((s) => `${s} <> 0`).join(' OR ')}
    ORDER BY t.project_id, t.campaign_id${keys.map((k) => `, t.${k}`).join('')}
    ON CONFLICT (project_id, campaign_id, ${keys.map((k) => `${k}, `).join('')}shard) DO UPDATE SET ${columns.map((c) => `${c} = s.${c} + excluded.${c}`).join(', ')}
    RETURNING 1`;
  return `tallied AS (SELECT * FROM ${rows} AS r),
  campaign_tally AS (${upsert('campaign_stats', [])}),
  campaign_variant_tally AS (${upsert('campaign_variant_stats', ['variant'])})`;
}

/**
 * What an email's move from status `was` to status `now` (SQL expressions; `was` NULL for a new email) adds to the
 * status counts, as the select list `total, queued, sent, failed, cancelled, suppressed, bounced`: one count per status
 * (`queued` counts QUEUED and SENDING: claimed, not yet sent), so that they add up to `total` (migration
 * 20261206000010).
 */
export function statusTally(was: string, now: string): string {
  const is = (status: string, list: string) => `coalesce((${status}) IN (${list}), false)::int`;
  return [
    `(CASE WHEN (${was}) IS NULL THEN 1 ELSE 0 END) AS total`,
    `${is(now, "'QUEUED', 'SENDING'")} - ${is(was, "'QUEUED', 'SENDING'")} AS queued`,
    `${is(now, "'SENT'")} - ${is(was, "'SENT'")} AS sent`,
    `${is(now, "'FAILED'")} - ${is(was, "'FAILED'")} AS failed`,
    `${is(now, "'CANCELLED'")} - ${is(was, "'CANCELLED'")} AS cancelled`,
    `${is(now, "'SUPPRESSED'")} - ${is(was, "'SUPPRESSED'")} AS suppressed`,
    `${is(now, "'BOUNCED'")} - ${is(was, "'BOUNCED'")} AS bounced`,
  ].join(', ');
}

/** The columns statusTally answers. */
export const STATUS_TALLY: readonly TallyColumn[] = ['total', 'queued', 'sent', 'failed', 'cancelled', 'suppressed', 'bounced'];
