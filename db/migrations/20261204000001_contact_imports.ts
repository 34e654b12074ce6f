import type { Knex } from 'knex';

/**
 * Contact imports (issue 30, point 1; contacts/imports/). An upload is stored in the database, not on a disk: the
 * engine work that reads it may run in another process or on another host (the cluster's worker services), after a
 * crash or a restart, and the database is already what every process shares and what is backed up. The file is
 * deleted when the import ends; its refused rows stay (GET /contacts/imports/:id/errors).
 *
 * - `contact_imports`: one row per import: its options (mode, data merge/replace, column map, default subscription,
 *   resubscribe, segment), the file's format and header, its status and counts, and the checkpoint (`byte_offset`,
 *   `line`): where the next batch starts. A batch advances it in the transaction that merges its rows, so a batch
 *   retried after a crash starts where the last committed one ended.
 * - `contact_import_chunks`: the file in 1 MiB pieces (bytea, stored uncompressed: EXTERNAL; CSV would compress, but
 *   pglz on every piece of a 1 GB upload costs more CPU than the space is worth for a file kept minutes).
 * - `contact_import_errors`: each refused row: its line, the reason, the raw text (cut to 1,000 characters).
 * - `contact_import_seen`: each address the import has taken so far, with its line: a later row with the same address
 *   is refused as a duplicate, across batches and restarts. Emptied when the import ends.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE contact_imports (
      id uuid PRIMARY KEY DEFAULT herald_uuidv7(),
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      status text NOT NULL DEFAULT 'QUEUED' CHECK (status IN ('QUEUED', 'RUNNING', 'COMPLETED', 'CANCELLED', 'FAILED')),
      file_name text,
      format text NOT NULL CHECK (format IN ('csv', 'jsonl')),
      delimiter text,
      header jsonb NOT NULL DEFAULT '[]',
      file_bytes bigint NOT NULL,
      mode text NOT NULL CHECK (mode IN ('create', 'update', 'upsert')),
      data_mode text NOT NULL CHECK (data_mode IN ('merge', 'replace')),
      columns jsonb NOT NULL,
      default_subscribed boolean NOT NULL,
      resubscribe boolean NOT NULL DEFAULT false,
      -- No foreign key: a segment deleted during the import simply gets no more members.
      segment_id uuid,
      byte_offset bigint NOT NULL DEFAULT 0,
      line integer NOT NULL DEFAULT 0,
      rows_read bigint NOT NULL DEFAULT 0,
      created bigint NOT NULL DEFAULT 0,
      updated bigint NOT NULL DEFAULT 0,
      skipped bigint NOT NULL DEFAULT 0,
      failed bigint NOT NULL DEFAULT 0,
      error text,
      dispatched_at timestamptz,
      started_at timestamptz,
      finished_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now())`);
  // GET /contacts/imports: a project's imports, newest first (keyset on id); the dispatcher's look for unstarted ones.
  await knex.raw('CREATE INDEX contact_imports_project_idx ON contact_imports (project_id, id)');
  await knex.raw("CREATE INDEX contact_imports_undispatched_idx ON contact_imports (created_at) WHERE status = 'QUEUED' AND dispatched_at IS NULL");
  await knex.raw(`
    CREATE TABLE contact_import_chunks (
      import_id uuid NOT NULL REFERENCES contact_imports (id) ON DELETE CASCADE,
      seq integer NOT NULL,
      bytes bytea NOT NULL,
      PRIMARY KEY (import_id, seq))`);
  await knex.raw('ALTER TABLE contact_import_chunks ALTER COLUMN bytes SET STORAGE EXTERNAL');
  await knex.raw(`
    CREATE TABLE contact_import_errors (
      import_id uuid NOT NULL REFERENCES contact_imports (id) ON DELETE CASCADE,
      line integer NOT NULL,
      reason text NOT NULL,
      raw text NOT NULL,
      PRIMARY KEY (import_id, line))`);
  await knex.raw(`
    CREATE TABLE contact_import_seen (
      import_id uuid NOT NULL REFERENCES contact_imports (id) ON DELETE CASCADE,
      email text NOT NULL,
      line integer NOT NULL,
      PRIMARY KEY (import_id, email))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS contact_import_seen, contact_import_errors, contact_import_chunks, contact_imports');
}
