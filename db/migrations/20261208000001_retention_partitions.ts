import type { Knex } from 'knex';
import { idFloor } from '../pages';
import {
  createMonthlyPartitions, createPartition, EMAIL_LOOKUP_LAG_DAYS, EMAIL_LOOKUP_SLACK_SECONDS, monthStart, MONTHS_AHEAD, PARTITIONED_TABLES,
  type PartitionedTable,
} from '../partitions';

/**
 * Retention by partitions (issue 33, point 5): `emails` (by `partition_at`), `events`, `raw_messages`, `attachments` and
 * `inbound_messages` (by their UUIDv7 `id`) become tables partitioned by month (db/partitions.ts says why each key), so
 * that the retention job drops a month whole.
 *
 * An existing database keeps its rows where they are: each table is renamed `<table>_legacy` and attached, as it is, as
 * the partition of every key before the month after the migration (FROM MINVALUE), so no row is copied and no index of
 * the old table is rebuilt but the two unique ones of `emails`, which must include the partition key. Its rows go when
 * that month has passed the retention (the whole partition), and before, row by row in bounded batches
 * (retention/retention.ts). The migration runs in two phases, so that the work that reads every row happens while
 * Herald may still run (it takes no lock that stops reads or writes):
 *
 * 1. Online, each statement on its own: `emails.partition_at` is added with the constant '-infinity' (PostgreSQL stores
 *    it in the catalog: no row is rewritten), the two unique indexes with it are built CONCURRENTLY, and each table gets
 *    a CHECK constraint that its rows lie before the month after the migration (NOT VALID, then VALIDATE: a scan under a
 *    lock that lets reads and writes go on). That constraint lets ATTACH skip its own scan.
 * 2. One transaction (short: catalog changes only): the renames, the partitioned tables with the same columns, checks,
 *    indexes and foreign keys, the legacy tables attached, and the partitions of this month and the next ones, with a
 *    DEFAULT partition each.
 *
 * Also:
 * - `campaigns.emails_partition_at`: the partition_at of a campaign's emails, set when it starts sending
 *   (campaigns/batches.ts beginCampaign); '-infinity' for the campaigns whose emails are in the legacy partition, so that
 *   a campaign still sending keeps its emails, old and new, in one partition (each contact once per campaign).
 * - `projects.retention_days`: a project's own, shorter retention (PATCH /settings), deleted in batches.
 * - Two foreign keys go: tracking_event_windows → emails (a short-lived row per email and link, pruned by its own time:
 *   tracking/record.ts) and inbound_messages → raw_messages (both written by one statement, inbound/receive.ts; both
 *   deleted together, inbound/messages.ts). A partition of a table that another table references cannot be dropped
 *   without first checking the referencing rows, under locks on both.
 * - SQL functions: herald_uuid_time (the time in a UUIDv7), herald_uuid_shift (the smallest UUID of an id's time plus an
 *   interval) and herald_email_lo / herald_email_hi (the window of partition_at an email of this id lies in; see
 *   db/partitions.ts EMAIL_LOOKUP_LAG_DAYS), IMMUTABLE so that the planner prunes partitions with them.
 */
export const config = { transaction: false };

/** What becomes of each table's indexes: the two unique ones of emails gain the partition key, the others stay. */
const EMAIL_UNIQUE: Record<string, string> = {
  emails_pkey: '(project_id, id, partition_at)',
  emails_campaign_contact_key: '(project_id, campaign_id, contact_id, partition_at) WHERE campaign_id IS NOT NULL AND NOT is_test',
};

/** Foreign keys dropped (see above), by the table that holds them. */
const DROPPED_FKS: [string, string][] = [
  ['tracking_event_windows', 'tracking_event_windows_email_fkey'],
  ['inbound_messages', 'inbound_messages_raw_fkey'],
];

const LEGACY = '_legacy';
const rangeCheck = (table: string) => `${table}_legacy_range`;

async function relkind(knex: Knex | Knex.Transaction, table: string): Promise<string | undefined> {
  const { rows } = await knex.raw('SELECT relkind FROM pg_class WHERE oid = to_regclass(?)', [table]);
  return rows[0]?.relkind;
}

/** An index that exists and is valid (a CONCURRENTLY build cut short leaves an invalid one, dropped and built again). */
async function buildIndexConcurrently(knex: Knex, name: string, table: string, columns: string): Promise<void> {
  const { rows } = await knex.raw('SELECT x.indisvalid AS valid FROM pg_index x WHERE x.indexrelid = to_regclass(?)', [name]);
  if (rows[0]?.valid) return;
  if (rows[0]) await knex.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
  await knex.raw(`CREATE UNIQUE INDEX CONCURRENTLY ${name} ON ${table} ${columns}`);
}

