import { Model, snakeCaseMappers, type Pojo } from 'objection';

/** The camelCase name of each snake_case column met so far, as snakeCaseMappers names it. */
const mappers = snakeCaseMappers();
const camelNames = new Map<string, string>();
const camelName = (column: string): string => {
  let name = camelNames.get(column);
  if (name === undefined) camelNames.set(column, name = Object.keys(mappers.parse({ [column]: null }))[0]!);
  return name;
};

/**
 * Columns are snake_case in SQL and camelCase on models. The mapping lives on the models (not on knex), so raw
 * SQL stays plain SQL and a raw row becomes a model with `Model.fromDatabaseJson(row)`.
 */
export class BaseModel extends Model {
  static override get columnNameMappers() {
    return snakeCaseMappers();
  }

  /**
   * What objection's own does ($parseDatabaseJson: each column under its camelCase name, a JSON attribute that came as
   * text parsed), without the mapped copy of the row it builds first: a page of 51 emails took 0.18-0.26 ms to become
   * models that way, and 0.04 ms this way (BENCHMARKS.md section 61). No model overrides $parseDatabaseJson, which
   * this leaves out.
   */
  override $setDatabaseJson(json: object): this {
    const row = json as Pojo;
    const model = this as unknown as Pojo;
    for (const column of Object.keys(row)) model[camelName(column)] = row[column];
    for (const attribute of (this.constructor as unknown as { getJsonAttributes(): string[] }).getJsonAttributes()) {
      const value = model[attribute];
      if (typeof value !== 'string') continue;
      try {
        model[attribute] = JSON.parse(value);
      } catch {
        // Not JSON: kept as the text it is, as objection keeps it.
      }
    }
    return this;
  }
}
