import type { Knex } from 'knex';
import { idFloor } from './pages';

/**
 * The tables that only grow, partitioned by month (issue 33, point 5; migration 20261208000001): PostgreSQL declarative
 * range partitions, one per UTC month, so that retention drops a whole month at once (`DROP TABLE` of the partition:
 * no row is read or deleted, no vacuum follows) instead of deleting rows one by one.
 *
 * - `emails` by `partition_at`: the creation time for an email of its own (a send, a test copy), the campaign's
 *   `emails_partition_at` (its first batch) for a campaign's emails. All of a campaign's emails thus share one value and
 *   one partition, so the unique key "each contact once per campaign" (emails_campaign_contact_key), which must include
 *   the partition key, still holds across a campaign's batches, its A/B sample and its rest days later.
 * - `events`, `raw_messages`, `attachments`, `inbound_messages` by `id`: UUIDv7, whose first 48 bits are the time the id
 *   was made, so the primary key (project_id, id) already includes the key and a lookup by id reads one partition.
 *
 * Each table has: its monthly partitions `<table>_pYYYYMM`, created ahead of time (ensurePartitions, at every worker's and
 * API process's start and by housekeeping); a `<table>_default` partition, the safety net that takes a row whose month
 * has no partition (a clock far off, an id from before the oldest partition kept), so that no write ever fails for a
 * missing partition; and on a database migrated with rows, `<table>_legacy`, the table as it was, attached whole for the
 * months before the migration (so the migration reads no row and copies none). Partitions' indexes are named after the
 * parent's index with the partition's suffix (`emails_pkey_p202611`), so a plan names the index it uses.
 *
 * Why a DEFAULT partition and creation ahead, both: ahead keeps the default empty (attaching a month scans the default
 * for rows of that month, holding a lock on it), the default makes a missed creation harmless. A default partition
 * rules out DETACH … CONCURRENTLY; measured (BENCHMARKS.md section 39), a detach does not help here anyway: the tables
 * keep their foreign keys to contacts and projects, so detaching takes SHARE ROW EXCLUSIVE on both, and the detached
 * table's foreign keys must then go (ACCESS EXCLUSIVE on each, until the commit) before it can be dropped; `DROP TABLE`
 * of the attached partition locks only the parent and the default partition, for the statement (dropPartition).
 */

/** How a table is partitioned: its key column, and whether the key is a time or a UUIDv7 (whose prefix is a time). */
export interface PartitionedTable {
  table: string;
  key: 'partition_at' | 'id';
  kind: 'time' | 'uuid';
}

export const PARTITIONED_TABLES: readonly PartitionedTable[] = [
  { table: 'emails', key: 'partition_at', kind: 'time' },
  { table: 'events', key: 'id', kind: 'uuid' },
  { table: 'raw_messages', key: 'id', kind: 'uuid' },
  { table: 'attachments', key: 'id', kind: 'uuid' },
  { table: 'inbound_messages', key: 'id', kind: 'uuid' },
];

export type PartitionedName = 'emails' | 'events' | 'raw_messages' | 'attachments' | 'inbound_messages';

export function partitioned(table: PartitionedName): PartitionedTable {
  return PARTITIONED_TABLES.find((t) => t.table === table)!;
}

/** Months created ahead of the current one: a process that stops creating them leaves this much time before the default partition takes rows. */
export const MONTHS_AHEAD = 2;

/**
 * An email's `partition_at` is at most its id's time (its creation, or its campaign's first batch, earlier) and at least
 * that time minus the lag of a campaign's last batch behind its first: an A/B campaign's rest comes after its test's
 * wait (at most 7 days) and the sample's delivery. A lookup by id reads the partitions of that window
 * (herald_email_lo, herald_email_hi) and, when the email is not there (a campaign slower than that, a row written with
 * another partition_at), looks again in all (emails/emails.ts findEmail, tracking/record.ts recordHits,
 * db/queries/events.ts eventEffects' event_emails).
 */
