import type { Knex } from 'knex';

/**
 * `herald_retry_unless(ok, message)`: true when `ok`, else raises serialization_failure (SQLSTATE 40001), the code that
 * tells a client to run the statement again. The one-statement store of a send (db/queries/sends.ts) checks in its
 * last step that the contacts it wrote are the ones its messages were rendered for; when a concurrent writer changed
 * one meanwhile, this undoes the whole statement, and the caller reads the contacts again, renders again and retries.
 * Plain SQL has no way to raise an error, hence a function.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE FUNCTION herald_retry_unless(ok boolean, message text) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
    BEGIN
      IF ok IS NOT TRUE THEN
        RAISE EXCEPTION USING ERRCODE = 'serialization_failure', MESSAGE = message;
      END IF;
      RETURN true;
    END $$`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP FUNCTION IF EXISTS herald_retry_unless(boolean, text)');
}
