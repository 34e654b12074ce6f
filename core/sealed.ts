import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Secrets stored at rest, sealed with the installation's secret (config/secret.ts): AES-256-GCM under a key derived
 * (HKDF-SHA256) for one purpose, with associated data that binds the ciphertext to its row, so that a blob copied onto
 * another row, or read for another purpose, does not open. The one construction for every sealed column: the DKIM
 * private keys (domains/dkim.ts) and the webhook secrets (webhooks/secrets.ts). Layout: version byte, 12-byte IV,
 * 16-byte tag, ciphertext.
 */
const VERSION = 1;

const keyFor = (secret: Buffer, purpose: string) => Buffer.from(hkdfSync('sha256', secret, 'herald', purpose, 32));

export function seal(secret: Buffer, purpose: string, boundTo: string, plaintext: string): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyFor(secret, purpose), iv);
  cipher.setAAD(Buffer.from(boundTo, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), ciphertext]);
}

export class SealedError extends Error {
  override name = 'SealedError';
}

/** Opens a sealed blob; a SealedError (naming no secret) when the installation secret changed or the blob was altered. */
export function unseal(secret: Buffer, purpose: string, boundTo: string, blob: Buffer): string {
  try {
    if (blob[0] !== VERSION) throw new Error('unknown format');
    const decipher = createDecipheriv('aes-256-gcm', keyFor(secret, purpose), blob.subarray(1, 13));
    decipher.setAAD(Buffer.from(boundTo, 'utf8'));
    decipher.setAuthTag(blob.subarray(13, 29));
    return Buffer.concat([decipher.update(blob.subarray(29)), decipher.final()]).toString('utf8');
  } catch {
    throw new SealedError(`a stored ${purpose} cannot be decrypted (was SECRET_KEY or DATA_DIR/secret.key changed?)`);
  }
}
