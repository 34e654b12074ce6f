import type { Knex } from 'knex';
import PostalMime, { type Address } from 'postal-mime';
import { SMTPServer, type SMTPServerAuthentication, type SMTPServerSession } from 'smtp-server';
import { DomainError } from '../core/errors';
import { normaliseEmail } from '../core/values';
import type { Logger } from '../logging/logger';
import { consumeRate, identify, type Caller } from '../projects/access';
import { MAX_RECIPIENTS, type Sender } from '../sending/sender';
import { listen, readMessage, smtpError, type ListenerLimits, type Listening } from './listener';

/**
 * SMTP submission (RFC 6409): a way in for the tools that can only speak SMTP. A client authenticates with AUTH PLAIN or
 * LOGIN — any user name, a project's secret API key as the password — and every message it sends goes through the one
 * send pipeline of POST /v1/send (sending/sender.ts): verified From domain, contact upsert, events, DKIM at delivery,
 * the project's rate limit. The message is kept as the client built it (MIME bytes), apart from the headers Herald sets
 * (mail/rawMessage.ts). The 250 is answered only once the message is stored: what was accepted is never lost.
 *
 * Answers: 535 for a bad key; 538 for AUTH before STARTTLS (unless allowed on loopback); 550 for an unverified From
 * domain or a message the send rules refuse, with the reason; 552 over the size limit; 451 when rate-limited or when
 * the message cannot be stored now (the client retries); 421 when too many clients are connected.
 */

/** The largest message accepted: the 10 MB attachments of an API send, base64-encoded, plus headers and text. */
export const MAX_SUBMISSION_BYTES = 15 * 1024 * 1024;

export interface SubmissionOptions {
  knex: Knex;
  sender: Sender;
  log: Logger;
  /** 0 picks a free port (tests). */
  port: number;
  host?: string;
  /** The certificate STARTTLS offers (PEM). */
  tls: { key: string | Buffer; cert: string | Buffer };
  /** AUTH before STARTTLS from a loopback address (a local app, a test); never from elsewhere. */
  insecureAuthOnLoopback: boolean;
  /** The project's budget, shared with the HTTP API (projects/access.ts): a message counts as a request. */
  ratePerMinute: number;
  /** Concurrent connections; beyond them a client gets 421 at once. */
  maxClients?: number;
  /** Messages being stored at once; beyond them MAIL FROM gets 421 (the client comes back later). */
  maxInFlight?: number;
  /** Idle time after which a connection is closed. */
  socketTimeoutMs?: number;
  maxBytes?: number;
  /** Per-address connections, session and command deadlines (smtp/listener.ts); unset ones: the defaults. */
  limits?: Partial<ListenerLimits>;
}

export type Submission = Listening;

interface SessionUser {
  caller: Caller;
}

const isLoopback = (address: string) => address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');

function firstMailbox(from: Address | undefined): { address: string; name: string } | undefined {
  if (!from) return undefined;
  const mailbox = 'address' in from && from.address ? from : ('group' in from ? from.group?.find((m) => m.address) : undefined);
  return mailbox?.address ? { address: mailbox.address, name: mailbox.name ?? '' } : undefined;
}

/** Plain text as HTML, for reading a text-only message back (GET /emails): escaped, line breaks kept. */
const textAsHtml = (text: string) => `<pre>${text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!)}</pre>`;

