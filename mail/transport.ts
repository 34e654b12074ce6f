import fs from 'node:fs/promises';
import path from 'node:path';
import nodemailer, { type SendMailOptions } from 'nodemailer';
import type { Config } from '../config';

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
}

/**
 * The delivery transport: a pooled SMTP transport when SMTP_URL is set (connections are reused across
 * messages), otherwise `.eml` files under DATA_DIR/outbox, one per email, named by Message-ID.
 */
export function createMailer(config: Pick<Config, 'smtpUrl' | 'dataDir'>, opts: MailerOptions = {}): Mailer {
  if (config.smtpUrl) {
    const url = new URL(config.smtpUrl);
    const transport = nodemailer.createTransport({
      url: config.smtpUrl,
      pool: true,
      maxConnections: opts.maxConnections ?? 10,
      maxMessages: Infinity,
      // A stuck server must not hold a delivery forever: the engine retries the attempt.
      connectionTimeout: 15_000,
      greetingTimeout: 15_000,
      socketTimeout: 60_000,
    });
    return {
      send: async (message) => {
        const info = await transport.sendMail(message);
        return { messageId: info.messageId, response: info.response };
      },
      close: () => transport.close(),
      describe: `smtp://${url.hostname}:${url.port || (url.protocol === 'smtps:' ? 465 : 587)}`,
    };
  }
  const outbox = path.join(config.dataDir, 'outbox');
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    send: async (message) => {
      const info = await transport.sendMail(message);
      await fs.mkdir(outbox, { recursive: true });
      const name = info.messageId.replace(/[<>]/g, '').replace(/[^A-Za-z0-9@._-]/g, '_');
      await fs.writeFile(path.join(outbox, `${name}.eml`), info.message as Buffer);
      return { messageId: info.messageId, response: 'written to outbox' };
    },
    close: () => transport.close(),
    describe: `files in ${outbox}`,
  };
}

/** SMTP 5xx answers are permanent (the message will never be accepted as it is); everything else may pass later. */
export function isPermanentFailure(err: unknown): boolean {
  const code = (err as { responseCode?: number }).responseCode;
  return typeof code === 'number' && code >= 500 && code < 600;
}

/** A one-line reason for the email row and the event, without anything secret. */
export function failureReason(err: unknown): string {
  const e = err as { responseCode?: number; response?: string; code?: string; message?: string };
  if (e.response) return `${e.response}`.slice(0, 500);
  return `${e.code ? `${e.code}: ` : ''}${e.message ?? String(err)}`.slice(0, 500);
}
