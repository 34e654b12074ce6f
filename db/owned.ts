import type { Knex } from 'knex';
import { notFound } from '../core/errors';
import { isUuid } from '../core/values';

/**
 * The row of `table` with this id in the project (tables keyed by `project_id` and `id`). Tenancy is absolute: another
 * project's id, or no id at all (not a UUID), is not found, a DomainError naming `what`.
 */
export async function ownedRow<R>(db: Knex | Knex.Transaction, table: string, what: string, projectId: string, id: string): Promise<R> {
  const row: R | undefined = isUuid(id) ? await db(table).where({ project_id: projectId, id }).first() : undefined;
  if (!row) throw notFound(what);
  return row;
}
