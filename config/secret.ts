import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from './index';

/**
 * The installation's secret (unsubscribe-link signatures; later the encryption key of DKIM private keys).
 * SECRET_KEY when set — required when several machines must agree, as in the cluster — otherwise a random key
 * generated once into DATA_DIR/secret.key (mode 0600) and reused on every start.
 */
export function loadSecret(config: Pick<Config, 'secretKey' | 'dataDir'>): Buffer {
  if (config.secretKey) return Buffer.from(config.secretKey, 'utf8');
  const file = path.join(config.dataDir, 'secret.key');
  fs.mkdirSync(config.dataDir, { recursive: true });
  try {
    fs.writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'utf8');
}
