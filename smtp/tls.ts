import fs from 'node:fs';
import path from 'node:path';
import selfsigned from 'selfsigned';
import type { SmtpSubmissionConfig } from '../config';
import type { Logger } from '../logging/logger';

/** The part of the submission settings the certificate depends on (the others may come along). */
export type SmtpTlsConfig = Pick<SmtpSubmissionConfig, 'host' | 'tlsCertFile' | 'tlsKeyFile'> & Partial<SmtpSubmissionConfig>;

/**
 * The certificate the SMTP listeners (submission, inbound) offer with STARTTLS: the operator's (SMTP_TLS_CERT and SMTP_TLS_KEY, PEM files), or
 * a self-signed one generated once into DATA_DIR/smtp-tls/ (key mode 0600) and reused on every start. Clients must
 * then be told to accept it (nodemailer: `tls: { rejectUnauthorized: false }`); the log says so at every start. It is
 * this installation's own key: never smtp-server's built-in test certificate, whose private key everyone has.
 */
export async function smtpTls(config: SmtpTlsConfig, dataDir: string, log: Logger): Promise<{ key: Buffer; cert: Buffer }> {
  if (config.tlsCertFile && config.tlsKeyFile) {
    return { cert: fs.readFileSync(config.tlsCertFile), key: fs.readFileSync(config.tlsKeyFile) };
  }
  const dir = path.join(dataDir, 'smtp-tls');
  const keyFile = path.join(dir, 'key.pem');
  const certFile = path.join(dir, 'cert.pem');
  if (!fs.existsSync(keyFile) || !fs.existsSync(certFile)) {
    const host = config.host && !['0.0.0.0', '::'].includes(config.host) ? config.host : 'localhost';
    const pems = await selfsigned.generate([{ name: 'commonName', value: host }], {
      keyType: 'rsa', keySize: 2048, algorithm: 'sha256',
      notAfterDate: new Date(Date.now() + 5 * 365 * 24 * 3600 * 1000),
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: host }, { type: 7, ip: '127.0.0.1' }] }],
    });
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(keyFile, pems.private, { mode: 0o600 });
    fs.writeFileSync(certFile, pems.cert);
  }
  log.warn({ cert: certFile }, 'the SMTP listeners offer a self-signed certificate generated for this installation; set SMTP_TLS_CERT and SMTP_TLS_KEY to offer your own (clients must otherwise accept it explicitly)');
  return { key: fs.readFileSync(keyFile), cert: fs.readFileSync(certFile) };
}
