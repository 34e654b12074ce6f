import type { AddressInfo, Socket } from 'node:net';
import type { SMTPServer, SMTPServerDataStream } from 'smtp-server';
import type { Logger } from '../logging/logger';
import { addressKey } from '../core/addresses';

/**
 * What the SMTP listeners (submission, inbound) share: refusals, reading DATA, the limits that keep one client from
 * holding the ports, and listening.
 */

/**
 * How long and how many: one client (one address) cannot hold a listener.
 * - `maxConnectionsPerAddress`: connections at once from one remote address (IPv6: from one /64, what one host is
 *   usually given); one more is answered 421 at once and closed, before smtp-server counts it against `maxClients`.
 * - `sessionTimeoutMs`: the whole session, from the connection on; past it the client gets 421 and is disconnected,
 *   however active it is (a client that trickles commands or a message body keeps the idle timeout from firing).
 * - `commandTimeoutMs`: from each reply to the end of the client's next command line; past it, 421 and disconnected
 *   (a command dribbled a byte at a time). The message body after DATA is bounded by the session deadline instead,
 *   and while the client waits for Herald (a message being stored) neither deadline cuts it.
 */
export interface ListenerLimits {
  maxConnectionsPerAddress: number;
  sessionTimeoutMs: number;
  commandTimeoutMs: number;
}

export const DEFAULT_LISTENER_LIMITS: ListenerLimits = { maxConnectionsPerAddress: 20, sessionTimeoutMs: 600_000, commandTimeoutMs: 60_000 };

/** The parts of smtp-server's connection (smtp-connection.js, 3.x) the limits work with; checked at start. */
interface Connection {
  remoteAddress: string;
  name: string;
  _socket: Socket;
  _parser: { _dataMode: boolean } | false;
  _dataStream: unknown;
  _handlerPending: boolean;
  _closing: boolean;
  _closed: boolean;
  init(): void;
  send(code: number, data?: string | string[] | null, context?: string | false): void;
  _onCommand(command: Buffer, callback?: () => void): void;
  _onClose(): void;
}

/** A connection under the deadlines: when it began, and since when the client owes its next command (undefined: it is sending one). */
interface Watched {
  c: Connection;
  startedAt: number;
  owedSince: number | undefined;
}

/**
 * Puts the limits on every connection the server accepts. smtp-server has an idle timeout and a total `maxClients`,
 * nothing per address or per session: each new connection is taken as smtp-server registers it (its `connections`
 * set), before it greets the client.
 *
 * The deadlines are checked by ONE timer per listener, which looks at every connection a tenth of the shorter deadline
 * apart (6 s with the defaults): a reply only notes the time and a command clears it. A timer per reply (as first
 * built) cost a setTimeout and a clearTimeout at each of the four replies of every message; a deadline is now enforced
 * within a tenth of its length after it passes. Returns what stops the sweep (the listener's close).
 */
