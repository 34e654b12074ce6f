import { rowLimit } from '../db/pages';
import type { Knex } from 'knex';
import { Gauge, Registry } from 'prom-client';
import type { Logger } from '../logging/logger';

/** Every status an email row can have (db/migrations: the emails status check). */
export const EMAIL_STATUSES = ['QUEUED', 'SENDING', 'SENT', 'FAILED', 'CANCELLED', 'BOUNCED', 'SUPPRESSED'] as const;

export interface DatabaseGaugeOptions {
  /** How long one reading of the database serves every scrape (many scrapers, one set of queries). */
  cacheMs?: number;
  /**
   * Below this many email rows, emails are counted by status exactly (a scan of at most this many rows); at or above
   * it, they are estimated from PostgreSQL's statistics. See `snapshotQuery`.
   */
  exactEmailsBelow?: number;
  /** Counts through partial indexes (queue depth, live executions) stop here: a gauge at this value means "at least". */
  countCap?: number;
  log?: Logger;
}

export const DEFAULT_CACHE_MS = 5_000;
export const DEFAULT_EXACT_EMAILS_BELOW = 10_000;
export const DEFAULT_COUNT_CAP = 1_000_000;

/** What one reading of the database found. */
export interface DatabaseSnapshot {
  /** Email rows by status, and whether these are estimates (statistics) rather than a count. */
  emails: { byStatus: Record<string, number>; estimated: boolean; statisticsAgeSeconds: number | null } | null;
  queueDepth: number;
  /** Seconds since the oldest QUEUED email was created; 0 when the queue is empty. */
  queueOldestAgeSeconds: number;
  executions: { RUNNING: number; WAITING: number };
}

/**
 * The delivery queue's depth: QUEUED rows through the queue's partial index (emails_queue_idx, which holds only
 * QUEUED rows, so the scan reads the queue, never the table), stopped at `cap` rows so that a huge backlog costs a
 * bounded scan. The ORDER BY is the index's own order: without it, PostgreSQL 18 preferred a skip scan of
 * emails_project_status_idx (every project's QUEUED range), measured slower on 1,000,000 emails (bench/metrics.ts). Exported for the EXPLAIN test (test/db/metricsIndexes.test.ts).
 *
 * One project's queue (`queueSql('project', cap)`, the overview's: GET /stats/overview) is the project's QUEUED range of
 * emails_project_status_idx (project_id, status, id), counted up to the cap the same way; its oldest entry is the
 * first of that range (ids are UUIDv7, in creation order): one index probe.
 */
export function queueSql(scope: 'all'): { depth: string; oldest: string };
export function queueSql(scope: 'project', cap: number): { depth: string; oldest: string };
export function queueSql(scope: 'all' | 'project', cap?: number): { depth: string; oldest: string } {
  if (scope === 'project') {
    return {
      // Newest first, the index's order, and the cap written into the text (db/pages.ts rowLimit): the overview runs
      // with its generic plan (emails/overview.ts), which then has one plan whatever the project (this range read
      // backwards, stopped by the LIMIT), not a guess from averages.
      depth: `SELECT count(*)::int AS n FROM (SELECT 1 FROM emails WHERE project_id = ?::uuid AND status = 'QUEUED' ORDER BY id DESC LIMIT ${rowLimit(cap! + 1)}) q`,
      oldest: "SELECT min(created_at) AS oldest FROM (SELECT created_at FROM emails WHERE project_id = ?::uuid AND status = 'QUEUED' ORDER BY id LIMIT 1) o",
    };
  }
  return {
    depth: "SELECT count(*)::int AS n FROM (SELECT 1 FROM emails WHERE status = 'QUEUED' ORDER BY priority, id LIMIT ?::int) q",
    // The first entry of each priority (0 transactional, 1 campaign) of the partial index, in id order (UUIDv7:
    // creation order), then the earlier of the two. Two index probes whatever the size.
    oldest: `SELECT min(created_at) AS oldest FROM (
  (SELECT created_at FROM emails WHERE status = 'QUEUED' AND priority = 0 ORDER BY id LIMIT 1)
  UNION ALL
  (SELECT created_at FROM emails WHERE status = 'QUEUED' AND priority = 1 ORDER BY id LIMIT 1)) o`,
  };
}

