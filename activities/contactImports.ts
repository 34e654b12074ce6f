import type { Knex } from 'knex';
import { importBatches } from '../contacts/imports/batches';

/** A contact import's batches and its ends (contacts/imports/batches.ts), as the engines run them. */
export function contactImportActivities(deps: { knex: Knex }) {
  return importBatches(deps);
}
