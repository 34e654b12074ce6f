import { Readable } from 'node:stream';
import { parentPort, workerData } from 'node:worker_threads';
import type { SendMailOptions } from 'nodemailer';
import type MailMessage from 'nodemailer/lib/mailer/mail-message';
import SMTPPool from 'nodemailer/lib/smtp-pool';
import { compileMessage, signedStream, writtenMessage } from './compose';
import { pooledOptions, type SmtpFailure, type ThreadReply, type ThreadRequest } from './smtpThreadProtocol';

/**
 * The SMTP thread of mail/transport.ts (threadedSmtp): nodemailer's SMTP pool on a thread of its own. Sends arrive in
 * batches (one message per turn of the main thread's loop) and their answers leave in batches (one message per turn
 * of this thread's loop), so that the hand-over costs a few microseconds an email rather than a round trip each.
 *
 * Each message is handed to the pool through nodemailer's transport interface (`send(mail, callback)`, what its Mailer
 * calls), and written in one pass when a connection reads it (mail/compose.ts: nodemailer's bytes without its streams),
 * signed when it has a DKIM key: the pool's connections, its retry of a message a reused connection lost before sending
 * a byte, its reset after a refused message, are nodemailer's. Through the Mailer, composition and its streams were
 * three quarters of this thread's CPU (BENCHMARKS.md section 55).
 */
const { smtpUrl, maxConnections } = workerData as { smtpUrl: string; maxConnections: number };
const pool = new SMTPPool(pooledOptions(smtpUrl, maxConnections));
const port = parentPort!;

/**
 * A message as nodemailer's transports take one from its Mailer. Its bytes are written when a connection reads it
 * (each read a fresh stream: the pool reads a message again on another connection when a reused one closed before it
 * sent a byte), so that a claim's worth of messages waiting for a connection holds their parts, not their encodings.
 */
function asMail(options: SendMailOptions): MailMessage<SMTPPool.SentMessageInfo> {
  const { dkim, ...unsigned } = options;
  const root = compileMessage(unsigned);
  const message = {
    getEnvelope: () => root.getEnvelope(),
    messageId: () => root.messageId(),
    getHeader: (key: string) => root.getHeader(key),
    createReadStream: () => {
      let input: Readable;
      try {
        const bytes = writtenMessage(root, unsigned);
        input = bytes ? Readable.from([bytes], { objectMode: false }) : root.createReadStream();
      } catch (err) {
        // The pool reads the stream's error as the send's (as a composition error in nodemailer's own streams is).
        input = new Readable({ read() { this.destroy(err as Error); } });
      }
      return dkim ? signedStream(input, dkim) : input;
    },
  };
  return { data: {}, message } as unknown as MailMessage<SMTPPool.SentMessageInfo>;
}

async function send(options: SendMailOptions): Promise<SMTPPool.SentMessageInfo> {
  const mail = asMail(options);
  return new Promise((resolve, reject) => pool.send(mail, (err, info) => (err ? reject(err) : resolve(info!))));
}

let answers: ThreadReply['answers'] = [];
let scheduled = false;
const flush = () => {
  scheduled = false;
  if (answers.length === 0) return;
  const batch = answers;
  answers = [];
  port.postMessage({ answers: batch } satisfies ThreadReply);
};
const answer = (a: ThreadReply['answers'][number]) => {
  answers.push(a);
  if (scheduled) return;
  scheduled = true;
  setImmediate(flush);
};

/** What a structured clone turned into a Uint8Array (a Buffer's bytes): nodemailer wants Buffers. */
const buffer = (v: unknown) => (v instanceof Uint8Array && !Buffer.isBuffer(v) ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : v);
function revive(m: SendMailOptions): SendMailOptions {
  return {
    ...m,
    ...(m.raw !== undefined ? { raw: buffer(m.raw) as Buffer } : {}),
    ...(m.attachments ? { attachments: m.attachments.map((a) => ({ ...a, ...(a.content !== undefined ? { content: buffer(a.content) as Buffer } : {}) })) } : {}),
  };
}

/** The fields of nodemailer's errors that Herald reads (mail/transport.ts failureReason and the rest). */
function failure(err: unknown): SmtpFailure {
  const e = err as Partial<SmtpFailure>;
  return { message: e.message ?? String(err), code: e.code, response: e.response, responseCode: e.responseCode, command: e.command };
}

port.on('message', (req: ThreadRequest) => {
  if (req.close) {
    // The answers already in hand go first; sends still out end with the thread (the main thread fails them as
    // transient), rather than the thread waiting for their SMTP answers or timeouts.
    flush();
    pool.close();
    process.exit(0);
  }
  for (const { id, message } of req.sends) {
    send(revive(message)).then(
      (info) => answer({ id, messageId: info.messageId, response: info.response }),
      (err: unknown) => answer({ id, error: failure(err) }),
    );
  }
});
