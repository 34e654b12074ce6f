import DataLoader from 'dataloader';
import type { Knex } from 'knex';

/**
 * Group commit for hot paths: the calls made while the event loop handles one round of I/O are answered by ONE call
 * of `run` with all of them (dataloader, scheduled with setImmediate, no caching). Under load many requests are
 * parsed in the same round, so N statements become one; when idle a batch is a single call and waits for nothing.
 * `run` answers every key in order, with a value or an Error for that key alone.
 */
export function batched<K, V>(run: (keys: readonly K[]) => Promise<(V | Error)[]>, maxBatchSize = 256): DataLoader<K, V> {
  return new DataLoader<K, V>(run, { cache: false, maxBatchSize, batchScheduleFn: (callback) => setImmediate(callback) });
}

/**
 * `batched`, with a batch per group (a project): the keys of one group that arrive together are answered together,
 * as soon as their own batch is done, never waiting for another group's. A group's loader is dropped when its batch
 * starts, so that groups seen once hold nothing.
 */
export function batchedByGroup<K, V>(groupOf: (key: K) => string, run: (keys: readonly K[]) => Promise<(V | Error)[]>): { load(key: K): Promise<V> } {
  const loaders = new Map<string, DataLoader<K, V>>();
  return {
    load(key) {
      const group = groupOf(key);
      let loader = loaders.get(group);
      if (!loader) {
        const mine: DataLoader<K, V> = batched<K, V>((keys) => {
          if (loaders.get(group) === mine) loaders.delete(group);
          return run(keys);
        });
        loaders.set(group, (loader = mine));
      }
      return loader.load(key);
    },
  };
}

/**
 * Group commit of a write path: the commands that arrive together are stored by `storeMany` in ONE transaction. If
 * that transaction fails, each command is retried in a transaction of its own, so a bad command fails alone and the
 * others are stored. `storeMany` answers every command in order (a value, or an Error for that command alone).
 */
export function groupCommit<C, V>(knex: Knex, storeMany: (trx: Knex.Transaction, commands: readonly C[]) => Promise<(V | Error)[]>): DataLoader<C, V> {
  return grouped((commands) => knex.transaction((trx) => storeMany(trx, commands).then((r) => {
    if (commands.length === 1 && r[0] instanceof Error) throw r[0]; // alone: nothing of it may be kept
    return r;
  })));
}

/**
 * groupCommit for a write that is ONE statement, atomic on its own: it runs in autocommit, so a batch costs one round
 * trip instead of three (BEGIN, the statement, COMMIT). For the hottest public endpoints (tracking/tracker.ts).
 * `maxBatchSize` (default 256) bounds a statement's commands where each is large (inbound/receive.ts: whole messages).
 */
export function groupStatement<C, V>(knex: Knex, writeMany: (db: Knex, commands: readonly C[]) => Promise<(V | Error)[]>, maxBatchSize?: number): DataLoader<C, V> {
  return grouped((commands) => writeMany(knex, commands), maxBatchSize);
}

/** The batching of groupCommit and groupStatement: all at once, then, if that fails, each command alone. */
function grouped<C, V>(store: (commands: readonly C[]) => Promise<(V | Error)[]>, maxBatchSize?: number): DataLoader<C, V> {
  const alone = async (command: C): Promise<V | Error> => {
    try {
      return (await store([command]))[0]!;
    } catch (err) {
      return err as Error;
    }
  };
  return batched<C, V>(async (commands) => {
    if (commands.length === 1) return [await alone(commands[0]!)];
    try {
      return await store(commands);
    } catch {
      return Promise.all(commands.map(alone));
    }
  }, maxBatchSize);
}
