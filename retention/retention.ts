import type { Knex } from 'knex';
import type { RetentionConfig } from '../config';
import { idFloor } from '../db/pages';
import {
  dropPartition, ensurePartitions, listPartitions, partitioned, PARTITIONED_TABLES, type DropResult, type PartitionedName,
} from '../db/partitions';
import { pruneInbound } from '../inbound/messages';
import type { Logger } from '../logging/logger';

/**
 * Retention (issue 33, point 5): how long the rows that only grow are kept, and their removal.
 *
 * What goes, and when:
 * - emails and events: RETENTION_DAYS (365 by default) after their month. They are partitioned by month
 *   (db/partitions.ts), and a month's partition is dropped whole once its end is RETENTION_DAYS old (a `DROP TABLE`:
 *   milliseconds of lock, no row read), so a row stays RETENTION_DAYS and at most a month more. An email's month is its
 *   creation's, or for a campaign's emails their campaign's first batch's.
 * - received messages (inbound_messages): INBOUND_RETENTION_DAYS (30), deleted row by row as before
 *   (inbound/messages.ts pruneInbound, every worker's housekeeping) and their partitions dropped once past it.
 * - raw messages and attachments (the bytes of SMTP submissions, API attachments and received mail): a day after both of
 *   the above, so that no kept email or message loses its bytes; never while an email still waiting to be sent needs them.
 * - a project with its own, shorter retention (`projects.retention_days`, PATCH /settings): its older rows of each table
 *   are deleted in bounded batches (a short statement each, SKIP LOCKED), as are the rows of the legacy partitions (a
 *   database migrated with rows keeps them there until that partition's month has passed) and of the default partitions.
 * What is never removed: an email still QUEUED or SENDING (nor the partition that holds it), the emails of a campaign
 * still SCHEDULED or SENDING (its A/B rest relies on them: each contact once per campaign), and everything kept as
 * aggregates, which outlives the rows: campaign_stats and its variant, hourly and link tables, event_names,
 * project_daily_stats. Nothing the API or the console counts is read from the rows (docs/api.md, "Retention").
 */

/** A project's retention when it asks for one: never longer than the installation's. */
export function effectiveDays(config: RetentionConfig, projectDays: number | null | undefined): number {
  return Math.min(projectDays ?? config.days, config.days);
}

const DAY_MS = 86_400_000;

/** The time before which each table's rows go (whole partitions and, for the rows of legacy and default partitions, one by one). */
export function cutoffs(config: RetentionConfig, now = new Date()): Record<PartitionedName, Date> {
  const at = (days: number) => new Date(now.getTime() - days * DAY_MS);
  const files = at(Math.max(config.days, config.inboundDays) + 1);
  return { emails: at(config.days), events: at(config.days), inbound_messages: at(config.inboundDays), raw_messages: files, attachments: files };
}

export interface PartitionRun {
  created: string[];
  dropped: DropResult[];
  /** Partitions past their time that were kept, and why. */
  kept: { partition: string; why: string }[];
}

export interface RetentionDeps {
  knex: Knex;
  config: RetentionConfig;
  log?: Logger;
  /** How long a DROP may wait for its lock before it gives up and tries again (db/partitions.ts dropPartition). */
  lockTimeoutMs?: number;
  /** Each drop lists the relations its transaction locked (the benchmark prints them). */
  listLocks?: boolean;
}

/** The oldest email still to be sent (QUEUED or SENDING). Through the queue's and the claims' partial indexes; ORDER BY … LIMIT 1, not min(): PostgreSQL has no min(uuid). */
export const OLDEST_PENDING_SQL = `SELECT least(
    (SELECT id FROM emails WHERE status = 'QUEUED' AND priority = 0 ORDER BY id LIMIT 1),
    (SELECT id FROM emails WHERE status = 'QUEUED' AND priority = 1 ORDER BY id LIMIT 1),
    (SELECT id FROM emails WHERE status = 'SENDING' ORDER BY id LIMIT 1)) AS id`;

async function oldestPending(knex: Knex): Promise<string | null> {
  const { rows } = await knex.raw(OLDEST_PENDING_SQL);
  return rows[0].id ?? null;
}

