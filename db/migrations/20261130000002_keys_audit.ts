import type { Knex } from 'knex';

/**
 * API keys as a resource, and the audit log (issue 27, points 3 and 4).
 *
 * api_keys: a name to tell keys apart, a scope (`full`, or `sending`: the sending routes and SMTP submission only), an
 * optional list of sending domains (NULL: any verified domain of the project) and when the key was last used (moved
 * by the admit statement at most once a minute, projects/access.ts). The keys a project already has become its first
 * keys, named for what they were.
 *
 * audit_log: who (a key, a person or the operator's CLI) changed what, from where, written in the transaction of the
 * change (audit/log.ts), so a row exists if and only if the change committed. Never the body, a secret or a key.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE api_keys
    ADD COLUMN name text NOT NULL DEFAULT '',
    ADD COLUMN scope text NOT NULL DEFAULT 'full' CONSTRAINT api_keys_scope_check CHECK (scope IN ('full', 'sending')),
    ADD COLUMN domains text[],
    ADD COLUMN last_used_at timestamptz`);
  await knex.raw(`UPDATE api_keys SET name = CASE type WHEN 'secret' THEN 'Default secret key' ELSE 'Default public key' END`);

  await knex.raw(`CREATE TABLE audit_log (
    id uuid NOT NULL DEFAULT herald_uuidv7(),
    project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    actor_kind text NOT NULL CONSTRAINT audit_log_actor_kind_check CHECK (actor_kind IN ('key', 'user', 'operator')),
    -- The key's or the user's id; NULL for the operator's CLI.
    actor_id uuid,
    -- The route's operationId (createKey, deleteContact, …) or the CLI's verb (key.create).
    operation text NOT NULL,
    resource_type text NOT NULL,
    resource_id text,
    address text,
    at timestamptz NOT NULL DEFAULT now(),
    details jsonb NOT NULL DEFAULT '{}',
    -- The key leads with the tenant (as contacts'): serves GET /audit-log (keyset on id, newest first, and its date
    -- range: ids are time-ordered), its count and the cascade from projects. An id-only key tempted the planner to
    -- walk every tenant's newest entries filtering for one project (test/db/auditIndexes.test.ts).
    CONSTRAINT audit_log_pkey PRIMARY KEY (project_id, id)
  )`);
  // The filters each lead with the project too, so a busy project's log is never walked for a rare actor or resource.
  await knex.raw('CREATE INDEX audit_log_actor_idx ON audit_log (project_id, actor_id, id DESC)');
  await knex.raw('CREATE INDEX audit_log_operation_idx ON audit_log (project_id, operation, id DESC)');
  await knex.raw('CREATE INDEX audit_log_resource_idx ON audit_log (project_id, resource_type, resource_id, id DESC)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS audit_log');
  await knex.raw('ALTER TABLE api_keys DROP COLUMN IF EXISTS last_used_at, DROP COLUMN IF EXISTS domains, DROP COLUMN IF EXISTS scope, DROP COLUMN IF EXISTS name');
}
