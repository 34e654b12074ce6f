import type { Knex } from 'knex';

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
 * rules out DETACH … CONCURRENTLY; measured (BENCHMARKS.md section 39), a detach would not help here anyway: the tables
 * keep their foreign keys to contacts and projects, and detaching the referencing side takes a lock on contacts (which
 * every send writes), and dropping the detached table an ACCESS EXCLUSIVE one on contacts; `DROP TABLE` of the attached
 * partition locks only the parent, for milliseconds.
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
 * another partition_at), looks again in all (emailKeyRange).
 */
export const EMAIL_LOOKUP_LAG_DAYS = 8;
/** Clock differences between the hosts that make ids and the database's: a minute of slack above an id's time. */
export const EMAIL_LOOKUP_SLACK_SECONDS = 60;

/** The first instant of the UTC month of `t`, `delta` months on. */
export function monthStart(t: Date, delta = 0): Date {
  return new Date(Date.UTC(t.getUTCFullYear(), t.getUTCMonth() + delta, 1));
}

/** `_pYYYYMM` of the month starting at `start`. */
export function monthSuffix(start: Date): string {
  return `_p${start.getUTCFullYear()}${String(start.getUTCMonth() + 1).padStart(2, '0')}`;
}

/** The smallest UUID (any version) whose first 48 bits are this time in milliseconds: every UUIDv7 made then or later is ≥ it. */
export function uuidFloor(t: Date): string {
  const ms = Math.min(Math.max(0, t.getTime()), 2 ** 48 - 1).toString(16).padStart(12, '0');
  return `${ms.slice(0, 8)}-${ms.slice(8)}-0000-0000-000000000000`;
}

/** The time in a UUIDv7's first 48 bits. */
export function uuidTime(id: string): Date {
  return new Date(parseInt(id.slice(0, 8) + id.slice(9, 13), 16));
}

/** A bound of a partition of `t` as SQL literal: a month start, or the smallest UUID of that millisecond. */
function boundLiteral(t: PartitionedTable, at: Date): string {
  return t.kind === 'time' ? `'${at.toISOString()}'` : `'${uuidFloor(at)}'`;
}

const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

export interface Partition {
  name: string;
  /** Range bounds as times (a UUID key's bound: the time of its prefix); null: MINVALUE (lower) or MAXVALUE (upper). */
  from: Date | null;
  to: Date | null;
  isDefault: boolean;
}

/** The partitions of `t`, oldest first, the default last. */
export async function listPartitions(db: Knex | Knex.Transaction, t: PartitionedTable): Promise<Partition[]> {
  const { rows } = await db.raw(
    `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
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
  const parts: Partition[] = (rows as { name: string; bound: string }[]).map((r) => {
    if (r.bound === 'DEFAULT') return { name: r.name, from: null, to: null, isDefault: true };
    const m = /FROM \((.+?)\) TO \((.+?)\)/.exec(r.bound);
    return { name: r.name, from: value(m?.[1]), to: value(m?.[2]), isDefault: false };
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

/** One short transaction of a drop that others may wait for: the locks it took, how long it waited and held them. */
export interface DropStep {
  step: string;
  /** Milliseconds to its first lock (the statement's own wait, bounded by lock_timeout). */
  waitMs: number;
  /** Milliseconds from then to its commit. */
  holdMs: number;
  /** With `listLocks`: the tables it held locks on before its commit, `name mode`. */
  locks?: string[];
}

export interface DropResult {
  table: string;
  partition: string;
  /** The steps that lock tables others use (the detach, the foreign keys' removal), each in its own transaction. */
  steps: DropStep[];
  /** The sum of those steps' waits and holds: the time writers may have queued behind the drop. */
  lockedMs: number;
  /** Milliseconds of the last step, the DROP of the detached table (its files unlinked at commit), which locks nothing else. */
  unlinkMs: number;
  /** Attempts the detach took (a lock wait past the timeout gives up and tries again). */
  attempts: number;
}

/** The name a partition takes once detached, until its table is dropped (a run that stopped between is finished by the next: dropRetired). */
const RETIRED = '_retired';

interface LockOptions { lockTimeoutMs: number; attempts: number; pauseMs?: number; listLocks: boolean }

/**
 * One transaction of `statements` whose locks are waited for at most `lockTimeoutMs` (then it gives up, pauses and tries
 * again, up to `attempts` times: a long transaction somewhere delays the drop, never the writers queued behind it).
 */
async function lockedStep(knex: Knex, step: string, statements: string[], o: LockOptions): Promise<DropStep & { attempts: number }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return { ...(await lockedOnce(knex, step, o.lockTimeoutMs, statements, o.listLocks)), attempts: attempt };
    } catch (err) {
      if ((err as { code?: string }).code !== '55P03' || attempt >= o.attempts) throw err;
      await new Promise((r) => setTimeout(r, o.pauseMs ?? 250 * attempt));
    }
  }
}

async function lockedOnce(knex: Knex, step: string, lockTimeoutMs: number, statements: string[], listLocks: boolean): Promise<DropStep> {
  let started = 0;
  let locked = 0;
  let locks: string[] | undefined;
  await knex.transaction(async (trx) => {
    await trx.raw(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(lockTimeoutMs))}`);
    started = performance.now();
    for (const [i, sql] of statements.entries()) {
      await trx.raw(sql);
      if (i === 0) locked = performance.now();
    }
    if (listLocks) {
      const { rows } = await trx.raw(`SELECT l.relation::regclass::text AS rel, l.mode FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
        WHERE l.pid = pg_backend_pid() AND l.locktype = 'relation' AND l.granted AND c.relkind IN ('r', 'p') AND c.relname <> 'pg_class' ORDER BY 1, 2`);
      locks = rows.map((r: { rel: string; mode: string }) => `${r.rel} ${r.mode}`);
    }
  });
  return { step, waitMs: locked - started, holdMs: performance.now() - locked, ...(locks ? { locks } : {}) };
}