export const QUEUE_DEPTH_SQL = queueSql('all').depth;

/** The oldest QUEUED email's creation time (see queueSql). */
export const QUEUE_OLDEST_SQL = queueSql('all').oldest;

/** One project's delivery queue: its depth (up to `cap`: at the cap it means "at least") and its oldest entry's age. */
export interface ProjectQueue {
  depth: number;
  depthExact: boolean;
  /** Seconds since the oldest QUEUED email of the project was created; 0 when its queue is empty. */
  oldestAgeSeconds: number;
}

/**
 * One project's queue as two columns (`depth`, `age`) of the caller's statement (queueSql('project', cap)), counted up to
 * `cap`, and what they mean (projectQueueOf): the overview (emails/overview.ts) reads it in its one statement.
 */
export function projectQueueColumns(projectId: string, cap: number): { sql: string; bindings: unknown[] } {
  const { depth, oldest } = queueSql('project', cap);
  return { sql: `(${depth}) AS depth, (SELECT extract(epoch FROM now() - oldest) FROM (${oldest}) q)::float8 AS age`, bindings: [projectId, projectId] };
}

export function projectQueueOf(row: { depth: number; age: number | null }, cap: number): ProjectQueue {
  return { depth: Math.min(row.depth, cap), depthExact: row.depth <= cap, oldestAgeSeconds: Math.max(0, row.age ?? 0) };
}

/** Live automation executions by status, through automation_executions_active_idx (migration 20261126100001), capped. */
export const EXECUTIONS_SQL = `SELECT status, count(*)::int AS n FROM (
  SELECT status FROM automation_executions WHERE status IN ('RUNNING', 'WAITING') LIMIT ?::int) a GROUP BY status`;

/**
 * Everything the gauges show, in ONE statement (one round trip per reading, whatever the number of series).
 *
 * Emails by status: the emails table holds every message ever sent (millions of rows), so a `count(*) … GROUP BY
 * status` per scrape would read all of it each time. Instead:
 * - a small table (fewer than `exactBelow` rows, which the LIMITed sample finds out by reading at most that many) is
 *   counted exactly: a new or quiet installation sees its true figures. The sample is taken only while the statistics
 *   say the table may be small (`reltuples` under twice the threshold, or never counted): a large table is not read;
 * - a large one is estimated as PostgreSQL's planner estimates it: `pg_class.reltuples` (rows in the table) times the
 *   status's frequency among the most common values in `pg_stats` (a status outside that list gets the planner's
 *   share of the rest). Both are refreshed by autovacuum's ANALYZE (after 10 % of the table changed), so the figures
 *   lag by up to that much; `herald_emails_estimated` says which of the two a scrape shows, and
 *   `herald_emails_statistics_age_seconds` how old the statistics are. The cost is a catalog lookup, whatever the size.
 * The exact path of the active statuses is the queue's own gauges (depth and age), which are counted, not estimated.
 * The emails table is partitioned by month (db/partitions.ts): the rows and the statistics are each partition's (which
 * autovacuum analyses; it never analyses a partitioned table itself), estimated partition by partition and summed.
 */