/** Phase 1 (see above): what reads every row, each statement on its own. */
async function prepare(knex: Knex, until: Date): Promise<void> {
  if ((await relkind(knex, 'emails')) !== 'r') return;
  await knex.raw(`ALTER TABLE emails ADD COLUMN IF NOT EXISTS partition_at timestamptz NOT NULL DEFAULT '-infinity'`);
  for (const [name, columns] of Object.entries(EMAIL_UNIQUE)) await buildIndexConcurrently(knex, `${name}${LEGACY}`, 'emails', columns);
  for (const t of PARTITIONED_TABLES) {
    const { rows } = await knex.raw('SELECT convalidated FROM pg_constraint WHERE conrelid = ?::regclass AND conname = ?', [t.table, rangeCheck(t.table)]);
    if (rows[0]?.convalidated) continue;
    if (!rows[0]) {
      // Legacy rows of emails all have the constant; those of the other tables were made before `until`.
      const check = t.kind === 'time' ? `partition_at = '-infinity'::timestamptz` : `id < '${idFloor(until)}'::uuid`;
      await knex.raw(`ALTER TABLE ${t.table} ADD CONSTRAINT ${rangeCheck(t.table)} CHECK (${check}) NOT VALID`);
    }
    await knex.raw(`ALTER TABLE ${t.table} VALIDATE CONSTRAINT ${rangeCheck(t.table)}`);
  }
}

/** The table's indexes as `CREATE … INDEX` statements, with their names, and which one is the primary key. */
async function indexesOf(trx: Knex.Transaction, table: string): Promise<{ name: string; def: string; primary: boolean }[]> {
  const { rows } = await trx.raw(
    `SELECT ic.relname AS name, pg_get_indexdef(x.indexrelid) AS def, x.indisprimary AS primary
     FROM pg_index x JOIN pg_class ic ON ic.oid = x.indexrelid WHERE x.indrelid = ?::regclass ORDER BY ic.relname`,
    [table],
  );
  return rows;
}

/** Phase 2 for one table: the legacy table renamed, the partitioned one made in its place, the legacy one attached (or dropped when empty). */
async function partition(trx: Knex.Transaction, t: PartitionedTable, until: Date): Promise<'attached' | 'empty'> {
  const legacy = `${t.table}${LEGACY}`;
  const indexes = (await indexesOf(trx, t.table)).filter((i) => !i.name.endsWith(LEGACY));
  const { rows: fks } = await trx.raw(
    `SELECT conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = ?::regclass AND contype = 'f' ORDER BY conname`, [t.table]);
  const empty = !(await trx.raw(`SELECT EXISTS (SELECT 1 FROM ${t.table}) AS any`)).rows[0].any;
  // Its own triggers (events: the webhook outbox's statement trigger), which CREATE TABLE … LIKE does not copy: read
  // while their definitions still name this table, moved to the partitioned one (a statement trigger on a partition
  // does not fire for rows inserted through the parent).
  const { rows: triggers } = await trx.raw(
    `SELECT tgname AS name, pg_get_triggerdef(oid) AS def FROM pg_trigger WHERE tgrelid = ?::regclass AND NOT tgisinternal ORDER BY tgname`, [t.table]);

  await trx.raw(`ALTER TABLE ${t.table} RENAME TO ${legacy}`);
  // The legacy table's indexes take the suffix of its partition; emails' two unique ones give way to those built in phase 1.
  for (const index of indexes) {
    if (t.table === 'emails' && EMAIL_UNIQUE[index.name]) {
      if (index.primary) await trx.raw(`ALTER TABLE ${legacy} DROP CONSTRAINT ${index.name}`);
      else await trx.raw(`DROP INDEX ${index.name}`);
    } else if (index.primary) {
      await trx.raw(`ALTER TABLE ${legacy} RENAME CONSTRAINT ${index.name} TO ${index.name}${LEGACY}`);
    } else {
      await trx.raw(`ALTER INDEX ${index.name} RENAME TO ${index.name}${LEGACY}`);
    }
  }
  if (t.table === 'emails') {
    await trx.raw(`ALTER TABLE ${legacy} ADD CONSTRAINT emails_pkey${LEGACY} PRIMARY KEY USING INDEX emails_pkey${LEGACY}`);
  }

  // The same columns (with their defaults, NOT NULLs and checks but the range check), partitioned.
  await trx.raw(`CREATE TABLE ${t.table} (LIKE ${legacy} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION)
    PARTITION BY RANGE (${t.key})`);
  await trx.raw(`ALTER TABLE ${t.table} DROP CONSTRAINT ${rangeCheck(t.table)}`);
  if (t.table === 'emails') await trx.raw('ALTER TABLE emails ALTER COLUMN partition_at SET DEFAULT now()');
  for (const index of indexes) {
    const def = t.table === 'emails' && EMAIL_UNIQUE[index.name]
      ? `CREATE UNIQUE INDEX ${index.name} ON emails USING btree ${EMAIL_UNIQUE[index.name]}`
      : index.def.replace(/ ON public\.\S+ /, ` ON ${t.table} `).replace(/ ON (?!public\.)\S+ USING/, ` ON ${t.table} USING`);
    // A partitioned table's primary key is declared as a constraint (USING INDEX is not supported there).
    if (index.primary) await trx.raw(def.replace(/^CREATE UNIQUE INDEX (\S+) ON (\S+) USING btree (.+)$/, 'ALTER TABLE $2 ADD CONSTRAINT $1 PRIMARY KEY $3'));
    else await trx.raw(def);
  }
  for (const fk of fks as { name: string; def: string }[]) {
    if (DROPPED_FKS.some(([, name]) => name === fk.name)) continue;
    await trx.raw(`ALTER TABLE ${t.table} ADD CONSTRAINT ${fk.name} ${fk.def}`);
  }
  for (const trigger of triggers as { name: string; def: string }[]) {
    await trx.raw(`DROP TRIGGER ${trigger.name} ON ${legacy}`);
    await trx.raw(trigger.def);
  }

  if (empty) {
    await trx.raw(`DROP TABLE ${legacy}`);
    return 'empty';
  }
  // Rows on their way in (old processes still writing) passed the range check, so the range holds them.
  await trx.raw(`ALTER TABLE ${t.table} ATTACH PARTITION ${legacy} FOR VALUES FROM (MINVALUE) TO (${t.kind === 'time' ? `'${until.toISOString()}'` : `'${idFloor(until)}'`})`);
  // The partition's range holds its rows from now on (emails written this month have their real partition_at).
  await trx.raw(`ALTER TABLE ${legacy} DROP CONSTRAINT ${rangeCheck(t.table)}`);
  return 'attached';
}

