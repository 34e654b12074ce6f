import type { Knex } from 'knex';

/**
 * A named statement (prepared once per connection) run straight on a pooled pg connection, for the hottest
 * statements: knex.raw re-scans the statement's text for its `?` bindings on every call (twice: its raw formatter
 * and the dialect's positional `$n`), and builds a runner, a formatter and a query object around it, which for a
 * 1.5 KB statement run per SMTP message or HTTP request cost more API time than the statement's own round trip
 * (bench/smtp.ts with BENCH_CPU_PROF=1). Here the text is numbered once. Knex's pool is used as knex uses it (checked
 * out, released), and its `query` event is still emitted (bench's BENCH_COUNT_QUERIES counts statements by it).
 *
 * `sql` is written with knex's `?` placeholders (never `??` or an escaped `\?`); the bindings are pg values (an
 * array binds as one PostgreSQL array, as with knex.raw).
 */
export function preparedStatement(name: string, sql: string): (db: Knex | Knex.Transaction, bindings: readonly unknown[]) => Promise<{ rows: any[] }> { // eslint-disable-line @typescript-eslint/no-explicit-any -- rows as knex.raw has them
  if (/\?\?|\\\?/.test(sql)) throw new Error(`${name}: a prepared statement takes only plain ? placeholders`);
  let n = 0;
  const text = sql.replace(/\?/g, () => `$${++n}`);
  return async (db, bindings) => {
    if (bindings.length !== n) throw new Error(`${name}: ${n} bindings expected, ${bindings.length} given`);
    const values = bindings as unknown[];
    // A transaction's client hands out the transaction's own connection and keeps it on release (knex's own way).
    const client = db.client as { emit(event: 'query', q: unknown): void; acquireConnection(): Promise<PgConnection>; releaseConnection(c: PgConnection): Promise<unknown> };
    client.emit('query', { sql, bindings: values, options: { name }, method: 'raw' }); // knex passes it on to its instance
    const connection = await client.acquireConnection();
    try {
      return await connection.query({ name, text, values });
    } finally {
      await client.releaseConnection(connection);
    }
  };
}

interface PgConnection {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: any[] }>; // eslint-disable-line @typescript-eslint/no-explicit-any
}