export const EMAIL_LOOKUP_LAG_DAYS = 8;
/** Clock differences between the hosts that make ids and the database's: a minute of slack above an id's time. */
export const EMAIL_LOOKUP_SLACK_SECONDS = 60;

/**
 * The condition that finds emails `e` by the rows of `source` (their project_id and id) in the partitions between `lo`
 * and `hi` (SQL expressions): one row comparison over the primary key (project_id, id, partition_at), which no other
 * index can serve, and the bounds alone beside it, for the partitions to be pruned as the join runs (a range, not an
 * OR). Written as two equalities, the id could also be found by a skip scan of an index whose third column it is
 * (emails_contact_idx, emails_project_to_idx), and a generic plan made while a campaign's partition was filling took
 * one for its connection's life: a descent per contact, 25 ms a write of 20 at 100,000 emails (BENCHMARKS.md section
 * 53). For the writes that look emails up by id: the delivery outcome (sending/delivery.ts RECORD_SQL) and tracking's
 * hits (tracking/record.ts HITS_SQL).
 */
export const emailByKey = (source: string, lo: string, hi: string) =>
  `(e.project_id, e.id, e.partition_at) BETWEEN (${source}.project_id, ${source}.id, ${lo}) AND (${source}.project_id, ${source}.id, ${hi})
       AND e.partition_at BETWEEN ${lo} AND ${hi}`;

/** The first instant of the UTC month of `t`, `delta` months on. */
export function monthStart(t: Date, delta = 0): Date {
  return new Date(Date.UTC(t.getUTCFullYear(), t.getUTCMonth() + delta, 1));
}

/** `_pYYYYMM` of the month starting at `start`. */
export function monthSuffix(start: Date): string {
  return `_p${start.getUTCFullYear()}${String(start.getUTCMonth() + 1).padStart(2, '0')}`;
}

/** The time in a UUIDv7's first 48 bits. */
export function uuidTime(id: string): Date {
  return new Date(parseInt(id.slice(0, 8) + id.slice(9, 13), 16));
}

/** A bound of a partition of `t` as SQL literal: a month start, or the smallest UUID of that millisecond. */
function boundLiteral(t: PartitionedTable, at: Date): string {
  return t.kind === 'time' ? `'${at.toISOString()}'` : `'${idFloor(at)}'`;
}

/** A catalog name as a quoted SQL identifier. */
export const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

export interface Partition {
  name: string;
  /** The table's oid, as text: a partition dropped and made again under its name has another. */
  oid: string;
  /** Range bounds as times (a UUID key's bound: the time of its prefix); null: MINVALUE (lower) or MAXVALUE (upper). */
  from: Date | null;
  to: Date | null;
  isDefault: boolean;
}

/**
 * For a statement built from a list of partitions read earlier (a process's cached list): the SQL of `t`'s partitions'
 * oids as they are now, one text in oid order (NULL for none), to select beside the statement's work; partitionOids is
 * the same text of a list. When the two differ, the list is out of date (a month made or dropped since).
 * The table's oid is an initplan, looked up once: as a filter's operand `to_regclass` ran for each of pg_inherits' rows
 * (every partitioned table's partitions), 0.07 ms of a window of events' 1.3 ms statement (BENCHMARKS.md section 74).
 */
export const partitionOidsSql = (t: PartitionedTable): string =>
  `(SELECT string_agg(i.inhrelid::text, ',' ORDER BY i.inhrelid) FROM pg_inherits i WHERE i.inhparent = (SELECT to_regclass('${t.table}')))`;
export const partitionOids = (parts: readonly Partition[]): string | null =>
  parts.map((p) => p.oid).sort((a, b) => Number(a) - Number(b)).join(',') || null;

