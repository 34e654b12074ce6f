import type { SendMailOptions } from 'nodemailer';
import type SMTPPool from 'nodemailer/lib/smtp-pool';

/** What the main thread and the SMTP thread (mail/smtpThread.ts) say to each other. */
export interface ThreadRequest {
  sends: { id: number; message: SendMailOptions }[];
  close?: true;
}
export interface ThreadReply {
  answers: ({ id: number; messageId: string; response: string } | { id: number; error: SmtpFailure })[];
}
/** A nodemailer error as far as Herald reads it, across the thread's boundary (an Error's own fields do not clone). */
export interface SmtpFailure {
  message: string;
  code?: string;
  response?: string;
  responseCode?: number;
  command?: string;
}

/** The pooled transport's options, one place for both ways of running it. */
export function pooledOptions(smtpUrl: string, maxConnections: number): SMTPPool.Options & { url: string } {
  return {
    url: smtpUrl,
    pool: true,
    maxConnections,
    maxMessages: Infinity,
    // A stuck server must not hold a delivery forever: the engine retries the attempt.
    connectionTimeout: 15_000,
    greetingTimeout: 15_000,
    socketTimeout: 60_000,
  };
}
