import type { Knex } from 'knex';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import { returnedMailReceiver, type BounceSettings } from '../bounces/bounces';
import { parseReport } from '../bounces/reports';
import { emailOfBounceAddress } from '../bounces/token';
import type { InboundReceiver, Resolution } from '../inbound/receive';
import { addressKey } from '../core/addresses';
import type { Logger } from '../logging/logger';
import { listen, messageFault, parsing, readMessage, smtpError, type ListenerLimits, type Listening } from './listener';

/**
 * The inbound listener for mail that comes back (the MX of BOUNCE_DOMAIN points here): delivery status notifications
 * and feedback reports sent to a VERP address (bounces/token.ts). No AUTH: anyone may deliver, but only to an address
 * Herald signed; every other recipient is refused at RCPT (550), before any data. A message is answered 250 once it is
 * recorded (or dropped as no report; a report already recorded for its email is answered 250 and records nothing new),
 * 554 5.6.0 when it can never be read (a NUL byte, MIME past the parser's limits), 451 when it cannot be recorded now
 * (the sending server tries again later). Limits: the size (552), the number of connections (421), per address too,
 * an idle timeout, a deadline per command and per session (smtp/listener.ts): one client cannot hold the port.
 *
 * With `receiver`, it also takes mail for the projects' inbound domains (issue 31, inbound/): a recipient that a route
 * of a VERIFIED domain takes is accepted at RCPT TO (a reject route answers its own 550 text there), and the message is
 * answered 250 once it is stored (inbound/receive.ts: one statement, shared by the messages ready together). Bounce addresses and inbound addresses are not
 * mixed in one message (452 for the second kind: the sender sends it again in a transaction of its own). At most
 * `maxRecipients` recipients per message (452 after), at most `senderRatePerMinute` messages per minute from one
 * envelope sender (the remote address for the null sender), 451 past it.
 */

/** A DSN or an ARF report may quote the original message: room for the largest Herald sends. */
export const MAX_INBOUND_BYTES = 16 * 1024 * 1024;

export interface InboundOptions {
  knex: Knex;
  secret: Buffer;
  log: Logger;
  settings: BounceSettings;
  /** BOUNCE_DOMAIN: the only domain whose addresses are taken (unset: none is). */
  bounceDomain: string | undefined;
  port: number;
  host?: string;
  /** Offered with STARTTLS (opportunistic: servers that send bounces use it when offered). */
  tls: { key: string | Buffer; cert: string | Buffer };
  maxBytes?: number;
  maxClients?: number;
  socketTimeoutMs?: number;
  /** Per-address connections, session and command deadlines (smtp/listener.ts); unset ones: the defaults. */
  limits?: Partial<ListenerLimits>;
  /** Routes and stores mail for inbound domains (inbound/receive.ts); without it only bounce addresses are taken. */
  receiver?: InboundReceiver;
  /** Recipients of one message (default 100); more get 452 (RFC 5321 section 4.5.3.1.8: the sender sends them again). */
  maxRecipients?: number;
  /** Messages one envelope sender may send per minute (default 600); more get 451 at MAIL FROM. */
  senderRatePerMinute?: number;
}

/** What RCPT TO decided for each recipient of the current message (reset at each MAIL FROM). */
type Accepted = { address: string; bounce: true } | { address: string; bounce: false; to: Extract<Resolution, { kind: 'route' }> };

/**
 * Messages per envelope sender in the current minute: a fixed window per sender, swept each minute. In memory, per
 * listener: a sender spreading over several API processes gets the limit per process.
 */
function senderRate(perMinute: number) {
  let window = Math.floor(Date.now() / 60_000);
  let counts = new Map<string, number>();
  return (sender: string): boolean => {
    const now = Math.floor(Date.now() / 60_000);
    if (now !== window) {
      window = now;
      counts = new Map();
    }
    const n = (counts.get(sender) ?? 0) + 1;
    counts.set(sender, n);
    return n <= perMinute;
  };
}

