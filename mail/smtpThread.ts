import { parentPort, workerData } from 'node:worker_threads';
import nodemailer, { type SendMailOptions } from 'nodemailer';
import { pooledOptions, type SmtpFailure, type ThreadReply, type ThreadRequest } from './smtpThreadProtocol';

/**
 * The SMTP thread of mail/transport.ts (threadedSmtp): nodemailer's pooled transport, as the process would have it,
 * on a thread of its own. Sends arrive in batches (one message per turn of the main thread's loop) and their answers
 * leave in batches (one message per turn of this thread's loop), so that the hand-over costs a few microseconds an
 * email rather than a round trip each.
 */
const { smtpUrl, maxConnections } = workerData as { smtpUrl: string; maxConnections: number };
const transport = nodemailer.createTransport(pooledOptions(smtpUrl, maxConnections));
const port = parentPort!;

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
    transport.close();
    process.exit(0);
  }
  for (const { id, message } of req.sends) {
    transport.sendMail(revive(message)).then(
      (info) => answer({ id, messageId: info.messageId, response: info.response }),
      (err: unknown) => answer({ id, error: failure(err) }),
    );
  }
});
