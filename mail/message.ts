import type { KeyObject } from 'node:crypto';
import type { SendMailOptions } from 'nodemailer';
import type { DeliveryEmail, Email } from '../db/models/Email';
import { withHeraldHeaders, withReplyAddress } from './rawMessage';

export interface StoredAttachment {
  id: string;
  filename: string;
  contentType: string;
  contentId: string | null;
  disposition: 'attachment' | 'inline';
  content: Buffer;
}

export function domainOf(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1).toLowerCase();
}

/** A domain and its parents: mail.eu.example.com → [mail.eu.example.com, eu.example.com, example.com, com]. */
export function domainSuffixes(domain: string): string[] {
  const labels = domain.split('.');
  return labels.map((_, i) => labels.slice(i).join('.'));
}

/**
 * The MIME message of a stored email. The Message-ID is derived from the email's id, so a retried delivery
 * (after a crash between the SMTP answer and our database write) carries the same Message-ID and receivers can
 * drop the duplicate.
 */
export interface MessageContent {
  subject: string;
  html: string;
  /** Headers Herald adds itself (List-Unsubscribe …), after the sender's own. */
  extraHeaders?: Record<string, string>;
}

/**
 * nodemailer's DKIM options, its private key possibly parsed already (a KeyObject): nodemailer hands the key to
 * crypto's Sign#sign, which takes a KeyObject as well as a PEM (its types name only the PEM). A PEM is parsed again
 * at every signature, which cost more CPU than the RSA signature itself (domains/dkim.ts loadSigningKeys).
 */
export type DkimSigning = Omit<NonNullable<SendMailOptions['dkim']>, 'privateKey'> & { privateKey: string | KeyObject };
const dkimOption = (dkim: DkimSigning) => ({ dkim: dkim as SendMailOptions['dkim'] });

export interface BuildOptions {
  /** DKIM signing (domains/dkim.ts dkimFor): nodemailer signs the message with the sending domain's key. */
  dkim?: DkimSigning;
  /** The envelope sender (Return-Path): the email's VERP bounce address (bounces/token.ts); the From address without. */
  returnPath?: string;
  /** The Reply-To as sent, when it differs from the stored one (a `name+*@domain` signed for the email: inbound/replyAddress.ts). */
  replyTo?: string;
}

/** The Message-ID of an email, derived from its id (see above). */
export function messageIdOf(email: Pick<Email, 'id' | 'fromEmail'>): string {
  return `<${email.id}@${domainOf(email.fromEmail)}>`;
}

/** The subject of a test copy (POST /campaigns/:id/test, POST /templates/:id/test): it says so. */
/** A test copy's subject: `[TEST]`, or `[TEST B]` for a copy of an A/B campaign's variant B. */
export const testSubject = (subject: string, variant?: string): string => `[TEST${variant ? ` ${variant}` : ''}] ${subject}`;

/** A Date header's value as nodemailer writes it (mime-node: toUTCString with +0000). */
export const dateHeader = (at: Date) => at.toUTCString().replace(/GMT/, '+0000');

/** An address as a header names it: `Name <address>`, or the address alone. */
const named = (name: string | null, address: string) => (name ? `${JSON.stringify(name)} <${address}>` : address);

/**
 * The main headers of an email's message, those a support person looks at (GET /emails/:id `headers`), from what
 * buildMessage builds them of: Message-ID, Date, From, To, Reply-To and Subject (absent when not stored: a campaign
 * email's is rendered at delivery), then the sender's own headers. The whole message is GET /emails/:id/raw.
 */
export function mainHeaders(email: Pick<Email, 'id' | 'fromEmail' | 'fromName' | 'toEmail' | 'toName' | 'replyTo' | 'subject' | 'headers' | 'createdAt'>): Record<string, string> {
  return {
    'Message-ID': messageIdOf(email),
    Date: dateHeader(email.createdAt),
    From: named(email.fromName, email.fromEmail),
    To: named(email.toName, email.toEmail),
    ...(email.replyTo ? { 'Reply-To': email.replyTo } : {}),
    ...(email.subject !== null ? { Subject: email.subject } : {}),
    ...email.headers,
  };
}

/** A submitted message (SMTP), sent as its client built it to this email's recipient, with Herald's headers. */
export function buildRawMessage(email: DeliveryEmail, raw: Buffer, opts: BuildOptions = {}): SendMailOptions {
  return {
    envelope: { from: opts.returnPath ?? email.fromEmail, to: [email.toEmail] },
    // The Message-ID written into the bytes below, also for what the send answers (nodemailer does not read a raw
    // message's headers: it would answer, and the email row keep, a Message-ID of its own making).
    messageId: messageIdOf(email),
    // A Reply-To written `name+*@domain` goes out signed for this email (delivery.ts replyAddressFor), as from /v1/send.
    raw: withHeraldHeaders(email.replyTo && opts.replyTo && opts.replyTo !== email.replyTo ? withReplyAddress(raw, email.replyTo, opts.replyTo) : raw, { 'Message-ID': messageIdOf(email) }),
    ...(opts.dkim ? dkimOption(opts.dkim) : {}),
    ...(opts.returnPath ? { envelope: { from: opts.returnPath, to: [email.toEmail] } } : {}),
  };
}

/**
 * The message of a stored email, the same bytes at every build (a retry, GET /emails/:id/raw): its Message-ID derives
 * from its id; its Date is when it was submitted (created), the moment RFC 5322 (3.6.1) asks for, rather than the time
 * of this attempt; its multipart boundaries derive from its id (nodemailer's `baseBoundary`, random otherwise).
 */
export function buildMessage(email: DeliveryEmail, content: MessageContent, attachments: StoredAttachment[], opts: BuildOptions = {}): SendMailOptions {
  const message: SendMailOptions & { baseBoundary: string } = {
    messageId: messageIdOf(email),
    date: email.createdAt,
    baseBoundary: email.id.replace(/-/g, ''),
    from: email.fromName ? { name: email.fromName, address: email.fromEmail } : email.fromEmail,
    to: email.toName ? { name: email.toName, address: email.toEmail } : email.toEmail,
    ...(email.replyTo ? { replyTo: opts.replyTo ?? email.replyTo } : {}),
    subject: content.subject,
    html: content.html,
    headers: { ...email.headers, ...content.extraHeaders },
    attachments: attachments.map((a) => ({
      filename: a.filename,
      content: a.content,
      contentType: a.contentType,
      ...(a.contentId ? { cid: a.contentId } : {}),
      contentDisposition: a.disposition,
    })),
    ...(opts.dkim ? dkimOption(opts.dkim) : {}),
    ...(opts.returnPath ? { envelope: { from: opts.returnPath, to: [email.toEmail] } } : {}),
  };
  return message;
}
