import type { Knex } from 'knex';

/**
 * Segments (dynamic: a filter; static: a members table) and campaigns. Each index names the query it serves.
 */
export async function up(knex: Knex): Promise<void> {
  // A text → timestamptz cast that yields NULL instead of an error: audience filters compare contact data values
  // as dates, and one malformed value must not fail a whole campaign's audience query.
  await knex.raw(`
    CREATE OR REPLACE FUNCTION herald_try_timestamptz(v text) RETURNS timestamptz LANGUAGE plpgsql STABLE AS $$
    BEGIN
      RETURN v::timestamptz;
    EXCEPTION WHEN others THEN
      RETURN NULL;
    END $$`);

  await knex.schema.createTable('segments', (t) => {
    t.uuid('id').notNullable().defaultTo(knex.raw('herald_uuidv7()'));
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('description');
    t.text('type').notNullable().checkIn(['DYNAMIC', 'STATIC']);
    t.jsonb('condition');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Serves GET/PATCH/DELETE /segments/:id, nested segment lookups and GET /segments (keyset on id).
    t.primary(['project_id', 'id'], { constraintName: 'segments_pkey' });
  });

  await knex.schema.createTable('segment_members', (t) => {
    t.uuid('project_id').notNullable();
    t.uuid('segment_id').notNullable();
    t.uuid('contact_id').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Serves membership tests (segment.<id> memberOf), member listing in contact order, and add (ON CONFLICT).
    t.primary(['project_id', 'segment_id', 'contact_id'], { constraintName: 'segment_members_pkey' });
    t.foreign(['project_id', 'segment_id'], 'segment_members_segment_fkey').references(['project_id', 'id']).inTable('segments').onDelete('CASCADE');
    t.foreign(['project_id', 'contact_id'], 'segment_members_contact_fkey').references(['project_id', 'id']).inTable('contacts').onDelete('CASCADE');
  });
  // Serves the contact FK's cascade (deleting a contact removes its memberships).
  await knex.raw('CREATE INDEX segment_members_contact_idx ON segment_members (project_id, contact_id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('segment_members');
  await knex.schema.dropTableIfExists('segments');
  await knex.raw('DROP FUNCTION IF EXISTS herald_try_timestamptz(text)');
}
