import fs from 'node:fs/promises';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import nodemailer, { type SendMailOptions } from 'nodemailer';
import type { Config } from '../config';
import { composeMessage, signMessage } from './compose';
import { pooledOptions, type SmtpFailure, type ThreadReply, type ThreadRequest } from './smtpThreadProtocol';

/** What the delivery activity needs from a mail transport. */
export interface Mailer {
  send(message: SendMailOptions): Promise<{ messageId: string; response: string }>;
  close(): void;
  /** Where mail goes, for the log (never contains a password). */
  describe: string;
}

export interface MailerOptions {
  /** Concurrent SMTP connections of the pool. */
  maxConnections?: number;
  /**
   * Whether the SMTP pool runs on a thread of its own (default) or on the caller's (false). On its own thread,
   * composing each message and speaking SMTP (most of a delivery's CPU) leaves the process's loop to the rest: the
   * delivery queue's claims and writes, the engine and, in a single process, the API (BENCHMARKS.md section 53); and
   * there each message is composed in one pass (mail/compose.ts, section 55). `false` is plain pooled nodemailer
   * (`sendMail`, its own streams composing): what bench:delivery measures Herald against.
   */
  thread?: boolean;
  /**
   * At most `limit` messages handed to the server in any `windowMs` (sliding), counted at this process's sends.
   * The engine's queue limits how fast deliveries *start*; SMTP latency varies, so their arrivals at the server can
   * bunch up (a slow batch followed by a fast one). This gate holds the line where the provider counts.
   */
  rateLimit?: { limit: number; windowMs: number };
}

/**
 * A rate as a whole number of sends per window, for the gate: 14/s → 14 per 1 s, 2.5/s → 5 per 2 s, 0.2/s → 1 per 5 s.
 */
export function rateWindow(perSecond: number): { limit: number; windowMs: number } {
  for (let period = 1; period <= 10; period++) {
    const limit = perSecond * period;
    if (Math.abs(limit - Math.round(limit)) < 1e-9 && Math.round(limit) >= 1) return { limit: Math.round(limit), windowMs: period * 1000 };
  }
  return perSecond >= 1 ? { limit: Math.floor(perSecond), windowMs: 1000 } : { limit: 1, windowMs: 1000 / perSecond };
}

/**
 * A sliding-window gate: a send may begin only while (sends completed within the last window) + (sends in flight)
 * < limit. Each message reaches the server after its send began and before it completed, so any window of arrival
 * times holds at most `limit` messages. Hand-written because the limiters at hand (rate-limiter-flexible's among
 * them) count fixed windows, which allow twice the limit across a window boundary. Per process: with several
 * workers the queue's shared limit still holds on average, and each worker's arrivals stay under the limit.
 */
export class SlidingWindowGate {
  private done: number[] = [];
  private head = 0;
  private inflight = 0;
  constructor(private readonly limit: number, private readonly windowMs: number) {}

  async acquire(): Promise<void> {
    for (;;) {
      const now = performance.now();
      while (this.head < this.done.length && this.done[this.head]! <= now - this.windowMs) this.head++;
      if (this.head > 1024 && this.head * 2 > this.done.length) { this.done = this.done.slice(this.head); this.head = 0; }
      if (this.done.length - this.head + this.inflight < this.limit) { this.inflight++; return; }
      const wait = this.head < this.done.length ? this.done[this.head]! + this.windowMs - now + 1 : 5;
      await new Promise((r) => setTimeout(r, Math.max(1, wait)));
    }
  }

  release(): void {
    this.inflight--;
    this.done.push(performance.now());
  }
}

/**
 * The delivery transport: a pooled SMTP transport when SMTP_URL is set (connections are reused across
 * messages), otherwise `.eml` files under DATA_DIR/outbox, one per email, named by Message-ID.
 */
export function createMailer(config: Pick<Config, 'smtpUrl' | 'dataDir'>, opts: MailerOptions = {}): Mailer {
  if (config.smtpUrl) {
    const url = new URL(config.smtpUrl);
    const maxConnections = opts.maxConnections ?? 10;
    const transport = opts.thread === false ? nodemailer.createTransport(pooledOptions(config.smtpUrl, maxConnections)) : threadedSmtp(config.smtpUrl, maxConnections);
    const gate = opts.rateLimit ? new SlidingWindowGate(opts.rateLimit.limit, opts.rateLimit.windowMs) : undefined;
    return {
      send: async (message) => {
        if (gate) await gate.acquire();
        try {
          const info = await transport.sendMail(message);
          return { messageId: info.messageId, response: info.response };
        } finally {
          gate?.release();
        }
      },
      close: () => transport.close(),
      describe: `smtp://${url.hostname}:${url.port || (url.protocol === 'smtps:' ? 465 : 587)}`,
    };
  }
  const outbox = path.join(config.dataDir, 'outbox');
  return {
    send: async (message) => {
      const composed = await composeMessage(message);
      const bytes = message.dkim ? await signMessage(composed.bytes, message.dkim) : composed.bytes;
      await fs.mkdir(outbox, { recursive: true });
      const name = composed.messageId.replace(/[<>]/g, '').replace(/[^A-Za-z0-9@._-]/g, '_');
      await fs.writeFile(path.join(outbox, `${name}.eml`), bytes);
      return { messageId: composed.messageId, response: 'written to outbox' };
    },
    close: () => undefined,
    describe: `files in ${outbox}`,
  };
}