export async function up(knex: Knex): Promise<void> {
  // The month after this one: legacy rows, and those written until then, lie before it (a month partition from there).
  const until = monthStart(new Date(), 1);
  await prepare(knex, until);
  if ((await relkind(knex, 'emails')) === 'p') return; // done by an earlier run
  await knex.transaction(async (trx) => {
    // The bound of the range checks of phase 1: a month later if the month has turned since (the legacy partition then
    // reaches to the month after this one, which the checks imply).
    const bound = monthStart(new Date(), 1) > until ? monthStart(new Date(), 1) : until;
    for (const [table, fk] of DROPPED_FKS) await trx.raw(`ALTER TABLE ${table} DROP CONSTRAINT IF EXISTS ${fk}`);
    const legacy: Record<string, boolean> = {};
    for (const t of PARTITIONED_TABLES) legacy[t.table] = (await partition(trx, t, bound)) === 'attached';
    for (const t of PARTITIONED_TABLES) {
      // From the legacy partition's end (or this month) to the horizon of db/partitions.ts MONTHS_AHEAD.
      await createMonthlyPartitions(trx, t, legacy[t.table] ? bound : monthStart(new Date()), monthStart(new Date(), MONTHS_AHEAD + 1));
      await createPartition(trx, t, `${t.table}_default`, 'default', 60_000);
    }

    await trx.raw(`
      CREATE FUNCTION herald_uuid_time(u uuid) RETURNS timestamptz LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT to_timestamp(('x' || substr(u::text, 1, 8) || substr(u::text, 10, 4))::bit(48)::bigint / 1000.0)
      $$`);
    // The smallest UUID of the millisecond `by` after u's time (before it, for a negative interval), clamped to 1970..
    await trx.raw(`
      CREATE FUNCTION herald_uuid_shift(u uuid, by interval) RETURNS uuid LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT (overlay('00000000-0000-0000-0000-000000000000' PLACING
                  substr(h, 1, 8) || '-' || substr(h, 9, 4) FROM 1 FOR 13))::uuid
        FROM (SELECT lpad(to_hex(greatest(0, floor(extract(epoch FROM herald_uuid_time(u) + by) * 1000))::bigint), 12, '0') AS h) x
      $$`);
    // An email of this id has its partition_at in [lo, hi] (but for a campaign slower than the lag: see db/partitions.ts EMAIL_LOOKUP_LAG_DAYS).
    // Before the legacy partition's end, lo reaches back to -infinity, the partition_at of every legacy row.
    const legacyEnd = legacy.emails ? `'${bound.toISOString()}'::timestamptz` : `'-infinity'::timestamptz`;
    await trx.raw(`
      CREATE FUNCTION herald_email_lo(u uuid) RETURNS timestamptz LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT CASE WHEN herald_uuid_time(u) - interval '${EMAIL_LOOKUP_LAG_DAYS} days' < ${legacyEnd} THEN '-infinity'::timestamptz
                    ELSE herald_uuid_time(u) - interval '${EMAIL_LOOKUP_LAG_DAYS} days' END
      $$`);
    await trx.raw(`
      CREATE FUNCTION herald_email_hi(u uuid) RETURNS timestamptz LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT herald_uuid_time(u) + interval '${EMAIL_LOOKUP_SLACK_SECONDS} seconds'
      $$`);

    await trx.raw('ALTER TABLE campaigns ADD COLUMN emails_partition_at timestamptz');
    // Campaigns that have emails (they have started): theirs are legacy rows, and so will be their next batches'.
    if (legacy.emails) await trx.raw(`UPDATE campaigns SET emails_partition_at = '-infinity' WHERE started_at IS NOT NULL OR status NOT IN ('DRAFT', 'SCHEDULED')`);
    await trx.raw('ALTER TABLE projects ADD COLUMN retention_days integer CHECK (retention_days BETWEEN 1 AND 36500)');
  });
  // The planner's statistics of the new parents (autovacuum never analyses a partitioned table; the retention job does).
  for (const t of PARTITIONED_TABLES) await knex.raw(`ANALYZE ${t.table}`);
}