export async function startSubmission(opts: SubmissionOptions): Promise<Submission> {
  const { knex, sender, log } = opts;
  const maxBytes = opts.maxBytes ?? MAX_SUBMISSION_BYTES;
  const maxInFlight = opts.maxInFlight ?? 256;
  let inFlight = 0;

  /** One message of an authenticated session: stored through the send pipeline; the answer of its DATA. */
  async function submit(session: SMTPServerSession, raw: Buffer): Promise<string> {
    const { caller } = session.user as unknown as SessionUser;
    // The rate check (a batched upsert) runs while the message is parsed: one database round trip fewer in the dialogue.
    const [rate, parsed] = await Promise.all([consumeRate(knex, caller.projectId), PostalMime.parse(raw, { attachmentEncoding: 'arraybuffer' })]);
    if (rate.points > opts.ratePerMinute) {
      const seconds = Math.max(1, Math.ceil((rate.resetAt - Date.now()) / 1000));
      throw smtpError(451, `4.7.1 Rate limit of ${opts.ratePerMinute} requests per minute exceeded; try again in ${seconds} s`);
    }
    const from = firstMailbox(parsed.from);
    const fromEmail = from && normaliseEmail(from.address);
    if (!fromEmail) throw smtpError(550, '5.6.0 The message has no valid From address');
    const recipients = session.envelope.rcptTo.map((r) => ({ email: r.address }));
    const body = {
      to: recipients,
      from: { email: fromEmail, ...(from.name ? { name: from.name } : {}) },
      subject: parsed.subject ?? '',
      body: parsed.html || (parsed.text ? textAsHtml(parsed.text) : ''),
    };
    try {
      const stored = await sender.send({ projectId: caller.projectId, body, recipients, attachments: [], raw });
      const ids = (stored.data.emails as { email: string | null }[]).map((e) => e.email).filter(Boolean);
      return `2.0.0 Queued as ${ids.join(', ')}`;
    } catch (err) {
      if (err instanceof DomainError) {
        const detail = err.details.errors?.map((e) => e.message).join('; ') ?? err.message;
        throw smtpError(550, `5.7.1 ${detail}${err.details.suggestion ? ` ${err.details.suggestion}` : ''}`);
      }
      throw err;
    }
  }

  const server = new SMTPServer({
    name: opts.host && opts.host !== '0.0.0.0' && opts.host !== '::' ? opts.host : undefined,
    banner: 'Herald SMTP submission',
    secure: false,
    key: opts.tls.key,
    cert: opts.tls.cert,
    authMethods: ['PLAIN', 'LOGIN'],
    // AUTH is offered before STARTTLS so that onAuth can answer 538 with the reason, and let loopback clients in when
    // the operator allows it; smtp-server's own refusal would also refuse those.
    allowInsecureAuth: true,
    size: maxBytes,
    maxClients: opts.maxClients ?? 5000,
    socketTimeout: opts.socketTimeoutMs ?? 60_000,
    closeTimeout: 30_000,
    disabledCommands: [],
    logger: false,
    onAuth(auth: SMTPServerAuthentication, session: SMTPServerSession, callback) {
      if (!session.secure && !(opts.insecureAuthOnLoopback && isLoopback(session.remoteAddress))) {
        callback(smtpError(538, '5.7.11 Encryption required: STARTTLS first'));
        return;
      }
      identify(knex, auth.password ?? '').then((caller) => {
        if ('refused' in caller || caller.keyType !== 'secret') {
          callback(smtpError(535, '5.7.8 Authentication failed: the password is a project\'s secret API key (sk_…)'));
          return;
        }
        callback(null, { user: { caller } satisfies SessionUser as unknown as string });
      }, (err: Error) => {
        log.error({ err: err.message }, 'SMTP AUTH lookup failed');
        callback(smtpError(454, '4.7.0 Temporary authentication failure, try again'));
      });
    },
    onMailFrom(_address, _session, callback) {
      if (inFlight >= maxInFlight) {
        callback(smtpError(421, '4.3.2 Too busy to take a message now; try again shortly'));
        return;
      }
      callback();
    },
    onRcptTo(address, session, callback) {
      if (!normaliseEmail(address.address)) {
        callback(smtpError(553, `5.1.3 ${address.address} is not a valid address`));
        return;
      }
      if (session.envelope.rcptTo.length >= MAX_RECIPIENTS) {
        callback(smtpError(452, `4.5.3 At most ${MAX_RECIPIENTS} recipients per message`));
        return;
      }
      address.address = normaliseEmail(address.address)!;
      callback();
    },
    onData(stream, session, callback) {
      inFlight++;
      readMessage(stream).then(async (raw) => {
        if (stream.sizeExceeded) throw smtpError(552, `5.3.4 Message too big: at most ${maxBytes} bytes`);
        return submit(session, raw);
      }).finally(() => { inFlight--; }).then((answer) => callback(null, answer), (err: Error & { responseCode?: number }) => {
        if (err.responseCode) {
          callback(err);
          return;
        }
        // Nothing was stored (the transaction rolled back): the client keeps the message and tries again.
        log.error({ err: err.message, projectId: (session.user as unknown as SessionUser).caller.projectId }, 'SMTP submission could not be stored');
        callback(smtpError(451, '4.3.0 The message could not be stored now; try again'));
      });
    },
  });
  return listen(server, opts.port, opts.host, log, 'SMTP submission', opts.limits);
}