function snapshotQuery(knex: Knex, exactBelow: number, cap: number): Knex.Raw {
  return knex.raw(
    `WITH parts AS (
       SELECT c.oid, c.relname, c.reltuples FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'emails'::regclass
     ), small AS (
       -- A partition never counted yet (reltuples -1) may hold anything, unless its file is empty (a month made ahead): sample.
       SELECT coalesce((SELECT bool_or(reltuples < 0 AND pg_relation_size(oid) > 0) OR sum(greatest(reltuples, 0)) < 2 * ?::int FROM parts), true) AS maybe
     ), sample AS (SELECT status FROM emails WHERE (SELECT maybe FROM small) LIMIT ?::int)
     SELECT
       (SELECT maybe FROM small) AS sampling,
       (SELECT count(*) FROM sample)::int AS sampled,
       (SELECT coalesce(json_object_agg(status, n), '{}'::json) FROM (SELECT status, count(*)::int AS n FROM sample GROUP BY status) s) AS exact,
       (SELECT coalesce(json_agg(json_build_object('vals', s.most_common_vals::text::text[], 'freqs', s.most_common_freqs, 'distinct', s.n_distinct,
                                                   'nulls', s.null_frac, 'reltuples', p.reltuples)), '[]'::json)
          FROM parts p LEFT JOIN pg_stats s ON s.schemaname = current_schema() AND s.tablename = p.relname AND s.attname = 'status' AND NOT s.inherited
          WHERE p.reltuples > 0) AS stats,
       (SELECT sum(greatest(reltuples, 0)) FROM parts)::float8 AS reltuples,
       -- The oldest statistics among the partitions that hold rows.
       (SELECT max(extract(epoch FROM now() - greatest(u.last_analyze, u.last_autoanalyze)))
          FROM parts p JOIN pg_stat_user_tables u ON u.relid = p.oid WHERE p.reltuples > 0)::float8 AS stats_age,
       (${QUEUE_DEPTH_SQL}) AS queue_depth,
       (SELECT extract(epoch FROM now() - oldest) FROM (${QUEUE_OLDEST_SQL}) q)::float8 AS queue_age,
       (SELECT coalesce(json_object_agg(status, n), '{}'::json) FROM (${EXECUTIONS_SQL}) e) AS executions`,
    [exactBelow, exactBelow, cap, cap],
  );
}

interface StatsRow {
  vals: string[] | null;
  freqs: number[] | null;
  distinct: number;
  nulls: number;
}

/**
 * Email rows by status from the statistics: reltuples × the status's frequency among the most common values. ANALYZE
 * leaves out of that list only values too rare to count in its sample (a status seen once in 30,000 rows); what the
 * list does not cover (1 − its frequencies − nulls) is shared among the statuses outside it, but only when the
 * statistics say there are such values (n_distinct above the list's length), so that the figures add up to the table.
 */
export function estimateByStatus(stats: StatsRow, reltuples: number): Record<string, number> {
  const vals = stats.vals ?? [];
  const freqs = stats.freqs ?? [];
  const distinct = stats.distinct >= 0 ? stats.distinct : -stats.distinct * reltuples;
  const outside = EMAIL_STATUSES.filter((s) => !vals.includes(s));
  const rest = distinct > vals.length ? Math.max(0, 1 - freqs.reduce((a, b) => a + b, 0) - stats.nulls) : 0;
  const out: Record<string, number> = {};
  for (const status of EMAIL_STATUSES) {
    const i = vals.indexOf(status);
    out[status] = Math.round((i >= 0 ? freqs[i]! : rest / outside.length) * reltuples);
  }
  return out;
}

export async function readDatabase(knex: Knex, exactBelow = DEFAULT_EXACT_EMAILS_BELOW, cap = DEFAULT_COUNT_CAP): Promise<DatabaseSnapshot> {
  const { rows } = await snapshotQuery(knex, exactBelow, cap);
  const r = rows[0] as {
    sampling: boolean; sampled: number; exact: Record<string, number>; stats: (StatsRow & { reltuples: number })[]; reltuples: number | null; stats_age: number | null;
    queue_depth: number; queue_age: number | null; executions: Record<string, number>;
  };
  let emails: DatabaseSnapshot['emails'];
  if (r.sampling && r.sampled < exactBelow) {
    emails = { byStatus: Object.fromEntries(EMAIL_STATUSES.map((s) => [s, r.exact[s] ?? 0])), estimated: false, statisticsAgeSeconds: r.stats_age };
  } else if (r.stats.length > 0 && r.stats.every((s) => s.vals !== null || s.freqs !== null)) {
    // Each partition's estimate, summed (a partition with rows but no statistics yet leaves no figure: below).
    const byStatus: Record<string, number> = Object.fromEntries(EMAIL_STATUSES.map((s) => [s, 0]));
    for (const part of r.stats) for (const [status, n] of Object.entries(estimateByStatus(part, part.reltuples))) byStatus[status]! += n;
    emails = { byStatus, estimated: true, statisticsAgeSeconds: r.stats_age };
  } else {
    emails = null; // a large table never analysed yet: no figure rather than a wrong one (autovacuum analyses it soon)
  }
  return {
    emails,
    queueDepth: r.queue_depth,
    queueOldestAgeSeconds: Math.max(0, r.queue_age ?? 0),
    executions: { RUNNING: r.executions.RUNNING ?? 0, WAITING: r.executions.WAITING ?? 0 },
  };
}

