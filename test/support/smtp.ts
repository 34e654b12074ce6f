import type { AddressInfo } from 'node:net';
import { compile } from 'html-to-text';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface Received {
  envelopeFrom: string;
  envelopeTo: string[];
  raw: Buffer;
  parsed: ParsedMail;
  /** When the server accepted it (performance.now() of this process). */
  at: number;
  /** When its SMTP transaction began (MAIL FROM): the moment the sender had handed it to SMTP. */
  begunAt: number;
}

/** What the server answers to the next DATA commands: accept, or an SMTP error code with text. */
export type Verdict = 'accept' | { code: number; message: string };

export interface TestSmtpServer {
  port: number;
  url: string;
  received: Received[];
  /** Answers for the next messages, in order; once used up, messages are accepted. */
  script(verdicts: Verdict[]): void;
  /** Recipients refused at RCPT TO with `550 5.1.1 User unknown` (a hard bounce at SMTP time). */
  unknownUsers: Set<string>;
  /** Waits until `n` messages were accepted (or throws after `timeoutMs`). */
  waitFor(n: number, timeoutMs?: number): Promise<Received[]>;
  /** Stops listening (clients get connection errors) until `resume()`. */
  pause(): Promise<void>;
  resume(): Promise<void>;
  close(): Promise<void>;
}

/**
 * mailparser's plain text of an HTML-only message (html-to-text with its defaults), built once: mailparser calls
 * html-to-text's convert(), which compiles its selector tree again for every message (2.7 ms of a 10,000-message test's
 * 3 ms per message went there, in the Jest process beside the Herald it tests).
 */
const htmlToText = compile();

/**
 * The message as simpleParser parses it. A message with one HTML part and no text part (a campaign's) is parsed
 * without mailparser's own HTML-to-text, and its text made by the converter above: the same `text`, the tree built once.
 */
async function parse(raw: Buffer): Promise<ParsedMail> {
  const source = raw.toString('latin1');
  if (/text\/plain/i.test(source) || (source.match(/text\/html/gi) ?? []).length !== 1) return simpleParser(raw);
  const parsed = await simpleParser(raw, { skipHtmlToText: true });
  if (parsed.text === '' && typeof parsed.html === 'string') {
    parsed.text = htmlToText(parsed.html);
    delete parsed.textAsHtml; // mailparser's HTML of that text; no test reads it
  }
  return parsed;
}

/**
 * A real SMTP server (smtp-server) on a loopback port that keeps and parses every message it accepts.
 * Failure injection: `script([{ code: 451, … }])` answers the next DATA with that error; `pause()` closes the port.
 */
export async function startSmtpServer(): Promise<TestSmtpServer> {
  const received: Received[] = [];
  let verdicts: Verdict[] = [];
  let waiters: { n: number; resolve: () => void }[] = [];
  const unknownUsers = new Set<string>();
  /** The last MAIL FROM of each session (a pooled connection carries one transaction after another). */
  const mailFromAt = new Map<string, number>();

  const make = () => new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    size: 30 * 1024 * 1024,
    // pause()/close() drop pooled client connections at once instead of waiting 30 s for them to leave.
    closeTimeout: 100,
    onMailFrom(_address, session, callback) {
      mailFromAt.set(session.id, performance.now());
      callback();
    },
    onRcptTo(address, _session, callback) {
      if (unknownUsers.has(address.address.toLowerCase())) {
        callback(Object.assign(new Error(`5.1.1 <${address.address}>: Recipient address rejected: User unknown`), { responseCode: 550 }));
        return;
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', async () => {
        const verdict = verdicts.shift() ?? 'accept';
        if (verdict !== 'accept') {
          const err = Object.assign(new Error(verdict.message), { responseCode: verdict.code });
          callback(err);
          return;
        }
        const raw = Buffer.concat(chunks);
        received.push({
          at: performance.now(),
          begunAt: mailFromAt.get(session.id) ?? performance.now(),
          envelopeFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          envelopeTo: session.envelope.rcptTo.map((r) => r.address),
          raw,
          parsed: await parse(raw),
        });
        callback(null, 'Message queued');
        waiters = waiters.filter((w) => (received.length >= w.n ? (w.resolve(), false) : true));
      });
    },
  });

  let server = make();
  const listen = (port: number) => new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      // A client killed mid-conversation (the durability test's SIGKILLed worker) resets its socket: not a test failure.
      server.on('error', () => undefined);
      resolve((server.server.address() as AddressInfo).port);
    });
  });
  const port = await listen(0);

  return {
    port,
    url: `smtp://127.0.0.1:${port}`,
    received,
    unknownUsers,
    script(v) { verdicts = [...v]; },
    waitFor(n, timeoutMs = 30_000) {
      if (received.length >= n) return Promise.resolve(received);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`SMTP server received ${received.length} of ${n} messages within ${timeoutMs} ms`)), timeoutMs);
        waiters.push({ n, resolve: () => { clearTimeout(timer); resolve(received); } });
      });
    },
    async pause() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    async resume() {
      server = make();
      await listen(port);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export interface SinkProcess {
  url: string;
  /** Acceptance times (epoch ms) and envelope recipients of everything accepted so far. */
  received(): Promise<{ times: number[]; recipients: string[] }>;
  close(): void;
}

/** A timing-faithful SMTP sink in a child process (test/support/sinkChild.ts). */
export async function startSinkProcess(): Promise<SinkProcess> {
  const { fork } = await import('node:child_process');
  const child = fork(require.resolve('./sinkChild.ts'), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const next = <T>(type: string) => new Promise<T>((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`the SMTP sink process exited (${code})`));
    const onMessage = (m: { type?: string }) => {
      if (m.type !== type) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(m as T);
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
  const { url } = await next<{ url: string }>('ready');
  return {
    url,
    async received() {
      const answer = next<{ times: number[]; recipients: string[] }>('times');
      child.send({ type: 'times' });
      return answer;
    },
    close() { child.kill('SIGKILL'); },
  };
}
