import { randomFillSync } from 'node:crypto';
import { v7 } from 'uuid';

/**
 * The ids Herald makes in the application: UUIDv7 (a millisecond timestamp first, so that rows inserted together land
 * at the right edge of their B-trees, as the database's herald_uuidv7() makes them), strictly increasing within a
 * process, as uuid's own v7() makes them.
 *
 * Why not uuid's v7() as it is: it asks webcrypto for 16 random bytes at every id (a getrandom call and its checks),
 * ~7 µs an id and 2-3 % of a POST /v1/send's CPU, which makes three or four (BENCHMARKS.md section 50). Here the bytes
 * come from a pool filled 4 KB at a time, and the counter that keeps ids increasing within a millisecond is uuid's
 * own (RFC 9562 method 1: a 31-bit counter seeded from the random bytes at each new millisecond, a millisecond ahead
 * when it wraps), kept here because uuid keeps its state only for calls without options.
 */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let at = 0;
const state = { msecs: -Infinity, seq: 0 };

export function newId(): string {
  if (at + 16 > pool.length) {
    pool = randomFillSync(Buffer.allocUnsafe(POOL_BYTES));
    at = 0;
  }
  const random = pool.subarray(at, (at += 16));
  const now = Date.now();
  if (now > state.msecs) {
    state.msecs = now;
    state.seq = ((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!;
  } else {
    state.seq = (state.seq + 1) | 0;
    if (state.seq === 0) state.msecs++;
  }
  return v7({ random, msecs: state.msecs, seq: state.seq });
}