export function limitConnections(server: SMTPServer, limits: ListenerLimits, log: Logger, name: string): () => void {
  const perAddress = new Map<string, number>();
  const watched = new Set<Watched>();
  const connections = server.connections as unknown as Set<Connection>;
  const add = connections.add.bind(connections);

  /** Waiting for Herald (a handler running, a message being decided): no deadline cuts the client then. */
  const waitingOnUs = (c: Connection) => c._handlerPending || Boolean(c._dataStream && c._parser && !c._parser._dataMode);
  const cut = (c: Connection, why: string) => {
    log.info({ remoteAddress: c.remoteAddress }, `${name}: ${why}`);
    c.send(421, why); // 421 closes the connection (smtp-server)
  };
  const sessionLimit = `Session time limit (${Math.round(limits.sessionTimeoutMs / 1000)} s) reached; closing`;
  const commandLimit = `Command time limit (${Math.round(limits.commandTimeoutMs / 1000)} s) reached; closing`;
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const w of watched) {
      const { c } = w;
      if (c._closing || c._closed || waitingOnUs(c)) continue;
      if (now - w.startedAt >= limits.sessionTimeoutMs) cut(c, sessionLimit);
      // The body after 354 is the session deadline's.
      else if (w.owedSince !== undefined && now - w.owedSince >= limits.commandTimeoutMs && !(c._parser && c._parser._dataMode)) cut(c, commandLimit);
    }
  }, Math.max(10, Math.min(limits.sessionTimeoutMs, limits.commandTimeoutMs) / 10));
  sweep.unref();

  connections.add = (c: Connection) => {
    for (const method of ['init', 'send', '_onCommand', '_onClose'] as const) {
      if (typeof c[method] !== 'function') throw new Error(`${name}: smtp-server's connection has no ${method}(); the listener limits need it`);
    }
    const key = addressKey(c.remoteAddress);
    const count = perAddress.get(key) ?? 0;
    const socket = c._socket;
    if (count >= limits.maxConnectionsPerAddress) {
      // Refused before smtp-server starts the session: no greeting, no slot of maxClients, no reverse lookup.
      c.init = () => {
        socket.on('error', () => undefined);
        socket.end(`421 ${c.name} Too many connections from your address (at most ${limits.maxConnectionsPerAddress}); try again later\r\n`);
        setTimeout(() => socket.destroy(), 1000).unref();
      };
      log.debug({ remoteAddress: c.remoteAddress, connections: count }, `${name}: connection refused, too many from one address`);
      return connections;
    }
    perAddress.set(key, count + 1);

    const w: Watched = { c, startedAt: Date.now(), owedSince: undefined };
    watched.add(w);
    // The client owes its next command from each reply on, until its next command line arrives.
    const send = c.send.bind(c);
    c.send = (code, data, context) => {
      send(code, data, context);
      w.owedSince = Date.now();
    };
    const onCommand = c._onCommand.bind(c);
    c._onCommand = (line, callback) => {
      w.owedSince = undefined;
      onCommand(line, callback);
    };
    // Released once, when the connection closes: smtp-server's _onClose (the plain socket's close, or the TLS socket's
    // after STARTTLS, which does not always close the one below), or the plain socket's close.
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      watched.delete(w);
      const left = (perAddress.get(key) ?? 1) - 1;
      if (left > 0) perAddress.set(key, left);
      else perAddress.delete(key);
    };
    const onClose = c._onClose.bind(c);
    c._onClose = () => {
      release();
      onClose();
    };
    socket.once('close', release);
    return add(c);
  };
  return () => clearInterval(sweep);
}

/** An SMTP refusal: smtp-server answers `responseCode` and the message. */
export function smtpError(code: number, message: string): Error & { responseCode: number } {
  return Object.assign(new Error(message), { responseCode: code });
}

/**
 * A message that can never be read, whatever the time: a NUL byte (not allowed in SMTP's text or 8BITMIME, and no
 * BINARYMIME is offered), or MIME past the parser's limits (a header block over 2 MB, nesting over 256 levels). It is
 * refused for good, 554 5.6.0: a 4xx would have the sender retry it until it gives up days later.
 */
export const malformedMessage = (detail: string) => smtpError(554, `5.6.0 ${detail}`);

/** The message's own fault before it is parsed (a NUL byte), or undefined. */
export function messageFault(raw: Buffer): (Error & { responseCode: number }) | undefined {
  return raw.includes(0) ? malformedMessage('The message contains a NUL byte') : undefined;
}

/**
 * Runs a parse of the message: parsing the same bytes again fails the same way, so whatever it throws is the
 * message's fault (554), never a transient one (451).
 */
export async function parsing<T>(parse: Promise<T>): Promise<T> {
  try {
    return await parse;
  } catch (err) {
    throw malformedMessage(`The message cannot be parsed: ${(err as Error).message}`.slice(0, 300));
  }
}

/** Reads the DATA stream whole; past the size limit nothing more is kept (smtp-server flags `sizeExceeded`). */
export async function readMessage(stream: SMTPServerDataStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) if (!stream.sizeExceeded) chunks.push(chunk as Buffer);
  return stream.sizeExceeded ? Buffer.alloc(0) : Buffer.concat(chunks);
}

export interface Listening {
  port: number;
  close(): Promise<void>;
}

/**
 * Listens on `port` (0: a free one) with the limits (unset ones: DEFAULT_LISTENER_LIMITS); a client's broken
 * connection is logged, never thrown.
 */
export async function listen(server: SMTPServer, port: number, host: string | undefined, log: Logger, name: string, limits?: Partial<ListenerLimits>): Promise<Listening> {
  const given = Object.fromEntries(Object.entries(limits ?? {}).filter(([, v]) => v !== undefined)) as Partial<ListenerLimits>;
  const stopLimits = limitConnections(server, { ...DEFAULT_LISTENER_LIMITS, ...given }, log, name);
  server.on('error', (err) => log.warn({ err: err.message }, `${name}: connection error`));
  await new Promise<void>((resolve, reject) => {
    const failed = (err: Error) => {
      stopLimits();
      reject(err);
    };
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      resolve();
    });
  });
  return {
    port: (server.server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => {
      stopLimits();
      server.close(() => resolve());
    }),
  };
}
