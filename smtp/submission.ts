import type { Knex } from 'knex';
import PostalMime, { addressParser, type Address, type Email } from 'postal-mime';
import { SMTPServer, type SMTPServerAddress, type SMTPServerAuthentication, type SMTPServerSession } from 'smtp-server';
import { DomainError } from '../core/errors';
import { normaliseEmail } from '../core/values';
import { isDataError, sqlState } from '../db/errors';
import { isVerifiedSender } from '../db/queries/domains';
import type { Logger } from '../logging/logger';
import { admit, identify, presentKey, type Caller, type PresentedKey } from '../projects/access';
import { MAX_RECIPIENTS, type Sender } from '../sending/sender';
import { addressKey, isLoopback } from '../core/addresses';
import { wildcardReplyTo } from '../inbound/replyAddress';
import { listen, malformedMessage, messageFault, parsing, readMessage, smtpError, type ListenerLimits, type Listening } from './listener';

/**
 * SMTP submission (RFC 6409): a way in for the tools that can only speak SMTP. A client authenticates with AUTH PLAIN or
 * LOGIN — any user name, a project's secret API key as the password — and every message it sends goes through the one
 * send pipeline of POST /v1/send (sending/sender.ts): verified From domain, contact upsert, events, DKIM at delivery,
 * the project's rate limit. The message is kept as the client built it (MIME bytes), apart from the headers Herald sets
 * (mail/rawMessage.ts). The 250 is answered only once the message is stored: what was accepted is never lost.
 *
 * A session is checked at every message, not only at AUTH: each MAIL FROM looks its key up again (the same uncached
 * lookup as every HTTP request, projects/access.ts), so a revoked key or a disabled project stops the next message: its
 * recipients get 530 (the check runs while the client sends them) and so does every later MAIL FROM. A
 * session has a lifetime and a number of messages (SMTP_SESSION_MAX_SECONDS, SMTP_SESSION_MAX_MESSAGES); past either,
 * 421 and the connection is closed. AUTH is offered only after STARTTLS (unless allowed on loopback); a failed AUTH is
 * logged (never its password) and answered later the more failures the connection has had, and past a limit per
 * connection or per remote address (in a window) the answer is 421 and the connection is closed.
 *
 * Answers: 535 for a bad key; 538 for AUTH before STARTTLS; 530 for MAIL FROM without AUTH, and for RCPT TO once the
 * session's key is revoked or its project disabled; 550 for a From or Sender that is not one mailbox at a verified domain, or a message the send rules refuse,
 * with the reason; 552 over the size limit; 554 for a message that cannot be read (a NUL byte, headers over 2 MB, MIME
 * nested over 256 levels) or holds a value the database refuses, which no retry mends; 451 (at RCPT TO) when rate-limited or (at the end of DATA) when
 * the message cannot be stored now (the client retries); 503 and the connection closed for content sent before the
 * 354; 421 when too many clients are connected, too many logins failed, or the session is over.
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
  /** Messages (MAIL FROM) one connection may send; the next gets 421 and the connection is closed. */
  maxSessionMessages?: number;
  /** A connection's lifetime; past it, 421 and the connection is closed (after the message in progress, if any). */
  maxSessionMs?: number;
  /** Failed AUTHs on one connection; the last of them is answered 421 and the connection is closed. */
  maxAuthFailures?: number;
  /** Failed AUTHs from one remote address within `authFailureWindowMs`; beyond them every AUTH from it gets 421. */
  maxAuthFailuresPerAddress?: number;
  authFailureWindowMs?: number;
  /** The delay before the first failed AUTH is answered; it doubles with each failure of the connection (up to 8 s). */
  authFailureDelayMs?: number;
}

/** The defaults of SubmissionOptions (and of the SMTP_* variables that set them, config/index.ts). */
export const SUBMISSION_DEFAULTS = {
  maxSessionMessages: 1000,
  maxSessionMs: 3600_000,
  maxAuthFailures: 3,
  maxAuthFailuresPerAddress: 20,
  authFailureWindowMs: 15 * 60_000,
  authFailureDelayMs: 500,
};