/**
 * The gauges that read the database, computed at scrape time from one reading shared for `cacheMs` (and by
 * concurrent scrapes). A database that does not answer leaves them out of the scrape and sets
 * `herald_metrics_database_up` to 0, so that the process's own series are still served.
 * Every process that serves metrics reads the same figures: across a pool, aggregate them with max(), not sum().
 */
export function databaseRegistry(knex: Knex, opts: DatabaseGaugeOptions = {}): Registry {
  const cacheMs = opts.cacheMs ?? DEFAULT_CACHE_MS;
  const exactBelow = opts.exactEmailsBelow ?? DEFAULT_EXACT_EMAILS_BELOW;
  const cap = opts.countCap ?? DEFAULT_COUNT_CAP;
  const registry = new Registry();
  // The reading in flight is shared by every gauge of a scrape (and by concurrent scrapes); a finished one is reused
  // for cacheMs. A failed reading is not kept: the next scrape tries again.
  let cached: { settledAt: number | undefined; reading: Promise<DatabaseSnapshot | null> } | undefined;
  const snapshot = (): Promise<DatabaseSnapshot | null> => {
    if (cached && (cached.settledAt === undefined || Date.now() - cached.settledAt < cacheMs)) return cached.reading;
    const entry: NonNullable<typeof cached> = {
      settledAt: undefined,
      reading: readDatabase(knex, exactBelow, cap).then(
        (s) => { entry.settledAt = Date.now(); return s; },
        (err: Error) => {
          opts.log?.warn({ err: err.message }, 'metrics: could not read the database gauges');
          if (cached === entry) cached = undefined;
          return null;
        },
      ),
    };
    cached = entry;
    return entry.reading;
  };

  // prom-client calls each gauge's collect on every scrape; all of them share the one reading above. When a reading
  // fails, the labelled gauges are left out and the others keep their last value: herald_metrics_database_up says so.
  const gauge = (name: string, help: string, read: (g: Gauge<string>, s: DatabaseSnapshot | null) => void, labelNames: string[] = []) =>
    new Gauge({ name, help, labelNames, registers: [registry], async collect() { read(this, await snapshot()); } });

  gauge('herald_metrics_database_up', 'Whether the last reading of the database gauges succeeded (1) or failed (0).', (g, s) => g.set(s ? 1 : 0));
  gauge('herald_emails', `Email rows by status: exact below ${exactBelow} rows, above that an ESTIMATE from PostgreSQL statistics (pg_stats most common values x pg_class.reltuples, refreshed by ANALYZE); see herald_emails_estimated.`, (g, s) => {
    g.reset();
    if (s?.emails) for (const [status, n] of Object.entries(s.emails.byStatus)) g.set({ status }, n);
  }, ['status']);
  gauge('herald_emails_estimated', '1 when herald_emails is an estimate from PostgreSQL statistics, 0 when it is an exact count.', (g, s) => {
    if (s?.emails) g.set(s.emails.estimated ? 1 : 0);
  });
  gauge('herald_emails_statistics_age_seconds', 'Time since the emails table was last analysed: the age of the statistics herald_emails estimates from (NaN: never analysed yet).', (g, s) => {
    if (s?.emails) g.set(s.emails.statisticsAgeSeconds ?? NaN);
  });
  gauge('herald_delivery_queue_depth', `QUEUED emails waiting for delivery (counted through the queue's partial index, up to ${cap}).`, (g, s) => {
    if (s) g.set(s.queueDepth);
  });
  gauge('herald_delivery_queue_oldest_age_seconds', 'Age of the oldest QUEUED email (since it was stored); 0 when the queue is empty.', (g, s) => {
    if (s) g.set(s.queueOldestAgeSeconds);
  });
  gauge('herald_automation_executions', `Automation executions by live status: running, waiting (counted through a partial index, up to ${cap}).`, (g, s) => {
    g.reset();
    if (s) {
      g.set({ status: 'running' }, s.executions.RUNNING);
      g.set({ status: 'waiting' }, s.executions.WAITING);
    }
  }, ['status']);
  return registry;
}