/**
 * The pooled SMTP transport on a thread of its own (mail/smtpThread.ts), answering `sendMail` as nodemailer does. The
 * sends of one turn of this loop cross to the thread as one message, and its answers come back the same way. The
 * thread starts with the first send; it holds the process open only while sends are out. Should it die, the sends out
 * fail as transient (the queue tries them again, with the same Message-ID) and the next send starts another.
 */
function threadedSmtp(smtpUrl: string, maxConnections: number) {
  type Waiting = { resolve: (info: { messageId: string; response: string }) => void; reject: (err: Error) => void; on: Worker };
  let thread: Worker | undefined;
  let nextId = 1;
  const out = new Map<number, Waiting>();
  let batch: (ThreadRequest['sends'][number] & Omit<Waiting, 'on'>)[] = [];
  const failed = (f: SmtpFailure) => Object.assign(new Error(f.message), f);
  const start = () => {
    const t = new Worker(path.join(__dirname, 'smtpThread.cjs'), { workerData: { smtpUrl, maxConnections } });
    t.on('message', ({ answers }: ThreadReply) => {
      for (const a of answers) {
        const waiting = out.get(a.id);
        out.delete(a.id);
        if ('error' in a) waiting?.reject(failed(a.error));
        else waiting?.resolve({ messageId: a.messageId, response: a.response });
      }
      if (out.size === 0) t.unref();
    });
    // Whatever was out on a thread that stopped failed as a transient error (no SMTP answer: tried again later).
    const gone = (err: Error) => {
      if (thread === t) thread = undefined;
      for (const [id, waiting] of out) {
        if (waiting.on !== t) continue;
        out.delete(id);
        waiting.reject(failed({ message: `the SMTP thread stopped: ${err.message}`, code: 'ETHREAD' }));
      }
    };
    t.on('error', gone);
    t.on('exit', (code) => gone(new Error(`exit code ${code}`)));
    return t;
  };
  const post = (t: Worker, sends: typeof batch) => {
    t.postMessage({ sends: sends.map(({ id, message }) => ({ id, message })) } satisfies ThreadRequest);
    for (const { id, resolve, reject } of sends) out.set(id, { resolve, reject, on: t });
  };
  const flush = () => {
    if (batch.length === 0) return; // sent already, by a close
    const sends = batch;
    batch = [];
    const t = (thread ??= start());
    t.ref();
    try {
      post(t, sends);
    } catch {
      // A message that cannot cross (a stream, a function: Herald's never do) fails alone, permanently.
      for (const send of sends) {
        try { post(t, [send]); } catch (err) { send.reject(failed({ message: `the message cannot be handed to SMTP: ${(err as Error).message}`, responseCode: 554 })); }
      }
      if (out.size === 0) t.unref();
    }
  };
  return {
    sendMail(message: SendMailOptions): Promise<{ messageId: string; response: string }> {
      if (batch.length === 0) setImmediate(flush);
      return new Promise((resolve, reject) => batch.push({ id: nextId++, message, resolve, reject }));
    },
    /** Stops the thread; sends still out then fail as transient (the queue drains its own before it closes). */
    close() {
      flush();
      thread?.postMessage({ sends: [], close: true } satisfies ThreadRequest);
      thread = undefined;
    },
  };
}

/**
 * A message's MIME bytes as delivery sends them (mail/compose.ts, every line end CRLF), before any DKIM signature: for
 * GET /emails/:id/raw, composed by delivery's own code (sending/delivery.ts createComposer).
 */
export async function messageBytes(message: SendMailOptions): Promise<Buffer> {
  return (await composeMessage(message)).bytes;
}

/** SMTP 5xx answers are permanent (the message will never be accepted as it is); everything else may pass later. */
export function isPermanentFailure(err: unknown): boolean {
  const code = (err as { responseCode?: number }).responseCode;
  return typeof code === 'number' && code >= 500 && code < 600;
}

/**
 * A permanent refusal of the recipient itself (5xx to RCPT TO): a hard bounce at SMTP time. A 5xx elsewhere (to DATA:
 * content refused; to AUTH or MAIL FROM: the relay's own configuration) says nothing against the address.
 */
export function isRecipientRejection(err: unknown): boolean {
  const e = err as { command?: string; code?: string };
  return isPermanentFailure(err) && (e.command === 'RCPT TO' || (e.code === 'EENVELOPE' && e.command !== 'MAIL FROM'));
}

/** The enhanced status code (RFC 3463) of an SMTP answer, e.g. `5.1.1`; null without one. */
export function enhancedStatus(err: unknown): string | null {
  return /\b([245]\.\d{1,3}\.\d{1,3})\b/.exec((err as { response?: string }).response ?? '')?.[1] ?? null;
}

/** A one-line reason for the email row and the event, without anything secret. */
export function failureReason(err: unknown): string {
  const e = err as { responseCode?: number; response?: string; code?: string; message?: string };
  if (e.response) return `${e.response}`.slice(0, 500);
  return `${e.code ? `${e.code}: ` : ''}${e.message ?? String(err)}`.slice(0, 500);
}