const MAX_AUTH_DELAY_MS = 8000;
/** Remote addresses whose failed logins are counted at once; memory stays bounded whatever the number of addresses. */
const MAX_TRACKED_ADDRESSES = 100_000;

export type Submission = Listening;

type SmtpRefusal = ReturnType<typeof smtpError>;

interface SessionUser {
  caller: Caller;
}

/** The parts of smtp-server's connection (smtp-connection.js, 3.x) that encryptionFirst reads before STARTTLS. */
interface EarlyConnection {
  _ready: boolean;
  _upgrading: boolean;
  secure: boolean;
  send(code: number, text: string): void;
  _onCommand(line: Buffer, callback?: () => void): void;
}

/** What Herald keeps of a connection beside smtp-server's session, by session id. */
interface SessionState {
  startedAt: number;
  /**
   * The key the session authenticated with, looked up again at each MAIL FROM: parsed and hashed once, at AUTH (its
   * hash is compared with the stored one at each lookup). Never logged.
   */
  key?: PresentedKey;
  messages: number;
  /**
   * The check of the message in progress, started at its MAIL FROM: the promise of its refusal (or undefined), and
   * once it has settled, `refusal` (null: admitted).
   */
  admission?: { done: Promise<SmtpRefusal | undefined>; refusal?: SmtpRefusal | null };
  authFailures: number;
  /** Closes the session once its lifetime is over. */
  timer?: NodeJS.Timeout;
}


/**
 * The one mailbox of each originator field (From, Sender), or why the field is refused: RFC 5322 allows a From of
 * several mailboxes (with a Sender) and a group, but Herald signs the message for its From domain, so every address the
 * reader may take for the author must be at a verified domain, and checking one is checking all only when there is
 * one. One pass over the parsed headers finds both fields; each is read once (postal-mime's own `from` keeps only the
 * first address, so it cannot tell one from several), and postal-mime's address parser decodes the display name.
 */
type Mailbox = { address: string; name: string } | { refused: string } | undefined;

function originators(parsed: Email): { from: Mailbox; sender: Mailbox } {
  let from: string[] | undefined;
  let sender: string[] | undefined;
  for (const h of parsed.headers) {
    if (h.key === 'from') (from ??= []).push(h.value);
    else if (h.key === 'sender') (sender ??= []).push(h.value);
  }
  return { from: from && singleMailbox(from, 'From'), sender: sender && singleMailbox(sender, 'Sender') };
}

function singleMailbox(values: string[], field: 'From' | 'Sender'): Mailbox {
  if (values.length > 1) return { refused: `The message has ${values.length} ${field} fields; exactly one is allowed` };
  const addresses: Address[] = addressParser(values[0]!);
  if (addresses.some((a) => a.group !== undefined)) return { refused: `The ${field} field is a group; it must be exactly one mailbox` };
  if (addresses.length !== 1) return { refused: `The ${field} field names ${addresses.length} addresses; it must be exactly one mailbox` };
  return { address: addresses[0]!.address ?? '', name: addresses[0]!.name ?? '' };
}

/** Plain text as HTML, for reading a text-only message back (GET /emails): escaped, line breaks kept. */
const textAsHtml = (text: string) => `<pre>${text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!)}</pre>`;