/** The partitions of `t`, oldest first, the default last. */
export async function listPartitions(db: Knex | Knex.Transaction, t: PartitionedTable): Promise<Partition[]> {
  const { rows } = await db.raw(
    `SELECT c.relname AS name, c.oid::text AS oid, pg_get_expr(c.relpartbound, c.oid) AS bound
     FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = to_regclass(?)`,
    [t.table],
  );
  const value = (text: string | undefined): Date | null => {
    if (!text || text === 'MINVALUE' || text === 'MAXVALUE') return null;
    const literal = text.replace(/^'|'$/g, '');
    if (t.kind === 'uuid') return uuidTime(literal);
    // PostgreSQL prints a timestamptz bound in the session's time zone, e.g. '2026-11-01 00:00:00+00'.
    return new Date(literal.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00').replace(/([+-]\d\d)(\d\d)$/, '$1:$2'));
  };
  const parts: Partition[] = (rows as { name: string; oid: string; bound: string }[]).map((r) => {
    if (r.bound === 'DEFAULT') return { name: r.name, oid: r.oid, from: null, to: null, isDefault: true };
    const m = /FROM \((.+?)\) TO \((.+?)\)/.exec(r.bound);
    return { name: r.name, oid: r.oid, from: value(m?.[1]), to: value(m?.[2]), isDefault: false };
  });
  return parts.sort((a, b) => Number(a.isDefault) - Number(b.isDefault) || (a.from?.getTime() ?? -Infinity) - (b.from?.getTime() ?? -Infinity));
}

/** The parent's indexes, with their definitions (`CREATE [UNIQUE] INDEX name ON ONLY public.t USING …`) and whether one is the primary key. */
async function parentIndexes(db: Knex | Knex.Transaction, table: string): Promise<{ name: string; def: string; primary: boolean }[]> {
  const { rows } = await db.raw(
    `SELECT ic.relname AS name, pg_get_indexdef(x.indexrelid) AS def, x.indisprimary AS primary
     FROM pg_index x JOIN pg_class ic ON ic.oid = x.indexrelid WHERE x.indrelid = ?::regclass ORDER BY ic.relname`,
    [table],
  );
  return rows;
}

/**
 * Creates a partition of `t` as a table of its own, with the parent's columns, checks and indexes (named
 * `<parent index><suffix>`), then attaches it: ATTACH takes SHARE UPDATE EXCLUSIVE on the parent (reads and writes go
 * on), a short lock on the tables its foreign keys name, and an ACCESS EXCLUSIVE one on the default partition, which it
 * scans for rows of the new range (none while partitions are made ahead). Rows of that range found in the default
 * partition (a month whose partition was missing) are moved into the new one first, in the same transaction. Runs in
 * the caller's transaction when given one. `range` 'default': the DEFAULT partition.
 */
export async function createPartition(db: Knex | Knex.Transaction, t: PartitionedTable, name: string, range: { from: Date | null; to: Date } | 'default', lockTimeoutMs: number): Promise<void> {
  const cast = t.kind === 'time' ? 'timestamptz' : 'uuid';
  const run = async (trx: Knex.Transaction) => {
    await trx.raw(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(lockTimeoutMs))}`);
    const suffix = name.slice(t.table.length);
    await trx.raw(`CREATE TABLE ${ident(name)} (LIKE ${ident(t.table)} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION)`);
    for (const index of await parentIndexes(trx, t.table)) {
      const child = `${index.name}${suffix}`;
      const def = index.def
        .replace(/^CREATE (UNIQUE )?INDEX \S+ ON ONLY \S+/, (_m, unique: string | undefined) => `CREATE ${unique ?? ''}INDEX ${ident(child)} ON ${ident(name)}`);
      await trx.raw(def);
      if (index.primary) await trx.raw(`ALTER TABLE ${ident(name)} ADD CONSTRAINT ${ident(child)} PRIMARY KEY USING INDEX ${ident(child)}`);
    }
    if (range === 'default') {
      await trx.raw(`ALTER TABLE ${ident(t.table)} ATTACH PARTITION ${ident(name)} DEFAULT`);
      return;
    }
    const lower = range.from ? boundLiteral(t, range.from) : 'MINVALUE';
    const upper = boundLiteral(t, range.to);
    const fallback = (await listPartitions(trx, t)).find((p) => p.isDefault);
    if (fallback) {
      // Rows that went to the default partition for want of this one: moved into it, under the lock ATTACH takes anyway.
      await trx.raw(`LOCK TABLE ${ident(fallback.name)} IN ACCESS EXCLUSIVE MODE`);
      const inRange = `${range.from ? `${ident(t.key)} >= ${lower}::${cast} AND ` : ''}${ident(t.key)} < ${upper}::${cast}`;
      await trx.raw(`WITH moved AS (DELETE FROM ${ident(fallback.name)} WHERE ${inRange} RETURNING *) INSERT INTO ${ident(name)} SELECT * FROM moved`);
    }
    await trx.raw(`ALTER TABLE ${ident(t.table)} ATTACH PARTITION ${ident(name)} FOR VALUES FROM (${lower}) TO (${upper})`);
  };
  if ((db as Knex.Transaction).isTransaction) await run(db as Knex.Transaction);
  else await (db as Knex).transaction(run);
}

export interface EnsureOptions {
  now?: Date;
  monthsAhead?: number;
  /** How long each DDL statement may wait for its locks (then it gives up; the next call tries again). */
  lockTimeoutMs?: number;
}

/**
 * Makes sure every month from the current one to `monthsAhead` months ahead has its partition, in each partitioned table
 * (and that each has its default partition). Creates only what is missing: a call that finds everything in place reads
 * the catalog and writes nothing. Answers the partitions created. Safe to run from several processes at once: the one
 * that loses a race to create a partition finds it made (its transaction fails and is ignored).
 */
export async function ensurePartitions(knex: Knex, opts: EnsureOptions = {}): Promise<string[]> {
  const now = opts.now ?? new Date();
  const ahead = opts.monthsAhead ?? MONTHS_AHEAD;
  const lockTimeoutMs = opts.lockTimeoutMs ?? 2000;
  const created: string[] = [];
  for (const t of PARTITIONED_TABLES) {
    const parts = await listPartitions(knex, t);
    if (parts.length === 0 && !(await isPartitioned(knex, t.table))) continue; // before the migration
    if (!parts.some((p) => p.isDefault)) {
      await createPartition(knex, t, `${t.table}_default`, 'default', lockTimeoutMs);
      created.push(`${t.table}_default`);
    }
    // The months up to the horizon: from the end of the last ranged partition (or this month) on.
    const ranged = parts.filter((p) => !p.isDefault);
    const last = ranged.reduce<Date | null>((max, p) => (p.to && (!max || p.to > max) ? p.to : max), null);
    let start = last && last > monthStart(now) ? last : monthStart(now);
    const horizon = monthStart(now, ahead + 1);
    while (start < horizon) {
      const end = monthStart(start, 1);
      const name = `${t.table}${monthSuffix(monthStart(start))}`;
      if (!ranged.some((p) => p.name === name) && !ranged.some((p) => p.from && p.to && p.from <= start && p.to > start)) {
        try {
          await createPartition(knex, t, name, { from: start, to: end }, lockTimeoutMs);
          created.push(name);
        } catch (err) {
          // Made meanwhile by another process: fine. Anything else: the next call tries again.
          if (!(await listPartitions(knex, t)).some((p) => p.name === name)) throw err;
        }
      }
      start = end;
    }
  }
  return created;
}

async function isPartitioned(db: Knex, table: string): Promise<boolean> {
  const { rows } = await db.raw(`SELECT relkind FROM pg_class WHERE oid = to_regclass(?)`, [table]);
  return rows[0]?.relkind === 'p';
}

/** Creates the partitions of `t` for the months from `from` (a month start) to `to` (excluded), e.g. the history of a migrated table or a benchmark's year. */
export async function createMonthlyPartitions(knex: Knex | Knex.Transaction, t: PartitionedTable, from: Date, to: Date, lockTimeoutMs = 60_000): Promise<string[]> {
  const existing = await listPartitions(knex, t);
  const made: string[] = [];
  for (let start = monthStart(from); start < to; start = monthStart(start, 1)) {
    const name = `${t.table}${monthSuffix(start)}`;
    if (existing.some((p) => p.name === name || (p.from && p.to && p.from <= start && p.to > start))) continue;
    await createPartition(knex, t, name, { from: start, to: monthStart(start, 1) }, lockTimeoutMs);
    made.push(name);
  }
  return made;
}

export interface DropResult {
  table: string;
  partition: string;
  /** Milliseconds to the parent's ACCESS EXCLUSIVE lock (the writers queue behind a waiting drop too: bounded by lock_timeout). */
  waitMs: number;
  /** Milliseconds of the DROP statement, under the lock (the lock is released at commit). */
  dropMs: number;
  /** Milliseconds from the lock until the commit returned: the DROP, the commit, and the unlinking of the files, which PostgreSQL does once the locks are released (the benchmark's probes measure what writers wait). */
  holdMs: number;
  /** Attempts it took (a lock wait past the timeout gives up and tries again). */
  attempts: number;
  /** With `listLocks`: the tables the drop held locks on before its commit, `name mode` (the benchmark prints them). */
  locks?: string[];
}

/**
 * Drops one partition: `DROP TABLE` of the attached partition, which takes ACCESS EXCLUSIVE on the parent and on its
 * default partition (whose implicit range changes) and on nothing else (the partition's foreign keys are its parent's:
 * contacts and projects are not touched). No row is read. The locks last the statement, milliseconds, and are released
 * at commit before the files are unlinked (seconds for gigabytes on a disk mounted with online discard, which no one
 * waits for: BENCHMARKS.md section 39, where a drop of the detached partition instead was measured and rejected: its
 * foreign keys then lock contacts and projects). The parent's lock is taken first, explicitly (ONLY: LOCK TABLE of a
 * partitioned table would lock every partition; DROP does not), so that its wait is measured; the wait is bounded by
 * `lockTimeoutMs` (the writers that queue behind it wait no longer) and retried up to `attempts` times with a pause
 * between, so that a long transaction somewhere delays the drop, never the writers.
 */
export async function dropPartition(knex: Knex, table: string, partition: string, opts: { lockTimeoutMs?: number; attempts?: number; pauseMs?: number; listLocks?: boolean } = {}): Promise<DropResult> {
  const lockTimeoutMs = opts.lockTimeoutMs ?? 100;
  const attempts = opts.attempts ?? 20;
  for (let attempt = 1; ; attempt++) {
    let started = 0;
    let locked = 0;
    let dropped = 0;
    let locks: string[] | undefined;
    try {
      await knex.transaction(async (trx) => {
        await trx.raw(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(lockTimeoutMs))}`);
        started = performance.now();
        await trx.raw(`LOCK TABLE ONLY ${ident(table)} IN ACCESS EXCLUSIVE MODE`);
        locked = performance.now();
        await trx.raw(`DROP TABLE IF EXISTS ${ident(partition)}`);
        dropped = performance.now();
        if (opts.listLocks) {
          const { rows } = await trx.raw(`SELECT l.relation::regclass::text AS rel, l.mode FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
            WHERE l.pid = pg_backend_pid() AND l.locktype = 'relation' AND l.granted AND c.relkind IN ('r', 'p') AND c.relname <> 'pg_class' ORDER BY 1, 2`);
          locks = rows.map((r: { rel: string; mode: string }) => `${r.rel} ${r.mode}`);
        }
      });
      return { table, partition, waitMs: locked - started, dropMs: dropped - locked, holdMs: performance.now() - locked, attempts: attempt, ...(locks ? { locks } : {}) };
    } catch (err) {
      if ((err as { code?: string }).code !== '55P03' || attempt >= attempts) throw err;
      await new Promise((r) => setTimeout(r, opts.pauseMs ?? 250 * attempt));
    }
  }
}
