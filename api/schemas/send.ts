import Joi from 'joi';
import addressparser from 'nodemailer/lib/addressparser';
import { contactDataSchema, emailSchema, headerTextSchema, uuidSchema } from './common';

import type { AttachmentInput, Mailbox, SendBody } from '../../sending/types';
import { MAX_RECIPIENTS } from '../../sending/sender';

// The send's types live with the business (sending/types.ts); this schema is checked against them.
export type { AttachmentInput, Mailbox, SendBody };

export const MAX_ATTACHMENTS = 10;

const nameSchema = headerTextSchema.trim().max(200);

const mailboxObject = Joi.object<Mailbox, true>({ email: emailSchema.required(), name: nameSchema.allow('') });

/** Parses `Name <address>` strings with nodemailer's RFC 5322 address parser into a mailbox. */
const mailboxString = Joi.string().trim().max(500).custom((value: string, helpers) => {
  const parsed = value.includes('<') ? addressparser(value, { flatten: true }) : [{ name: '', address: value }];
  if (parsed.length !== 1) return helpers.error('mailbox.one');
  const { error, value: email } = emailSchema.validate(parsed[0]!.address);
  if (error) return helpers.error('string.email');
  const name = parsed[0]!.name.trim();
  if (/[\r\n]/.test(name)) return helpers.error('string.pattern.name');
  return name ? { email, name } : { email };
}).messages({
  'mailbox.one': '{{#label}} must be exactly one address',
  'string.email': '{{#label}} must be a valid email',
  'string.pattern.name': '{{#label}} must not contain line breaks (CR or LF)',
});

const mailbox = Joi.alternatives().conditional(Joi.string(), { then: mailboxString, otherwise: mailboxObject });

// Header names are RFC 5322 field names; the headers Herald writes itself, and those a receiving server relies on to
// judge the message (authentication results, resent and ARC chains, MIME structure), may not be set or overridden.
const RESERVED_HEADERS = new Set([
  'from', 'to', 'cc', 'bcc', 'subject', 'reply-to', 'sender', 'message-id', 'date', 'mime-version', 'dkim-signature',
  'domainkey-signature', 'return-path', 'received', 'received-spf', 'authentication-results', 'list-unsubscribe',
  'list-unsubscribe-post',
]);
/** Whole families, by prefix: Content-* (MIME), Resent-* (RFC 5322 §3.6.6), ARC-* (RFC 8617). */
const RESERVED_HEADER_PREFIXES = ['content-', 'resent-', 'arc-'];
export const isReservedHeader = (name: string): boolean => {
  const lower = name.toLowerCase();
  return RESERVED_HEADERS.has(lower) || RESERVED_HEADER_PREFIXES.some((p) => lower.startsWith(p));
};

const headersSchema = Joi.object()
  .pattern(Joi.string().pattern(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/, 'a header name'), headerTextSchema.max(2000).required())
  .max(50)
  .custom((value: Record<string, string>, helpers) => {
    const reserved = Object.keys(value).find(isReservedHeader);
    return reserved ? helpers.error('headers.reserved', { header: reserved }) : value;
  })
  .messages({ 'headers.reserved': 'header {{#header}} is set by Herald and cannot be given' });

// Executable and script types that mail providers block outright.
const BLOCKED_EXTENSIONS = /\.(exe|com|bat|cmd|scr|pif|msi|msp|cpl|jar|js|jse|vbs|vbe|wsf|wsh|ps1|psm1|hta|lnk|reg|dll|app|apk|gadget|sct)$/i;

/**
 * Base64 with optional padding, checked in linear time. Joi's own base64() repeats a group per 4 characters, and on
 * a 7 MB attachment V8's backtracking regex engine can overflow the stack (measured: a 500 instead of a 422).
 */
const BASE64_CHARS = /^[A-Za-z0-9+/]*={0,2}$/;
function isBase64(value: string): boolean {
  if (!BASE64_CHARS.test(value)) return false;
  const padded = value.endsWith('=');
  return padded ? value.length % 4 === 0 : value.length % 4 !== 1;
}

/**
 * A file name as a mail client will show and save it: Unicode NFKC, without format or bidi characters (U+200F …), and
 * without the trailing dots and spaces that Windows drops, so that `invoice.exe.`, `invoice.exe ` and `invoice.exe`
 * followed by U+200F are all `invoice.exe` before the extension check. The normalised name is the one stored and sent.
 */
export function normaliseFilename(name: string): string {
  return name.normalize('NFKC').replace(/\p{Cf}/gu, '').replace(/[.\s]+$/u, '');
}

const attachmentSchema = Joi.object<AttachmentInput, true>({
  // \x00 rather than \0: the same character, in a spelling every regular-expression engine reading the document knows.
  // eslint-disable-next-line no-control-regex
  filename: Joi.string().min(1).max(255).pattern(/^[^/\\\r\n\x00]+$/, 'a file name without path separators or line breaks').required()
    .custom((value: string, helpers) => {
      const name = normaliseFilename(value);
      if (name === '') return helpers.error('filename.empty');
      return BLOCKED_EXTENSIONS.test(name) ? helpers.error('filename.blocked') : name;
    })
    .messages({
      'filename.blocked': '{{#label}} has an executable file type, which mail providers block',
      'filename.empty': '{{#label}} has no characters left once invisible characters and trailing dots and spaces are removed',
    }),
  content: Joi.string().min(1).required().custom((value: string, helpers) => (isBase64(value) ? value : helpers.error('string.base64'))),
  contentType: Joi.string().max(200).pattern(/^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*$/, 'type/subtype'),
  contentId: Joi.string().max(200).pattern(/^[^<>\s]+$/, 'an id without spaces or angle brackets'),
  disposition: Joi.string().valid('attachment', 'inline'),
});

// Not a strict key map: Joi's typings cannot express that `to`/`from` alternatives convert to Mailbox.
export const sendSchema = Joi.object<SendBody>({
  to: Joi.alternatives().conditional(Joi.array(), {
    then: Joi.array().items(mailbox).min(1).max(MAX_RECIPIENTS),
    otherwise: mailbox,
  }).required(),
  template: uuidSchema,
  type: Joi.string().valid('html', 'markdown'),
  subject: headerTextSchema.min(1).max(998).when('template', { not: Joi.exist(), then: Joi.required() }),
  body: Joi.string().min(1).max(2 * 1024 * 1024).when('template', { not: Joi.exist(), then: Joi.required() }),
  from: mailbox,
  name: nameSchema,
  reply: emailSchema,
  headers: headersSchema,
  attachments: Joi.array().items(attachmentSchema).max(MAX_ATTACHMENTS),
  subscribed: Joi.boolean(),
  track: Joi.object({ opens: Joi.boolean(), clicks: Joi.boolean() }),
  data: contactDataSchema,
}).example({
  to: 'Ada Lovelace <ada@example.com>',
  from: 'Acme <hello@example.com>',
  subject: 'Welcome to Acme, {{ firstName }}',
  body: '<p>Hello {{ firstName }},</p><p>Your account is ready. Sign in at <a href="https://app.example.com">app.example.com</a>.</p>',
  reply: 'support@example.com',
  data: { firstName: 'Ada' },
});
