import type { Knex } from 'knex';

/**
 * Contact imports' seen addresses without a foreign key (issue 30, performance). The key cost a lookup of the import's
 * row per address an import takes (as much as inserting the address itself: 18 ms of a 5,000-row batch's merge), for a
 * row that the batch already holds locked. What the key did, deleting an import's addresses with the import, a
 * statement trigger on contact_imports does instead (a project deleted with its imports), once per statement; an
 * import that ends deletes its own (contacts/imports/batches.ts endImport).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE contact_import_seen DROP CONSTRAINT contact_import_seen_import_id_fkey');
  await knex.raw(`
    CREATE FUNCTION herald_contact_import_seen_cleanup() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM contact_import_seen s USING old_imports o WHERE s.import_id = o.id;
      RETURN NULL;
    END $$`);
  await knex.raw(`CREATE TRIGGER contact_import_seen_cleanup AFTER DELETE ON contact_imports
    REFERENCING OLD TABLE AS old_imports FOR EACH STATEMENT EXECUTE FUNCTION herald_contact_import_seen_cleanup()`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TRIGGER IF EXISTS contact_import_seen_cleanup ON contact_imports');
  await knex.raw('DROP FUNCTION IF EXISTS herald_contact_import_seen_cleanup()');
  await knex.raw('DELETE FROM contact_import_seen s WHERE NOT EXISTS (SELECT 1 FROM contact_imports i WHERE i.id = s.import_id)');
  await knex.raw('ALTER TABLE contact_import_seen ADD CONSTRAINT contact_import_seen_import_id_fkey FOREIGN KEY (import_id) REFERENCES contact_imports (id) ON DELETE CASCADE');
}
