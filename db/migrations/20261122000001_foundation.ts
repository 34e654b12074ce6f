import type { Knex } from 'knex';

/**
 * Projects, API keys, contacts, sending domains and the shared API rate-limit counters.
 * Every index below names the query it serves; each was checked with EXPLAIN (test/db/indexes.test.ts).
 */
export async function up(knex: Knex): Promise<void> {
  // Trigram search on contact emails (`search=`); btree_gin lets one GIN index lead with project_id.
  await knex.raw('CREATE EXTENSION IF NOT EXISTS pg_trgm');
  await knex.raw('CREATE EXTENSION IF NOT EXISTS btree_gin');

  // Time-ordered ids (UUIDv7, RFC 9562): keyset pagination on the primary key lists rows in creation order, and
  // inserts land at the right edge of the B-tree. PostgreSQL 18 has uuidv7() built in; older servers get the
  // same layout from SQL (48-bit Unix milliseconds, version and variant bits, random rest).
  const { rows } = await knex.raw<{ rows: { v: number }[] }>("SELECT current_setting('server_version_num')::int AS v");
  if (rows[0]!.v >= 180000) {
    await knex.raw('CREATE OR REPLACE FUNCTION herald_uuidv7() RETURNS uuid LANGUAGE sql VOLATILE AS $$ SELECT uuidv7() $$');
  } else {
    await knex.raw(`
      CREATE OR REPLACE FUNCTION herald_uuidv7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
        SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
          PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6),
          52, 1), 53, 1), 'hex')::uuid
      $$`);
  }

  await knex.schema.createTable('projects', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('herald_uuidv7()'));
    t.text('name').notNullable();
    t.boolean('disabled').notNullable().defaultTo(false);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('api_keys', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('herald_uuidv7()'));
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('type').notNullable().checkIn(['secret', 'public']);
    // First characters of the key's random part: finds the row; the SHA-256 `hash` of the whole key is then
    // compared in constant time. The key itself is never stored.
    t.text('lookup').notNullable();
    t.binary('hash').notNullable();
    t.text('hint').notNullable(); // last four characters, to tell keys apart in listings
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('revoked_at', { useTz: true });
    // Serves authentication: WHERE lookup = ?
    t.unique(['lookup'], { indexName: 'api_keys_lookup_key' });
    // Serves key listings per project and the ON DELETE CASCADE from projects.
    t.index(['project_id', 'id'], 'api_keys_project_id_idx');
  });

  await knex.schema.createTable('contacts', (t) => {
    t.uuid('id').notNullable().defaultTo(knex.raw('herald_uuidv7()'));
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    // The key leads with the tenant. Every query names the project, and an id-only index would tempt the planner
    // to walk all tenants' newest rows filtering for one project — fine on average, a full scan for a small or
    // quiet tenant in a big table. Serves GET/PATCH/DELETE /contacts/:id and GET /contacts (keyset on id, both
    // directions) and its count(*). Tables that reference contacts do so by (project_id, contact_id).
    t.primary(['project_id', 'id'], { constraintName: 'contacts_pkey' });
    t.text('email').notNullable();
    t.boolean('subscribed').notNullable().defaultTo(true);
    t.jsonb('data').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Serves upsert (INSERT … ON CONFLICT (project_id, email)) and lookups by email.
    t.unique(['project_id', 'email'], { indexName: 'contacts_project_email_key' });
  });
  // Serves GET /contacts?subscribed=…: WHERE project_id = ? AND subscribed = ? [AND id < cursor] ORDER BY id DESC.
  await knex.raw('CREATE INDEX contacts_project_subscribed_id_idx ON contacts (project_id, subscribed, id DESC)');
  // Serves GET /contacts?search=…: WHERE project_id = ? AND email ILIKE '%…%'.
  await knex.raw('CREATE INDEX contacts_email_trgm_idx ON contacts USING gin (project_id, email gin_trgm_ops)');

  await knex.schema.createTable('domains', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('herald_uuidv7()'));
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('domain').notNullable();
    t.text('status').notNullable().defaultTo('PENDING').checkIn(['PENDING', 'VERIFIED', 'FAILED']);
    t.timestamp('verified_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Serves one domain per project, and the sender check (WHERE project_id = ? AND domain = ANY(…)).
    t.unique(['project_id', 'domain'], { indexName: 'domains_project_domain_key' });
  });

  // Fixed-window API rate-limit counters shared by every API process (schema of rate-limiter-flexible's
  // RateLimiterPostgres). Serves its upsert on the primary key.
  await knex.schema.createTable('rate_limits', (t) => {
    t.string('key', 255).primary();
    t.integer('points').notNullable().defaultTo(0);
    t.bigInteger('expire');
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['rate_limits', 'domains', 'contacts', 'api_keys', 'projects']) await knex.schema.dropTableIfExists(table);
  await knex.raw('DROP FUNCTION IF EXISTS herald_uuidv7()');
}
