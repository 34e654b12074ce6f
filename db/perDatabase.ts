import type { Knex } from 'knex';

/**
 * A value this process keeps per database (what it learnt of it: the events' partitions, the collation of the
 * addresses, each project's segments), made by `make` the first time a database is asked. Keyed by knex's connection
 * settings, which a knex and its transactions share: keyed by the knex itself, a transaction would never find it.
 */
export function perDatabase<T extends object>(make: () => T): (db: Knex | Knex.Transaction) => T {
  const values = new WeakMap<object, T>();
  return (db) => {
    const key = db.client.config as object;
    let value = values.get(key);
    if (!value) values.set(key, (value = make()));
    return value;
  };
}
