import { PassThrough, pipeline, type Readable } from 'node:stream';
import type { Knex } from 'knex';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';

/**
 * `COPY (query) TO STDOUT` as a Node stream, on a connection of its own (not one of the pool's): the rows come at the
 * pace the stream is read. pg-copy-streams reads the socket only when its stream is read, so a slow reader stops the
 * socket, and PostgreSQL waits on it (wait_event ClientWrite) instead of Herald buffering the result. A connection of
 * its own because a slow reader may hold it for as long as it reads, and the API's pool must not lose connections to
 * that; and because a reader who goes away leaves the connection mid-COPY, which only closing it ends.
 *
 * `query` is one statement, with its values inlined (COPY takes no parameters): build it with knex and `toQuery()`,
 * whose literals are escaped by the driver's rules. `prefix`, when given, is written before the rows (a CSV's byte order
 * mark: COPY has no option for one).
 */
export async function copyOut(knex: Knex, query: string, options: string, prefix?: Buffer): Promise<Readable> {
  // Named, so that an operator (and a test) can tell an export's connection in pg_stat_activity.
  const client = new pg.Client({ ...(knex.client.connectionSettings as pg.ClientConfig), application_name: 'herald-export' });
  await client.connect();
  // The same time zone for every row, whatever the server's default (timestamps are formatted by the query anyway).
  await client.query("SET TIME ZONE 'UTC'");
  const copy = client.query(copyTo(`COPY (${query}) TO STDOUT WITH (${options})`));
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    void client.end().catch(() => undefined);
  };
  // An error of the client outside the COPY (the server went away) must not crash the process.
  client.on('error', () => close());
  // The first chunk is awaited, so that a statement that fails at once is an error of this call (an answer with its
  // status), not a stream that breaks after its headers went out.
  let first: Buffer | null;
  try {
    first = await new Promise<Buffer | null>((resolve, reject) => {
      const done = () => { copy.off('data', onData); copy.off('end', onEnd); copy.off('error', onError); };
      const onData = (chunk: Buffer) => { done(); copy.pause(); resolve(chunk); };
      const onEnd = () => { done(); resolve(null); };
      const onError = (err: Error) => { done(); reject(err); };
      copy.on('data', onData).on('end', onEnd).on('error', onError);
    });
  } catch (err) {
    close();
    throw err;
  }
  const out = new PassThrough({ highWaterMark: 64 * 1024 });
  if (prefix) out.write(prefix);
  if (first === null) {
    close();
    out.end();
    return out;
  }
  out.write(first);
  // Whatever ends the pipeline (the last row, an error, the reader going away) ends the connection.
  pipeline(copy, out, () => close());
  return out;
}
