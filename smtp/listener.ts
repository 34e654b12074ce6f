import type { AddressInfo } from 'node:net';
import type { SMTPServer, SMTPServerDataStream } from 'smtp-server';
import type { Logger } from '../logging/logger';

/** What the SMTP listeners (submission, inbound) share: refusals, reading DATA, and listening. */

/** An SMTP refusal: smtp-server answers `responseCode` and the message. */
export function smtpError(code: number, message: string): Error & { responseCode: number } {
  return Object.assign(new Error(message), { responseCode: code });
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

/** Listens on `port` (0: a free one); a client's broken connection is logged, never thrown. */
export async function listen(server: SMTPServer, port: number, host: string | undefined, log: Logger, name: string): Promise<Listening> {
  server.on('error', (err) => log.warn({ err: err.message }, `${name}: connection error`));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
