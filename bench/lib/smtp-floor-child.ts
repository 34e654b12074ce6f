/**
 * The floor of bench/smtp.ts: a bare smtp-server, in a process of its own like Herald's, that speaks what Herald's
 * submission listener speaks to the client (STARTTLS with a self-signed RSA 2048 certificate, AUTH PLAIN and LOGIN)
 * and answers 250 to every message once it has read it, storing nothing. What the SMTP dialogue itself costs on this
 * machine, with the same client. With FLOOR_NO_AUTH=1 it is the floor of an MX instead (bench/inbound.ts): no AUTH,
 * STARTTLS still offered, as Herald's inbound listener does.
 */
import type { AddressInfo } from 'node:net';
import selfsigned from 'selfsigned';
import { SMTPServer } from 'smtp-server';
import { readMessage } from '../../smtp/listener';

void (async () => {
  const pems = await selfsigned.generate([{ name: 'commonName', value: 'localhost' }], { keyType: 'rsa', keySize: 2048, algorithm: 'sha256' });
  const mx = process.env.FLOOR_NO_AUTH === '1';
  const server = new SMTPServer({
    secure: false, key: pems.private, cert: pems.cert, logger: false,
    ...(mx ? { authOptional: true, disabledCommands: ['AUTH'], size: 16 * 1024 * 1024 } : { authMethods: ['PLAIN', 'LOGIN'], allowInsecureAuth: true }),
    onAuth: (_auth, _session, callback) => callback(null, { user: 'floor' }),
    onData: (stream, _session, callback) => { readMessage(stream).then(() => callback(), callback); },
  });
  server.listen(0, '127.0.0.1', () => process.send!({ type: 'ready', port: (server.server.address() as AddressInfo).port }));
  process.once('SIGTERM', () => server.close(() => process.exit(0)));
})();
