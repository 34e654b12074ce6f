import type { Knex } from 'knex';
import type { DomainStatus, RecordPurpose, RecordStatuses } from '../db/models/Domain';
import { genericListStatement } from '../db/pages';
import { projectQueueColumns, projectQueueOf, type ProjectQueue } from '../metrics/database';

/**
 * A project's overview (GET /stats/overview, the console's first page): its email outcomes per day, its delivery
 * queue, and its sending domains that need attention. One statement of three reads, each a few index probes whatever
 * the project's size:
 * - the days come from project_daily_stats (migration 20261201000001), which EVENT_EFFECTS (db/queries/events.ts)
 *   adds to in the statement that records the events: no read of the emails or events tables;
 * - the queue is metrics/database.ts's (the Prometheus gauges' queries, scoped to the project), counted up to a cap;
 * - the domains are the project's few rows.
 */

/** The windows the overview answers, in days (the console's 7/30/90). */
export const OVERVIEW_WINDOWS = [7, 30, 90] as const;
export type OverviewWindow = (typeof OVERVIEW_WINDOWS)[number];

/** The queue is counted up to this many QUEUED emails; past it the depth says "at least" (`depthExact: false`). */
export const OVERVIEW_QUEUE_CAP = 10_000;

export const DAY_COUNTS = ['sent', 'bounced', 'complained', 'opened', 'clicked', 'failed'] as const;
export type DayCounts = Record<(typeof DAY_COUNTS)[number], number>;

/** One UTC day: `day` is its date (YYYY-MM-DD), the counts are the events of that name recorded that day. */
export interface DayVolume extends DayCounts {
  day: string;
}

/** Why a domain needs attention, with the record concerned (null: the domain as a whole). */
export interface DomainIssue {
  code: 'NOT_VERIFIED' | 'VERIFICATION_FAILED' | 'RECORD_FAILING';
  record: RecordPurpose | null;
  message: string;
}

export interface DomainAttention {
  id: string;
  domain: string;
  status: DomainStatus;
  checkedAt: Date | null;
  issues: DomainIssue[];
}

export interface Overview {
  days: OverviewWindow;
  /** The first and last day of the window (UTC dates; the last is today). */
  from: string;
  to: string;
  /** Every day of the window, oldest first, days without an event included (zeros). */
  series: DayVolume[];
  totals: DayCounts;
  queue: ProjectQueue;
  domains: DomainAttention[];
}

const MS_PER_DAY = 86_400_000;
const utcDate = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** The window's days summed over their shards (exported for the EXPLAIN test of its index). */
export function dailyStatsQuery(db: Knex, projectId: string, from: string) {
  return db('project_daily_stats').where('project_id', projectId).where('day', '>=', from)
    // Ordered by the date itself (the `day` of ORDER BY would be the text below), which the primary key's range gives.
    .groupBy('day').orderBy('project_daily_stats.day')
    .select(db.raw("to_char(day, 'YYYY-MM-DD') AS day"), ...DAY_COUNTS.map((c) => db.raw(`sum(${c})::int AS ${c}`)));
}

/** What a domain's row says needs doing; none for a verified domain whose records all pass. */
export function domainIssues(d: { domain: string; status: DomainStatus; records: RecordStatuses }): DomainIssue[] {
  const issues: DomainIssue[] = [];
  if (d.status === 'PENDING') issues.push({ code: 'NOT_VERIFIED', record: null, message: `${d.domain} is not verified yet: publish its DNS records, then verify it.` });
  if (d.status === 'FAILED') issues.push({ code: 'VERIFICATION_FAILED', record: null, message: `The last check of ${d.domain} did not find its DKIM key in DNS: mail from it is not sent.` });
  for (const [purpose, status] of Object.entries(d.records) as [RecordPurpose, string][]) {
    if (status === 'FAILED') issues.push({ code: 'RECORD_FAILING', record: purpose, message: `The ${purpose.replace(/_/g, ' ')} record of ${d.domain} is missing or wrong.` });
  }
  return issues;
}

/**
 * The overview's one statement (one round trip, one database session): the days, the queue's two columns, the domains
 * (exported for the EXPLAIN test). Run with its generic plan (db/pages.ts genericListStatement): each of its reads is an
 * equality on the leading columns of an index, so its plan is the same for every project, and planning it afresh
 * (the partitions of emails considered for the queue) took about as long as running it (0.7-0.9 ms against ~1 ms,
 * EXPLAIN ANALYZE on 1,000,000 emails; BENCHMARKS.md section 56).
 */
export function overviewStatement(db: Knex, projectId: string, from: string): Knex.Raw {
  const queue = projectQueueColumns(projectId, OVERVIEW_QUEUE_CAP);
  return db.raw(
    `SELECT coalesce((SELECT json_agg(d) FROM (?) d), '[]') AS days, ${queue.sql},
            -- A project's domains are few (one per sending domain); served by domains_project_id_idx.
            coalesce((SELECT json_agg(x ORDER BY x.id DESC) FROM (SELECT id, domain, status, records, checked_at FROM domains WHERE project_id = ?) x), '[]') AS domains`,
    [dailyStatsQuery(db, projectId, from), ...queue.bindings, projectId] as Knex.RawBinding[],
  );
}

export async function overview(db: Knex, projectId: string, days: OverviewWindow, now = new Date()): Promise<Overview> {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const from = utcDate(today - (days - 1) * MS_PER_DAY);
  const { sql, bindings } = overviewStatement(db, projectId, from).toSQL();
  const { rows: [row] } = await genericListStatement(sql)(db, bindings);
  const rows = row.days as DayVolume[];
  const domains = (row.domains as { id: string; domain: string; status: DomainStatus; records: RecordStatuses; checked_at: string | null }[]);
  const byDay = new Map(rows.map((r) => [r.day, r]));
  const totals = Object.fromEntries(DAY_COUNTS.map((c) => [c, 0])) as DayCounts;
  const series: DayVolume[] = [];
  for (let i = days - 1; i >= 0; i--) {
    const day = utcDate(today - i * MS_PER_DAY);
    const found = byDay.get(day);
    const counts = Object.fromEntries(DAY_COUNTS.map((c) => [c, found?.[c] ?? 0])) as DayCounts;
    for (const c of DAY_COUNTS) totals[c] += counts[c];
    series.push({ day, ...counts });
  }
  const attention = domains
    .map((d) => ({ id: d.id, domain: d.domain, status: d.status, checkedAt: d.checked_at === null ? null : new Date(d.checked_at), issues: domainIssues(d) }))
    .filter((d) => d.issues.length > 0);
  return { days, from, to: utcDate(today), series, totals, queue: projectQueueOf(row, OVERVIEW_QUEUE_CAP), domains: attention };
}

export function overviewService({ knex }: { knex: Knex }) {
  return { get: (projectId: string, days: OverviewWindow) => overview(knex, projectId, days) };
}
