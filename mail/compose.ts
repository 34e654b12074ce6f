import type { Readable } from 'node:stream';
import type { SendMailOptions } from 'nodemailer';
import nodemailer from 'nodemailer';
import DKIM from 'nodemailer/lib/dkim';
import MailComposer from 'nodemailer/lib/mail-composer';
import type MimeNode from 'nodemailer/lib/mime-node';
import * as base64 from 'nodemailer/lib/base64';
import * as qp from 'nodemailer/lib/qp';

/** A message as SMTP sends it: its envelope, its Message-ID and its bytes (every line end CRLF, unsigned or signed). */
export interface ComposedMessage {
  envelope: { from: string; to: string[] };
  messageId: string;
  bytes: Buffer;
}

/**
 * The MIME bytes of a message, exactly as nodemailer's own composition writes them (MailComposer's tree, each node
 * streamed through its encoders, a last line end, every line end CRLF), before any DKIM signature.
 *
 * nodemailer streams every message through a chain of Transform streams joined by `pipeline` (an AbortController and,
 * at its end, a DOMException with a stack trace each), plus the Mailer's own wrapping: on this machine 0.46 ms of CPU
 * an email for a 2 KB HTML message, against 0.09 ms for its SMTP connection to send the same bytes (BENCHMARKS.md
 * section 55). Herald's messages are made of strings and Buffers, so the same tree is written here in one pass, with
 * nodemailer's own header builder (MimeNode#buildHeaders) and encoders (qp, base64): test/mail/compose.test.ts checks
 * it byte for byte against nodemailer's streams. Anything else in a tree (a stream, a URL or a path to read, an
 * encoder's input past one slice) goes through nodemailer's streams as before.
 */
export async function composeMessage(message: SendMailOptions): Promise<ComposedMessage> {
  const { dkim: _unsigned, ...unsigned } = message;
  const root = compileMessage(unsigned);
  const envelope = root.getEnvelope();
  return {
    envelope: { from: envelope.from || '', to: envelope.to },
    messageId: root.messageId(),
    bytes: writtenMessage(root, unsigned) ?? await streamed(unsigned),
  };
}

/** MailComposer's tree of a message (cheap: it holds the message's parts, it does not encode them). */
export function compileMessage(message: SendMailOptions): MimeNode {
  return new MailComposer(message).compile();
}

/**
 * The bytes of a compiled message written in one pass (see composeMessage), or undefined when only nodemailer's streams
 * can write it (the caller then streams it: `root.createReadStream()`).
 */
export function writtenMessage(root: MimeNode, message: SendMailOptions): Buffer | undefined {
  const parts: (string | Buffer)[] = [];
  if (!plainOptions(message) || !writeNode(root, parts)) return undefined;
  return crlf(withLastLineEnd(Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)))));
}

/** The message signed with DKIM (nodemailer's signer, as its transports run it on the composed message). */
export async function signMessage(bytes: Buffer, dkim: NonNullable<SendMailOptions['dkim']>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of signedStream(bytes, dkim)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** A message's bytes or stream, signed as they are read (nodemailer's DKIM signer reads it whole, then writes). */
export function signedStream(input: Buffer | Readable, dkim: NonNullable<SendMailOptions['dkim']>): Readable {
  return new DKIM(dkim).sign(input);
}

/** The options nodemailer's Mailer adds headers for after composing (X-Mailer, priority, List-*): not written here. */
const plainOptions = (m: SendMailOptions) => !m.xMailer && !m.priority && !m.list;

/** nodemailer's encoders take a slice of this many bytes at a time; past it, their streams decide. */
const ENCODE_SLICE = 64 * 1024;

/** MimeNode's fields that its stream() reads (not in nodemailer's type declarations). */
interface NodeInternals {
  _raw?: unknown;
  _transforms: unknown[];
  _processFuncs: unknown[];
  content?: unknown;
  contentType?: string;
  multipart?: unknown;
  boundary?: string;
  childNodes: MimeNode[];
}

/** One node as MimeNode#stream writes it, or false when only the streams can (the caller then uses them). */
function writeNode(node: MimeNode, parts: (string | Buffer)[]): boolean {
  const n = node as unknown as NodeInternals;
  if (n._transforms.length || n._processFuncs.length) return false;
  if (n._raw) {
    if (typeof n._raw !== 'string' && !Buffer.isBuffer(n._raw)) return false;
    parts.push(n._raw);
    return true;
  }
  parts.push(node.buildHeaders() + '\r\n\r\n');
  const content = n.content;
  if (content) {
    if (typeof content !== 'string' && !Buffer.isBuffer(content)) return false;
    const encoding = node.getTransferEncoding();
    if (encoding === 'quoted-printable') {
      // Outside text a lone CR or LF is data (nodemailer's `binary` encoding); its stream alone writes that.
      if (!/^text\//i.test(n.contentType || '') || Buffer.byteLength(content) > ENCODE_SLICE) return false;
      parts.push(qp.wrap(qp.encode(content), 76));
    } else if (encoding === 'base64') {
      parts.push(base64.wrap(base64.encode(content), 76));
    } else {
      parts.push(content);
    }
  }
  if (n.multipart) {
    for (let i = 0; i < n.childNodes.length; i++) {
      parts.push(`${i > 0 ? '\r\n' : ''}--${n.boundary}\r\n`);
      if (!writeNode(n.childNodes[i]!, parts)) return false;
    }
    parts.push(`\r\n--${n.boundary}--\r\n`);
  }
  return true;
}

/** nodemailer's LastNewline: a message ends with a line end. */
function withLastLineEnd(bytes: Buffer): Buffer {
  const last = bytes[bytes.length - 1];
  if (last === 0x0a) return bytes;
  return Buffer.concat([bytes, Buffer.from(last === 0x0d ? '\n' : '\r\n')]);
}

/** nodemailer's LeWindows: an LF without its CR gets one (a lone CR stays). */
function crlf(bytes: Buffer): Buffer {
  let lone = 0;
  for (let i = bytes.indexOf(0x0a); i !== -1; i = bytes.indexOf(0x0a, i + 1)) if (i === 0 || bytes[i - 1] !== 0x0d) lone++;
  if (lone === 0) return bytes;
  const out = Buffer.allocUnsafe(bytes.length + lone);
  let to = 0;
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === 0x0a && (i === 0 || bytes[i - 1] !== 0x0d)) out[to++] = 0x0d;
    out[to++] = bytes[i]!;
  }
  return out;
}

/** nodemailer's own composition, streamed (its stream transport runs it without a connection). */
const composing = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
async function streamed(message: SendMailOptions): Promise<Buffer> {
  return (await composing.sendMail(message)).message as Buffer;
}