/** Why an emails partition past its time must stay for now, or null: an email in it still to be sent, or a campaign still sending its emails into it. */
async function emailsPartitionBusy(knex: Knex, name: string, from: Date | null, to: Date): Promise<string | null> {
  const { rows } = await knex.raw(
    `SELECT EXISTS (SELECT 1 FROM ${name} WHERE status IN ('QUEUED', 'SENDING')) AS pending,
            EXISTS (SELECT 1 FROM campaigns WHERE status IN ('SCHEDULED', 'SENDING') AND emails_partition_at >= ?::timestamptz AND emails_partition_at < ?::timestamptz) AS sending`,
    [from ? from.toISOString() : '-infinity', to.toISOString()],
  );
  if (rows[0].pending) return 'it holds emails still to be sent';
  if (rows[0].sending) return 'a campaign still sending writes its emails into it';
  return null;
}

/**
 * One round of the partitions: the months ahead created (ensurePartitions), and each partition whose range ended before
 * its table's cutoff dropped, oldest first (the default partition never: its rows go one by one, trimRows). Raw
 * messages and attachments are kept while an older email is still to be sent. The partitioned parents are analysed
 * when their partitions changed (autovacuum never analyses a partitioned table).
 */
export async function applyPartitions(deps: RetentionDeps, now = new Date()): Promise<PartitionRun> {
  const { knex } = deps;
  const run: PartitionRun = { created: await ensurePartitions(knex, { now }), dropped: [], kept: [] };
  const cut = cutoffs(deps.config, now);
  const pending = await oldestPending(knex);
  // Files of an email still to be sent are not older than a day before it (they were stored with it).
  const filesBefore = pending ? new Date(Math.min(cut.raw_messages.getTime(), uuidTimeMs(pending) - DAY_MS)) : cut.raw_messages;
  for (const t of PARTITIONED_TABLES) {
    const name = t.table as PartitionedName;
    const before = name === 'raw_messages' || name === 'attachments' ? filesBefore : cut[name];
    for (const p of await listPartitions(knex, t)) {
      if (p.isDefault || !p.to || p.to > before) continue;
      if (name === 'emails') {
        const why = await emailsPartitionBusy(knex, p.name, p.from, p.to);
        if (why) {
          run.kept.push({ partition: p.name, why });
          continue;
        }
      }
      const dropped = await dropPartition(knex, t.table, p.name, { lockTimeoutMs: deps.lockTimeoutMs, listLocks: deps.listLocks });
      deps.log?.info({ ...dropped }, 'retention: partition dropped');
      run.dropped.push(dropped);
    }
  }
  if (run.created.length || run.dropped.length) {
    for (const t of PARTITIONED_TABLES) await knex.raw(`ANALYZE ${t.table}`);
  }
  return run;
}