/**
 * Back to plain tables, their rows copied (slow on a large database: an INSERT … SELECT of each table). The dropped
 * foreign keys come back.
 */
export async function down(knex: Knex): Promise<void> {
  await knex.transaction(async (trx) => {
    for (const t of PARTITIONED_TABLES) {
      const plain = `${t.table}_plain`;
      await trx.raw(`CREATE TABLE ${plain} (LIKE ${t.table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION)`);
      await trx.raw(`INSERT INTO ${plain} SELECT * FROM ${t.table}`);
      const indexes = await indexesOf(trx, t.table);
      const { rows: fks } = await trx.raw(`SELECT conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = ?::regclass AND contype = 'f'`, [t.table]);
      const { rows: triggers } = await trx.raw(`SELECT pg_get_triggerdef(oid) AS def FROM pg_trigger WHERE tgrelid = ?::regclass AND NOT tgisinternal`, [t.table]);
      await trx.raw(`DROP TABLE ${t.table}`);
      await trx.raw(`ALTER TABLE ${plain} RENAME TO ${t.table}`);
      for (const index of indexes) {
        const def = t.table === 'emails' && EMAIL_UNIQUE[index.name]
          ? `CREATE UNIQUE INDEX ${index.name} ON emails USING btree ${index.name === 'emails_pkey' ? '(project_id, id)' : '(project_id, campaign_id, contact_id) WHERE campaign_id IS NOT NULL AND NOT is_test'}`
          : index.def.replace(' ON ONLY ', ' ON ');
        await trx.raw(def);
        if (index.primary) await trx.raw(`ALTER TABLE ${t.table} ADD CONSTRAINT ${index.name} PRIMARY KEY USING INDEX ${index.name}`);
      }
      for (const fk of fks as { name: string; def: string }[]) await trx.raw(`ALTER TABLE ${t.table} ADD CONSTRAINT ${fk.name} ${fk.def}`);
      for (const trigger of triggers as { def: string }[]) await trx.raw(trigger.def);
    }
    await trx.raw('ALTER TABLE emails DROP COLUMN partition_at');
    await trx.raw('ALTER TABLE tracking_event_windows ADD CONSTRAINT tracking_event_windows_email_fkey FOREIGN KEY (project_id, email_id) REFERENCES emails (project_id, id) ON DELETE CASCADE');
    await trx.raw('ALTER TABLE inbound_messages ADD CONSTRAINT inbound_messages_raw_fkey FOREIGN KEY (project_id, raw_message_id) REFERENCES raw_messages (project_id, id) ON DELETE CASCADE');
    for (const f of ['herald_email_hi(uuid)', 'herald_email_lo(uuid)', 'herald_uuid_shift(uuid, interval)', 'herald_uuid_time(uuid)']) await trx.raw(`DROP FUNCTION IF EXISTS ${f}`);
    await trx.raw('ALTER TABLE campaigns DROP COLUMN emails_partition_at');
    await trx.raw('ALTER TABLE projects DROP COLUMN retention_days');
  });
}
