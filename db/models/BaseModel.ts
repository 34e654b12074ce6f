import { Model, snakeCaseMappers } from 'objection';

/**
 * Columns are snake_case in SQL and camelCase on models. The mapping lives on the models (not on knex), so raw
 * SQL stays plain SQL and a raw row becomes a model with `Model.fromDatabaseJson(row)`.
 */
export class BaseModel extends Model {
  static override get columnNameMappers() {
    return snakeCaseMappers();
  }
}