function uuidTimeMs(id: string): number {
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

export interface TrimOptions {
  /** Rows per statement. */
  batch?: number;
  /** Stop starting statements after this long (the rest is for the next call). */
  budgetMs?: number;
  now?: Date;
}

export interface TrimResult {
  deleted: number;
  /** Rows may remain to delete: call again. */
  more: boolean;
}

/**
 * One bounded DELETE of `target` (a table, or `ONLY` one partition of it): up to `batch` rows of the project made before
 * `before` (ids are UUIDv7: their time), locked with SKIP LOCKED (another worker's concurrent sweep takes others). Emails
 * still to be sent, and those of a campaign still SCHEDULED or SENDING, are never deleted; nor the bytes (raw message,
 * attachments) such an email still needs. Answers the rows deleted.
 */
export function trimSql(table: PartitionedName, target: string): string {
  // The rows to delete are picked (and locked) by an ARRAY(…) sub-select, then deleted by `id = ANY (array)`: a probe of
  // each partition's primary key per id, whatever the planner thinks of the batch's size (an `IN (sub-select)` was
  // planned as a hash join over a sequential scan of every partition: EXPLAIN in test/db/retentionIndexes.test.ts).
  if (table === 'emails') {
    return `DELETE FROM ${target} e WHERE e.project_id = ?::uuid AND e.id = ANY (ARRAY(
         SELECT x.id FROM ${target} x
         WHERE x.project_id = ?::uuid AND x.id < ?::uuid AND x.status NOT IN ('QUEUED', 'SENDING')
           -- The campaigns still sending, read once (their emails stay: each contact once per campaign).
           AND (x.campaign_id IS NULL OR x.campaign_id <> ALL (ARRAY(
                 SELECT k.id FROM campaigns k WHERE k.project_id = ?::uuid AND k.status IN ('SCHEDULED', 'SENDING'))))
         LIMIT ?::int FOR UPDATE OF x SKIP LOCKED))`;
  }
  // The files the project's emails still to be sent need (they are few: the queue, through emails_project_status_idx).
  const keep = table === 'raw_messages'
    ? `AND x.id NOT IN (SELECT raw_message_id FROM emails WHERE project_id = ?::uuid AND status IN ('QUEUED', 'SENDING') AND raw_message_id IS NOT NULL)`
    : table === 'attachments'
      ? `AND x.id NOT IN (SELECT unnest(attachment_ids) FROM emails WHERE project_id = ?::uuid AND status IN ('QUEUED', 'SENDING'))`
      : `AND ?::uuid IS NOT NULL`;
  return `DELETE FROM ${target} r WHERE r.project_id = ?::uuid AND r.id = ANY (ARRAY(
       SELECT x.id FROM ${target} x WHERE x.project_id = ?::uuid AND x.id < ?::uuid ${keep}
       LIMIT ?::int FOR UPDATE OF x SKIP LOCKED))`;
}

/** trimSql's bindings: the project twice, the cutoff id, the project again (emails: for its campaigns), the batch. */
export function trimBindings(_table: PartitionedName, projectId: string, before: Date, batch: number): Knex.RawBinding[] {
  return [projectId, projectId, idFloor(before), projectId, batch];
}

async function deleteBatch(knex: Knex, table: PartitionedName, target: string, projectId: string, before: Date, batch: number): Promise<number> {
  const res = await knex.raw(trimSql(table, target), trimBindings(table, projectId, before, batch));
  return (res as { rowCount: number }).rowCount;
}

/**
 * Deletes, in bounded batches, what whole partitions do not: the rows of projects with a shorter retention than the
 * installation's (from every partition), and the rows of the legacy and default partitions past the installation's
 * cutoffs (every project). Stops after `budgetMs` with `more: true` when rows may remain: only after a full batch, so
 * each call deletes at least a batch or finishes (a call that starts again from the first project finds the targets
 * done before its own empty, one short statement each).
 */
export async function trimRows(deps: RetentionDeps, opts: TrimOptions = {}): Promise<TrimResult> {
  const { knex, config } = deps;
  const batch = opts.batch ?? 2000;
  const budgetMs = opts.budgetMs ?? 20_000;
  const now = opts.now ?? new Date();
  const started = Date.now();
  const global = cutoffs(config, now);
  let deleted = 0;
  const stragglers = new Map<PartitionedName, string[]>();
  for (const t of PARTITIONED_TABLES) {
    stragglers.set(t.table as PartitionedName, (await listPartitions(knex, t)).filter((p) => p.isDefault || p.from === null).map((p) => p.name));
  }
  const projects: { id: string; retention_days: number | null }[] = await knex('projects').orderBy('id').select('id', 'retention_days');
  for (const project of projects) {
    const days = effectiveDays(config, project.retention_days);
    const own = days < config.days ? cutoffs({ days, inboundDays: Math.min(days, config.inboundDays) }, now) : undefined;
    if (own) {
      // Received messages with their bytes first (as housekeeping's prune does), then each table.
      const pruned = await pruneInbound(knex, Math.min(days, config.inboundDays), batch, project.id);
      deleted += pruned;
      if (pruned > 0 && Date.now() - started > budgetMs) return { deleted, more: true };
    }
    for (const t of PARTITIONED_TABLES) {
      const table = t.table as PartitionedName;
      if (table === 'inbound_messages') continue; // pruneInbound: above, and housekeeping's for every project
      const targets = own ? [table] : stragglers.get(table)!.map((p) => `ONLY ${p}`);
      const before = own ? own[table] : global[table];
      for (const target of targets) {
        for (;;) {
          const n = await deleteBatch(knex, table, target, project.id, before, batch);
          deleted += n;
          // A short batch: this target is done, on to the next (so a call always gets further than the last one did).
          if (n < batch) break;
          if (Date.now() - started > budgetMs) return { deleted, more: true };
        }
      }
    }
  }
  return { deleted, more: false };
}

/** The scheduled job's two parts (workflows/retention.ts runs them on either engine), over the app's database. */
export function retentionService(deps: RetentionDeps) {
  return {
    partitions: (now?: Date) => applyPartitions(deps, now),
    trim: (opts?: TrimOptions) => trimRows(deps, opts),
  };
}

export type Retention = ReturnType<typeof retentionService>;

/** Every table that retention reads, for the docs and the tests. */
export const RETAINED_TABLES = PARTITIONED_TABLES.map((t) => t.table);

/** The partition layout of one table (tests, the benchmark). */
export const partitionsOf = (knex: Knex, table: PartitionedName) => listPartitions(knex, partitioned(table));
