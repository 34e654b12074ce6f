import type { Knex } from 'knex';
import { SMTPServer } from 'smtp-server';
import { returnedMailReceiver, type BounceSettings } from '../bounces/bounces';
import { parseReport } from '../bounces/reports';
import { emailOfBounceAddress } from '../bounces/token';
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
}

export async function startInbound(opts: InboundOptions): Promise<Listening> {
  const { knex, secret, log } = opts;
  const maxBytes = opts.maxBytes ?? MAX_INBOUND_BYTES;
  const receive = returnedMailReceiver(knex, secret, opts.settings, opts.bounceDomain);
  const server = new SMTPServer({
    banner: 'Herald bounce processing',
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
    onRcptTo(address, _session, callback) {
      // Only addresses Herald wrote, at BOUNCE_DOMAIN: a check of the signature, no database work for strangers.
      if (!emailOfBounceAddress(secret, address.address, opts.bounceDomain)) {
        callback(smtpError(550, '5.1.1 No such mailbox'));
        return;
      }
      callback();
    },
    onData(stream, session, callback) {
      readMessage(stream).then(async (raw) => {
        if (stream.sizeExceeded) throw smtpError(552, `5.3.4 Message too big: at most ${maxBytes} bytes`);
        const fault = messageFault(raw);
        if (fault) throw fault;
        const report = await parsing(parseReport(raw));
        const outcome = await receive(session.envelope.rcptTo.map((r) => r.address), report);
        if (outcome.kind === 'dropped') log.info({ reason: outcome.reason }, 'returned mail dropped');
        else log.debug({ kind: outcome.kind, emailId: outcome.emailId }, 'returned mail recorded');
        return outcome.kind;
      }).then((kind) => callback(null, `2.0.0 ${kind === 'dropped' ? 'Received' : 'Recorded'}`), (err: Error & { responseCode?: number }) => {
        if (err.responseCode) {
          callback(err);
          return;
        }
        log.error({ err: err.message }, 'returned mail could not be recorded');
        callback(smtpError(451, '4.3.0 Could not record the message now; try again later'));
      });
    },
  });
  return listen(server, opts.port, opts.host, log, 'inbound SMTP', opts.limits);
}
