import DataLoader from 'dataloader';

/**
 * Group commit for hot paths: the calls made while the event loop handles one round of I/O are answered by ONE call
 * of `run` with all of them (dataloader, scheduled with setImmediate, no caching). Under load many requests are
 * parsed in the same round, so N statements become one; when idle a batch is a single call and waits for nothing.
 * `run` answers every key in order, with a value or an Error for that key alone.
 */
export function batched<K, V>(run: (keys: readonly K[]) => Promise<(V | Error)[]>, maxBatchSize = 256): DataLoader<K, V> {
  return new DataLoader<K, V>(run, { cache: false, maxBatchSize, batchScheduleFn: (callback) => setImmediate(callback) });
}
