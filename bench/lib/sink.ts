import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/**
 * A loopback SMTP server (smtp-server, as in test/support/smtp.ts) that accepts every message as fast as it can:
 * it drains DATA without parsing and records the acceptance time and the envelope recipient of each message.
 */
export interface Sink {
  url: string;
  /** Acceptance times (ms, performance.timeOrigin-based epoch with sub-ms precision), in order. */
  times: number[];
  /** Envelope recipients, in acceptance order. */
  recipients: string[];
  /** Connections open now, the most open at once, and the most messages waiting for their answer at once (with a delay). */
  sessions: { open: number; peak: number; peakWaiting: number };
  reset(): void;
  waitFor(n: number, timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * `delayMs`: each message is answered that long after its data ended (a simulated relay or provider whose reply takes
 * that long: the sender's connection is held meanwhile, as by a real one), so that throughput at a given latency and
 * number of connections can be measured; 0 (the default) answers at once.
 */
export async function startSink(opts: { delayMs?: number } = {}): Promise<Sink> {
  const delayMs = opts.delayMs ?? 0;
  const sessions = { open: 0, peak: 0, peakWaiting: 0 };
  let waiting = 0;
  let times: number[] = [];
  let recipients: string[] = [];
  let waiters: { n: number; resolve: () => void }[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    size: 30 * 1024 * 1024,
    maxClients: 1000,
    onConnect(_session, callback) {
      sessions.open++;
      sessions.peak = Math.max(sessions.peak, sessions.open);
      callback();
    },
    onClose() { sessions.open--; },
    onData(stream, session, callback) {
      stream.on('data', () => undefined);
      const accept = () => {
        times.push(performance.timeOrigin + performance.now());
        recipients.push(session.envelope.rcptTo[0]?.address ?? '');
        callback(null, 'OK');
        if (waiters.length) waiters = waiters.filter((w) => (times.length >= w.n ? (w.resolve(), false) : true));
      };
      stream.on('end', () => {
        if (delayMs <= 0) { accept(); return; }
        sessions.peakWaiting = Math.max(sessions.peakWaiting, ++waiting);
        setTimeout(() => { waiting--; accept(); }, delayMs);
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  // A sender that dies mid-session (a SIGKILLed worker) resets its connections: not the sink's failure.
  server.on('error', () => undefined);
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    get times() { return times; },
    get recipients() { return recipients; },
    sessions,
    reset() { times = []; recipients = []; sessions.peak = sessions.open; sessions.peakWaiting = 0; },
    waitFor(n, timeoutMs) {
      if (times.length >= n) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`SMTP sink accepted ${times.length} of ${n} messages within ${timeoutMs} ms`)), timeoutMs);
        waiters.push({ n, resolve: () => { clearTimeout(timer); resolve(); } });
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