/**
 * Finishes a detached partition (`<partition>_retired`): its foreign keys dropped, each in a short transaction of its
 * own (dropping a table that has a foreign key takes ACCESS EXCLUSIVE on the table it references — contacts,
 * projects — until its commit, and the commit is when the table's files are unlinked: seconds for gigabytes on a
 * disk mounted with online discard, BENCHMARKS.md section 39), then the table, which nothing else then locks.
 */
async function dropRetired(knex: Knex, retired: string, o: LockOptions): Promise<{ steps: DropStep[]; unlinkMs: number }> {
  const steps: DropStep[] = [];
  const { rows: fks } = await knex.raw(`SELECT conname AS name FROM pg_constraint WHERE conrelid = to_regclass(?) AND contype = 'f' ORDER BY conname`, [retired]);
  for (const fk of fks as { name: string }[]) {
    const { attempts: _attempts, ...step } = await lockedStep(knex, `drop ${fk.name}`, [`ALTER TABLE ${ident(retired)} DROP CONSTRAINT IF EXISTS ${ident(fk.name)}`], o);
    steps.push(step);
  }
  const started = performance.now();
  await knex.raw(`DROP TABLE IF EXISTS ${ident(retired)}`);
  return { steps, unlinkMs: performance.now() - started };
}

/** Detached partitions that a run left (it stopped after the detach): finished now. Answers their names. */
export async function dropLeftovers(knex: Knex, lockTimeoutMs = 100): Promise<string[]> {
  const names = PARTITIONED_TABLES.map((t) => `${t.table}_p`);
  const { rows } = await knex.raw(
    `SELECT c.relname AS name FROM pg_class c WHERE c.relkind = 'r' AND NOT c.relispartition AND c.relname LIKE '%${RETIRED}'
       AND c.relnamespace = current_schema()::regnamespace AND left(c.relname, length(c.relname) - ${RETIRED.length} - 6) = ANY (?::text[])`,
    [names],
  );
  for (const r of rows as { name: string }[]) await dropRetired(knex, r.name, { lockTimeoutMs, attempts: 20, listLocks: false });
  return rows.map((r: { name: string }) => r.name);
}

/**
 * Drops one partition without holding the parent's lock while its files go: (1) `DETACH PARTITION` and a rename to
 * `<partition>_retired`, one transaction of catalog changes only (ACCESS EXCLUSIVE on the parent and its default
 * partition, SHARE ROW EXCLUSIVE on the tables its foreign keys reference: milliseconds); (2) its foreign keys dropped;
 * (3) the table dropped. A `DROP TABLE` of the attached partition would take only the parent and the default, but hold
 * them through the unlinking of its files at commit (10 s for a month of 10,000,000 events on this machine: BENCHMARKS.md
 * section 39), and every send waits for the parent. Each locking step's wait is bounded by `lockTimeoutMs` (the writers
 * that queue behind it wait no longer), the detach retried up to `attempts` times with a pause between, so that a long
 * transaction somewhere delays the drop, never the writers.
 */
export type DropStrategy = 'detach' | 'drop';

export async function dropPartition(knex: Knex, table: string, partition: string, opts: { lockTimeoutMs?: number; attempts?: number; pauseMs?: number; listLocks?: boolean; strategy?: DropStrategy } = {}): Promise<DropResult> {
  const o: LockOptions = { lockTimeoutMs: opts.lockTimeoutMs ?? 100, attempts: opts.attempts ?? 20, pauseMs: opts.pauseMs, listLocks: opts.listLocks ?? false };
  if (opts.strategy === 'drop') {
    // The attached partition dropped as it is: the parent's lock (taken first, ONLY: the one DROP takes) and the default's.
    const { attempts, ...step } = await lockedStep(knex, 'drop', [`LOCK TABLE ONLY ${ident(table)} IN ACCESS EXCLUSIVE MODE`, `DROP TABLE ${ident(partition)}`], o);
    return { table, partition, steps: [step], lockedMs: step.waitMs + step.holdMs, unlinkMs: 0, attempts };
  }
  const retired = `${partition}${RETIRED}`;
  const { attempts, ...detach } = await lockedStep(knex, 'detach', [
    `ALTER TABLE ${ident(table)} DETACH PARTITION ${ident(partition)}`,
    `ALTER TABLE ${ident(partition)} RENAME TO ${ident(retired)}`,
  ], o);
  const rest = await dropRetired(knex, retired, o);
  const steps = [detach, ...rest.steps];
  return { table, partition, steps, lockedMs: steps.reduce((sum, x) => sum + x.waitMs + x.holdMs, 0), unlinkMs: rest.unlinkMs, attempts };
}
