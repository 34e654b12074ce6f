import type { Knex } from 'knex';

/**
 * An index of received messages by their raw message (inbound_messages (project_id, raw_message_id)). The prune of
 * received mail (inbound/messages.ts pruneInbound: the installation's inbound retention, and a project's shorter
 * retention) deletes a raw message only once no other row of it is left, a NOT EXISTS by (project_id, raw_message_id)
 * for each message deleted. Without this index that probe read every received message of the project through the
 * primary key, in every month's partition; the foreign key to raw_messages that went with the partitioning
 * (20261208000001) had the same need on each delete of a raw message.
 *
 * Built as a partitioned index without locking writes out: the parent's index first, ON ONLY (no partition is read),
 * then each partition's CONCURRENTLY and attached to it (the parent's becomes valid when all are). Partitions created
 * later get it from the parent (db/partitions.ts createPartition copies the parent's indexes). Each statement on its
 * own (CONCURRENTLY cannot run in a transaction); a run cut short is finished by the next (an invalid partition index
 * left by a cut-short build is dropped and built again).
 */
export const config = { transaction: false };

const PARENT = 'inbound_messages_raw_idx';
const COLUMNS = '(project_id, raw_message_id)';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE INDEX IF NOT EXISTS ${PARENT} ON ONLY inbound_messages ${COLUMNS}`);
  const { rows: partitions } = await knex.raw(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'inbound_messages'::regclass ORDER BY 1`,
  );
  for (const { name } of partitions as { name: string }[]) {
    // Named as db/partitions.ts names a partition's indexes: the parent's with the partition's suffix.
    const child = `${PARENT}${name.slice('inbound_messages'.length)}`;
    const { rows } = await knex.raw(
      `SELECT x.indisvalid AS valid, EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = x.indexrelid) AS attached
       FROM pg_index x WHERE x.indexrelid = to_regclass(?)`, [child]);
    if (rows[0] && !rows[0].valid) await knex.raw(`DROP INDEX CONCURRENTLY IF EXISTS "${child}"`);
    if (!rows[0]?.valid) await knex.raw(`CREATE INDEX CONCURRENTLY "${child}" ON "${name}" ${COLUMNS}`);
    if (!rows[0]?.attached) await knex.raw(`ALTER INDEX ${PARENT} ATTACH PARTITION "${child}"`);
  }
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP INDEX IF EXISTS ${PARENT}`);
}
