import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { DnsConfig } from '../config';
import type { Authenticator, AuthResults } from './auth';
import { parseMessage, type ParsedMessage } from './parse';

/**
 * What the listener learns of a received message before storing it: its parse (postal-mime) and its authentication
 * (mailauth). Both are CPU work on the whole message (base64 decoding, DKIM body hashes, RSA), the larger part of what
 * a message costs (bench/inbound.ts). In the listener's own thread (`inProcess`), or spread over worker threads
 * (`analysisThreads`, INBOUND_ANALYSIS_THREADS, for the large ones: bySize), so that SMTP and the database keep the main thread and the parse of
 * several messages runs on several cores.
 */

export interface Analysis {
  parsed: ParsedMessage;
  auth: AuthResults;
}

export type Analyser = (raw: Buffer, session: { ip: string; helo: string; sender: string }) => Promise<Analysis>;

/** In the caller's thread; the two are independent: while one waits for DNS (mailauth's lookups), the other runs. */
export function inProcess(authenticate: Authenticator): Analyser {
  return async (raw, session) => {
    const [parsed, auth] = await Promise.all([parseMessage(raw), authenticate(raw, session)]);
    return { parsed, auth };
  };
}

interface Pending {
  resolve: (a: Analysis) => void;
  reject: (e: Error) => void;
}

interface Thread {
  worker: Worker;
  pending: Map<number, Pending>;
}

/**
 * `count` worker threads (inbound/analysisWorker.ts), each handed the next message when it has the fewest in hand. A
 * thread that dies fails its messages (the listener answers 451: the sender tries again) and is replaced. The threads
 * do not keep the process alive.
 */
export function analysisThreads(count: number, dns: DnsConfig, mta: string): Analyser & { close(): Promise<void> } {
  // The worker's module, loaded as this process can (core/requireSource.cjs: compiled, or the sources through tsx).
  const code = `require(${JSON.stringify(path.join(__dirname, '..', 'core', 'requireSource.cjs'))})(${JSON.stringify(__dirname)}, 'analysisWorker');`;
  let nextId = 0;
  let closed = false;
  const threads: Thread[] = [];
  const start = (i: number) => {
    const worker = new Worker(code, { eval: true, workerData: { dns, mta } });
    const thread: Thread = { worker, pending: new Map() };
    worker.unref();
    worker.on('message', (m: { id: number; error?: string } & Partial<Analysis>) => {
      const p = thread.pending.get(m.id);
      if (!p) return;
      thread.pending.delete(m.id);
      if (m.error !== undefined) return p.reject(new Error(m.error));
      const parsed = m.parsed!;
      // Structured clone answers Uint8Arrays: Buffers again, over the same memory.
      for (const a of parsed.attachments) a.content = Buffer.from(a.content.buffer, a.content.byteOffset, a.content.byteLength);
      p.resolve({ parsed, auth: m.auth! });
    });
    const fail = (err: Error) => {
      for (const p of thread.pending.values()) p.reject(err);
      thread.pending.clear();
      if (!closed && threads[i] === thread) start(i);
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the analysis thread exited (${code})`)));
    threads[i] = thread;
  };
  for (let i = 0; i < count; i++) start(i);
  const analyse: Analyser = (raw, session) => {
    if (closed) return Promise.reject(new Error('the analysis threads are closed'));
    const thread = threads.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
    const id = nextId++;
    return new Promise<Analysis>((resolve, reject) => {
      thread.pending.set(id, { resolve, reject });
      if (thread.pending.size === 1) thread.worker.ref();
      thread.worker.postMessage({ id, raw, session });
    }).finally(() => { if (thread.pending.size === 0) thread.worker.unref(); });
  };
  return Object.assign(analyse, {
    async close() {
      closed = true;
      await Promise.all(threads.map((t) => t.worker.terminate()));
    },
  });
}

/** The size from which a message is worth handing to a thread (bySize). */
export const THREAD_MIN_BYTES = 128 * 1024;

/**
 * Messages of `minBytes` or more to `large` (the threads), smaller ones to `small` (this thread): handing a 10 KB
 * message to a thread and its parse back costs more than its parse (bench/inbound.ts: 311 → 172 messages/s at 10 KB
 * with two threads, 19 → 29 at 1 MB).
 */
export function bySize(small: Analyser, large: Analyser, minBytes: number): Analyser {
  return (raw, session) => (raw.length >= minBytes ? large : small)(raw, session);
}