export async function startSubmission(opts: SubmissionOptions): Promise<Submission> {
  const { knex, sender, log } = opts;
  const maxBytes = opts.maxBytes ?? MAX_SUBMISSION_BYTES;
  const maxInFlight = opts.maxInFlight ?? 256;
  const limits: typeof SUBMISSION_DEFAULTS = {
    maxSessionMessages: opts.maxSessionMessages ?? SUBMISSION_DEFAULTS.maxSessionMessages,
    maxSessionMs: opts.maxSessionMs ?? SUBMISSION_DEFAULTS.maxSessionMs,
    maxAuthFailures: opts.maxAuthFailures ?? SUBMISSION_DEFAULTS.maxAuthFailures,
    maxAuthFailuresPerAddress: opts.maxAuthFailuresPerAddress ?? SUBMISSION_DEFAULTS.maxAuthFailuresPerAddress,
    authFailureWindowMs: opts.authFailureWindowMs ?? SUBMISSION_DEFAULTS.authFailureWindowMs,
    authFailureDelayMs: opts.authFailureDelayMs ?? SUBMISSION_DEFAULTS.authFailureDelayMs,
  };
  let inFlight = 0;
  const sessions = new Map<string, SessionState>();
  /** Failed AUTHs by remote address in the current window. Pruned of ended windows as it grows. */
  const failuresByAddress = new Map<string, { count: number; resetAt: number }>();

  const addressFailures = (address: string, now = Date.now()) => {
    const entry = failuresByAddress.get(address);
    return entry && entry.resetAt > now ? entry : undefined;
  };
  function countAddressFailure(address: string): number {
    const now = Date.now();
    const entry = addressFailures(address, now) ?? { count: 0, resetAt: now + limits.authFailureWindowMs };
    entry.count++;
    failuresByAddress.set(address, entry);
    if (failuresByAddress.size > 10_000) for (const [a, e] of failuresByAddress) if (e.resetAt <= now) failuresByAddress.delete(a);
    // Still too many (failures from very many addresses): the oldest windows go first (a Map keeps insertion order).
    for (const a of failuresByAddress.keys()) {
      if (failuresByAddress.size <= MAX_TRACKED_ADDRESSES) break;
      failuresByAddress.delete(a);
    }
    return entry.count;
  }

  /** One message of an authenticated session: stored through the send pipeline; the answer of its DATA. */
  async function submit(session: SMTPServerSession, admitted: Promise<SmtpRefusal | undefined>, raw: Buffer): Promise<string> {
    const { caller } = session.user as unknown as SessionUser;
    // RFC 5322 allows no NUL anywhere in a message (only BINARYMIME would, which is not offered).
    const fault = messageFault(raw);
    if (fault) throw fault;
    // The key's check and the rate's count, started at MAIL FROM (one statement, as an HTTP request's), while parsing.
    const [refusal, parsed] = await Promise.all([admitted, parsing(PostalMime.parse(raw, { attachmentEncoding: 'arraybuffer' }))]);
    if (refusal) throw refuse(session, refusal);
    const { from, sender: onBehalf } = originators(parsed);
    if (from && 'refused' in from) throw smtpError(550, `5.7.1 ${from.refused}`);
    const fromEmail = from && normaliseEmail(from.address);
    if (!fromEmail) throw smtpError(550, '5.6.0 The message has no valid From address');
    if (onBehalf && 'refused' in onBehalf) throw smtpError(550, `5.7.1 ${onBehalf.refused}`);
    if (onBehalf) {
      const senderEmail = normaliseEmail(onBehalf.address);
      if (!senderEmail) throw smtpError(550, '5.7.1 The Sender field holds no valid address');
      if (!(await isVerifiedSender(knex, caller.projectId, senderEmail))) {
        throw smtpError(550, `5.7.1 Sender ${senderEmail} is not at a verified domain of this project`);
      }
    }
    const recipients = session.envelope.rcptTo.map((r) => ({ email: r.address }));
    const reply = await wildcardReplyTo(knex, caller.projectId, parsed.replyTo ?? []);
    const body = {
      to: recipients,
      from: { email: fromEmail, ...(from.name ? { name: from.name } : {}) },
      subject: parsed.subject ?? '',
      body: parsed.html || (parsed.text ? textAsHtml(parsed.text) : ''),
      ...(reply ? { reply } : {}),
    };
    try {
      const stored = await sender.send({ projectId: caller.projectId, body, recipients, attachments: [], raw, domains: caller.domains });
      const ids = (stored.data.emails as { email: string | null }[]).map((e) => e.email).filter(Boolean);
      return `2.0.0 Queued as ${ids.join(', ')}`;
    } catch (err) {
      if (err instanceof DomainError) {
        const detail = err.details.errors?.map((e) => e.message).join('; ') ?? err.message;
        throw smtpError(550, `5.7.1 ${detail}${err.details.suggestion ? ` ${err.details.suggestion}` : ''}`);
      }
      // A value of the message the database cannot hold fails the same way on every retry.
      if (isDataError(err)) throw malformedMessage(`The message holds a value that cannot be stored (SQLSTATE ${sqlState(err)})`);
      throw err;
    }
  }

  /**
   * The session's key looked up again and the message counted against its project's rate (projects/access.ts admit):
   * the refusal for the message, or undefined.
   */
  function admission(session: SMTPServerSession, state: SessionState): NonNullable<SessionState['admission']> {
    const { caller } = session.user as unknown as SessionUser;
    const settle = (refusal: SmtpRefusal | undefined) => {
      pending.refusal = refusal ?? null;
      return refusal;
    };
    const pending: NonNullable<SessionState['admission']> = { done: admit(knex, state.key!).then((now) => {
      if ('refused' in now || now.projectId !== caller.projectId) {
        log.warn({ remoteAddress: session.remoteAddress, projectId: caller.projectId, keyId: caller.keyId, reason: 'refused' in now ? now.refused : 'other project' },
          'SMTP session refused: its key was revoked or its project disabled since AUTH');
        state.key = undefined; // every later MAIL FROM is 530; the recipients' answer ends the authentication (below)
        return settle(smtpError(530, '5.7.0 Authentication required: the API key of this session was revoked or its project disabled'));
      }
      if (now.rate.points > opts.ratePerMinute) {
        const seconds = Math.max(1, Math.ceil((now.rate.resetAt - Date.now()) / 1000));
        return settle(smtpError(451, `4.7.1 Rate limit of ${opts.ratePerMinute} requests per minute exceeded; try again in ${seconds} s`));
      }
      return settle(undefined);
    }, (err: Error) => {
      log.error({ err: err.message }, 'SMTP MAIL FROM key lookup failed');
      return settle(smtpError(451, '4.3.0 Temporary failure, try again'));
    }) };
    return pending;
  }

  /** The answer to a refused message; a refused key ends the session's authentication. */
  function refuse(session: SMTPServerSession, refusal: SmtpRefusal): SmtpRefusal {
    // Unauthenticated from now on, so that it may AUTH again with a live key (smtp-server allows one identity).
    if (refusal.responseCode === 530) session.user = undefined;
    return refusal;
  }

  /** A recipient of an admitted message: a valid address, within the message's recipient limit. */
  function recipient(address: SMTPServerAddress, session: SMTPServerSession, callback: (err?: Error | null) => void) {
    const email = normaliseEmail(address.address);
    if (!email) {
      callback(smtpError(553, `5.1.3 ${address.address} is not a valid address`));
      return;
    }
    if (session.envelope.rcptTo.length >= MAX_RECIPIENTS) {
      callback(smtpError(452, `4.5.3 At most ${MAX_RECIPIENTS} recipients per message`));
      return;
    }
    address.address = email;
    callback();
  }

  const connectionOf = (id: string) => [...server.connections].find((c) => c.session.id === id);

  /** Closes the session once its lifetime is over: at once when idle, else once its message is answered. */
  function armLifetime(id: string, state: SessionState, delayMs: number) {
    state.timer = setTimeout(() => {
      const connection = connectionOf(id);
      if (!connection) return;
      if (connection.session.envelope.mailFrom) {
        armLifetime(id, state, 1000); // a message in progress finishes first
        return;
      }
      connection.send(421, `4.4.2 Session lifetime of ${Math.round(limits.maxSessionMs / 1000)} s reached; reconnect`);
    }, delayMs);
    state.timer.unref();
  }

  /**
   * Before STARTTLS, AUTH is disabled for the session so that EHLO does not offer it; smtp-server answers a disabled
   * command as an unknown one (500 "command not recognized", counted towards its cut at 10 of them), which tells a
   * client that insists nothing of what to do. An AUTH sent then is answered 538 5.7.11 "STARTTLS first" (RFC 4954
   * section 6), the answer onAuth has for it. Found by the SMTP fuzz (test/smtp/fuzz.test.ts, seed 20261126). Lines
   * read while the connection is not greeted yet or is upgrading to TLS stay smtp-server's (it refuses or drops them).
   */
  function encryptionFirst(session: SMTPServerSession) {
    const connection = connectionOf(session.id) as unknown as EarlyConnection | undefined;
    if (!connection || typeof connection._onCommand !== 'function') return;
    const onCommand = connection._onCommand.bind(connection);
    connection._onCommand = (line, callback) => {
      if (connection._ready && !connection._upgrading && !connection.secure && session.disabledCommands?.includes('AUTH') && /^AUTH(?:\s|$)/i.test(line.toString('latin1'))) {
        connection.send(538, '5.7.11 Encryption required: STARTTLS first');
        setImmediate(() => callback?.());
        return;
      }
      onCommand(line, callback);
    };
  }

  const server = new SMTPServer({
    name: opts.host && opts.host !== '0.0.0.0' && opts.host !== '::' ? opts.host : undefined,
    banner: 'Herald SMTP submission',
    secure: false,
    key: opts.tls.key,
    cert: opts.tls.cert,
    authMethods: ['PLAIN', 'LOGIN'],
    // AUTH is offered (and accepted) only once the session is encrypted, or from loopback when the operator allows it:
    // onConnect disables it for the session (an AUTH then is answered 538: encryptionFirst), onSecure enables it again.
    // smtp-server's own refusal (538 for any AUTH before STARTTLS) stays off, as it would also refuse the loopback clients.
    allowInsecureAuth: true,
    size: maxBytes,
    maxClients: opts.maxClients ?? 5000,
    socketTimeout: opts.socketTimeoutMs ?? 60_000,
    closeTimeout: 30_000,
    disabledCommands: [],
    logger: false,
    onConnect(session, callback) {
      const state: SessionState = { startedAt: Date.now(), messages: 0, authFailures: 0 };
      sessions.set(session.id, state);
      armLifetime(session.id, state, limits.maxSessionMs);
      if (!(opts.insecureAuthOnLoopback && isLoopback(session.remoteAddress))) {
        session.disabledCommands = ['AUTH'];
        encryptionFirst(session);
      }
      callback();
    },
    onSecure(_socket, session, callback) {
      session.disabledCommands = undefined;
      callback();
    },
    onClose(session) {
      const state = sessions.get(session.id);
      if (state?.timer) clearTimeout(state.timer);
      sessions.delete(session.id);
    },
    onAuth(auth: SMTPServerAuthentication, session: SMTPServerSession, callback) {
      if (!session.secure && !(opts.insecureAuthOnLoopback && isLoopback(session.remoteAddress))) {
        callback(smtpError(538, '5.7.11 Encryption required: STARTTLS first'));
        return;
      }
      const state = sessions.get(session.id)!;
      const address = addressKey(session.remoteAddress); // an IPv6 client counts by its /64, as at the listener
      const blocked = addressFailures(address);
      if (blocked && blocked.count >= limits.maxAuthFailuresPerAddress) {
        const seconds = Math.max(1, Math.ceil((blocked.resetAt - Date.now()) / 1000));
        callback(smtpError(421, `4.7.0 Too many failed logins from ${address}; try again in ${seconds} s`));
        return;
      }
      const key = auth.password ?? '';
      identify(knex, key).then((caller) => {
        if ('refused' in caller || caller.keyType !== 'secret') {
          state.authFailures++;
          const fromAddress = countAddressFailure(address);
          log.warn({
            remoteAddress: session.remoteAddress, user: (auth.username ?? '').slice(0, 100), method: auth.method,
            reason: 'refused' in caller ? caller.refused : 'public key', failures: state.authFailures, failuresFromAddress: fromAddress,
          }, 'SMTP AUTH failed');
          const delay = Math.min(MAX_AUTH_DELAY_MS, limits.authFailureDelayMs * 2 ** (state.authFailures - 1));
          setTimeout(() => {
            if (state.authFailures >= limits.maxAuthFailures || fromAddress >= limits.maxAuthFailuresPerAddress) {
              callback(smtpError(421, '4.7.0 Authentication failed too many times; closing the connection'));
            } else {
              callback(smtpError(535, '5.7.8 Authentication failed: the password is a project\'s secret API key (sk_…)'));
            }
          }, delay).unref();
          return;
        }
        state.key = presentKey(key)!; // identify parsed it
        callback(null, { user: { caller } satisfies SessionUser as unknown as string });
      }, (err: Error) => {
        log.error({ err: err.message }, 'SMTP AUTH lookup failed');
        callback(smtpError(454, '4.7.0 Temporary authentication failure, try again'));
      });
    },
    onMailFrom(_address, session, callback) {
      const state = sessions.get(session.id);
      if (!session.user || !state?.key) {
        // AUTH is not offered before STARTTLS, so smtp-server lets MAIL through: the refusal is Herald's.
        callback(smtpError(530, '5.7.0 Authentication required: STARTTLS, then AUTH with a project\'s secret API key'));
        return;
      }
      if (state.messages >= limits.maxSessionMessages) {
        callback(smtpError(421, `4.7.0 At most ${limits.maxSessionMessages} messages per connection; reconnect`));
        return;
      }
      if (Date.now() - state.startedAt >= limits.maxSessionMs) {
        callback(smtpError(421, `4.4.2 Session lifetime of ${Math.round(limits.maxSessionMs / 1000)} s reached; reconnect`));
        return;
      }
      if (inFlight >= maxInFlight) {
        callback(smtpError(421, '4.3.2 Too busy to take a message now; try again shortly'));
        return;
      }
      // The key again, as an HTTP request would present it, and the message counted against the project's rate, in
      // one statement (projects/access.ts admit, as HTTP's authentication). No answer of the dialogue waits for it: it
      // runs while the client goes on, a recipient is refused once it is known, and the message is stored only after
      // it. (Waited on at MAIL FROM or RCPT TO it cost a quarter of the throughput: each answer written after a
      // database round trip is a TLS write of its own, where the ones written as the command is read share one.)
      state.messages++;
      state.admission = admission(session, state);
      callback();
    },
    onRcptTo(address, session, callback) {
      const refusal = sessions.get(session.id)?.admission?.refusal;
      if (refusal) {
        callback(refuse(session, refusal));
        return;
      }
      recipient(address, session, callback);
    },
    onData(stream, session, callback) {
      inFlight++;
      const admitted = sessions.get(session.id)?.admission?.done;
      // smtp-server answers 354 right after this call and then hands the parser's rest of the same read to the stream:
      // content there was sent before the client could have seen the 354 (RFC 2920 has it wait for it). It is
      // refused, and the connection closed at once, rather than taken as a message or waited on until the timeout.
      let early = false;
      process.nextTick(() => {
        // byteLength: what the parser has fed the stream so far (read by readMessage or not); a lone "." ends it.
        if (stream.byteLength === 0 && !stream.writableEnded) return;
        early = true;
        log.warn({ remoteAddress: session.remoteAddress }, 'SMTP message content sent before the 354: refused, connection closed');
        const connection = connectionOf(session.id);
        connection?.send(503, '5.5.0 Message content sent before the 354 reply (RFC 2920: wait for it); closing the connection');
        connection?.close();
      });
      readMessage(stream).then(async (raw) => {
        if (early) throw smtpError(503, '5.5.0 Message content sent before the 354 reply');
        if (stream.sizeExceeded) throw smtpError(552, `5.3.4 Message too big: at most ${maxBytes} bytes`);
        if (!admitted) throw smtpError(503, '5.5.1 No MAIL FROM for this message');
        return submit(session, admitted, raw);
      }).finally(() => { inFlight--; }).then((answer) => callback(null, answer), (err: Error & { responseCode?: number }) => {
        if (early) {
          callback(smtpError(503, '5.5.0 Message content sent before the 354 reply'));
          return;
        }
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