export async function startInbound(opts: InboundOptions): Promise<Listening> {
  const { knex, secret, log } = opts;
  const maxBytes = opts.maxBytes ?? MAX_INBOUND_BYTES;
  const receive = returnedMailReceiver(knex, secret, opts.settings, opts.bounceDomain);
  const maxRecipients = opts.maxRecipients ?? 100;
  const senderRatePerMinute = opts.senderRatePerMinute ?? 600;
  const allowSender = senderRate(senderRatePerMinute);
  const accepted = new WeakMap<SMTPServerSession, Accepted[]>();
  const server = new SMTPServer({
    banner: 'Herald inbound mail',
    secure: false,
    key: opts.tls.key,
    cert: opts.tls.cert,
    authOptional: true,
    disabledCommands: ['AUTH'],
    size: maxBytes,
    maxClients: opts.maxClients ?? 1000,
    socketTimeout: opts.socketTimeoutMs ?? 60_000,
    closeTimeout: 30_000,
    logger: false,
    onMailFrom(address, session, callback) {
      accepted.set(session, []);
      const sender = address.address ? address.address.toLowerCase() : `<> ${addressKey(session.remoteAddress)}`;
      if (!allowSender(sender)) {
        callback(smtpError(451, `4.7.1 Too many messages from this sender (at most ${senderRatePerMinute} a minute); try again later`));
        return;
      }
      callback();
    },
    onRcptTo(address, session, callback) {
      const list = accepted.get(session) ?? [];
      if (list.length >= maxRecipients) {
        callback(smtpError(452, `4.5.3 Too many recipients (at most ${maxRecipients} per message)`));
        return;
      }
      const kindTaken = list[0]?.bounce;
      // Addresses Herald wrote, at BOUNCE_DOMAIN: a check of the signature, no database work for strangers.
      if (emailOfBounceAddress(secret, address.address, opts.bounceDomain)) {
        if (kindTaken === false) {
          callback(smtpError(452, '4.5.3 Send mail for this recipient in a message of its own'));
          return;
        }
        list.push({ address: address.address, bounce: true });
        accepted.set(session, list);
        callback();
        return;
      }
      if (!opts.receiver) {
        callback(smtpError(550, '5.1.1 No such mailbox'));
        return;
      }
      opts.receiver.resolve(address.address).then((to) => {
        if (!to) return callback(smtpError(550, '5.1.1 No such mailbox'));
        if (to.kind === 'reject') return callback(smtpError(550, `5.7.1 ${to.message}`));
        if (kindTaken === true) return callback(smtpError(452, '4.5.3 Send mail for this recipient in a message of its own'));
        list.push({ address: address.address, bounce: false, to });
        accepted.set(session, list);
        return callback();
      }, (err: Error) => {
        log.error({ err: err.message }, 'inbound route lookup failed');
        callback(smtpError(451, '4.3.0 Could not look the recipient up now; try again later'));
      });
    },
    onData(stream, session, callback) {
      readMessage(stream).then(async (raw) => {
        if (stream.sizeExceeded) throw smtpError(552, `5.3.4 Message too big: at most ${maxBytes} bytes`);
        const fault = messageFault(raw);
        if (fault) throw fault;
        const routed = (accepted.get(session) ?? []).filter((a): a is Extract<Accepted, { bounce: false }> => !a.bounce);
        if (routed.length && opts.receiver) {
          const ids = await opts.receiver.store(raw, { mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '', remoteAddress: session.remoteAddress, helo: session.hostNameAppearsAs ?? '' }, routed);
          log.debug({ ids }, 'inbound mail stored');
          return 'stored' as const;
        }
        const report = await parsing(parseReport(raw));
        const outcome = await receive(session.envelope.rcptTo.map((r) => r.address), report);
        if (outcome.kind === 'dropped') log.info({ reason: outcome.reason }, 'returned mail dropped');
        else log.debug({ kind: outcome.kind, emailId: outcome.emailId }, 'returned mail recorded');
        return outcome.kind;
      }).then((kind) => callback(null, `2.0.0 ${kind === 'stored' ? 'Stored' : kind === 'dropped' ? 'Received' : 'Recorded'}`), (err: Error & { responseCode?: number }) => {
        if (err.responseCode) {
          callback(err);
          return;
        }
        log.error({ err: err.message }, 'received mail could not be recorded');
        callback(smtpError(451, '4.3.0 Could not record the message now; try again later'));
      });
    },
  });
  return listen(server, opts.port, opts.host, log, 'inbound SMTP', opts.limits);
}
