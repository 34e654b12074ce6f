import { createPrivateKey, generateKeyPair, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import type { Knex } from 'knex';
import { seal, SealedError, unseal } from '../core/sealed';
import { domainOf, domainSuffixes, type DkimSigning } from '../mail/message';

/**
 * DKIM keys of sending domains: an RSA-2048 key pair per domain, the private key encrypted at rest with AES-256-GCM
 * under a key derived (HKDF-SHA256) from the installation secret (SECRET_KEY, or DATA_DIR/secret.key), and the
 * signing options nodemailer puts on a message (`dkim: { domainName, keySelector, privateKey }`).
 * Keys never reach a log: nothing here logs, and errors name the domain only.
 */

const generateKeyPairAsync = promisify(generateKeyPair);

/**
 * The private key is sealed by core/sealed.ts (its layout: version byte, 12-byte IV, 16-byte GCM tag, ciphertext of the
 * PKCS#8 PEM) for this purpose, bound to its domain row: a blob copied onto another domain does not open.
 */
const PURPOSE = 'dkim-private-key/v1';
const boundTo = (projectId: string, domain: string) => `${projectId}/${domain}`;

export interface DkimKeyPair {
  /** The DNS selector: the key is published at `<selector>._domainkey.<domain>`. */
  selector: string;
  /** base64 of the SubjectPublicKeyInfo DER: the `p=` of the DKIM record. */
  publicKey: string;
  /** PKCS#8 PEM. Only ever held in memory; stored encrypted (encryptPrivateKey). */
  privateKey: string;
}

/** Selectors name the month the key was made (`herald202611`), so that a future rotation can publish a second one beside it. */
export function newSelector(now = new Date()): string {
  return `herald${now.getUTCFullYear()}${String(now.getUTCMonth() + 1).padStart(2, '0')}`;
}

/** Generates an RSA-2048 key pair off the event loop (libuv thread pool). */
export async function generateDkimKey(now = new Date()): Promise<DkimKeyPair> {
  const { publicKey, privateKey } = await generateKeyPairAsync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { selector: newSelector(now), publicKey: (publicKey as Buffer).toString('base64'), privateKey: privateKey as string };
}

export function encryptPrivateKey(secret: Buffer, projectId: string, domain: string, privateKeyPem: string): Buffer {
  return seal(secret, PURPOSE, boundTo(projectId, domain), privateKeyPem);
}

export class DkimKeyError extends Error {
  override name = 'DkimKeyError';
}

/** Decrypts a stored key; throws DkimKeyError (naming the domain, never the key) when the secret changed or the blob was altered. */
export function decryptPrivateKey(secret: Buffer, projectId: string, domain: string, blob: Buffer): string {
  try {
    return unseal(secret, PURPOSE, boundTo(projectId, domain), blob);
  } catch (err) {
    if (!(err instanceof SealedError)) throw err;
    throw new DkimKeyError(`the DKIM key of ${domain} cannot be decrypted (was SECRET_KEY or DATA_DIR/secret.key changed?)`);
  }
}

/** nodemailer's per-message DKIM options, with the key parsed (see SigningKey). */
export type DkimOptions = DkimSigning & { domainName: string; keySelector: string; privateKey: KeyObject };

export interface SigningKey {
  /** The sending domain that holds the key (the From domain itself or a parent of it): the signature's `d=`. */
  domain: string;
  selector: string;
  /**
   * Parsed once when the keys are loaded (a batch's worth of emails), not at every signature: given the PEM, each
   * signature parsed it again, and parsing an RSA-2048 PKCS#8 key costs OpenSSL 3 more than the signature (a loop of
   * 300 on this machine: 3.2 ms of CPU a signature with the PEM, 1.2-1.3 with the KeyObject).
   */
  privateKey: KeyObject;
}

/** A decrypted key, parsed; throws DkimKeyError (naming the domain) when it is no private key. */
function parsedKey(domain: string, pem: string): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch {
    throw new DkimKeyError(`the DKIM key of ${domain} cannot be read`);
  }
}


/**
 * The signing keys for a project's From domains, in ONE query: for each From domain, the key of the most specific
 * domain of the project that is it or a parent of it (the same matching as isVerifiedSender). Domains without a key
 * are absent from the map. A key that cannot be decrypted is reported through `onError` and left out, so that the
 * mail goes out unsigned rather than not at all.
 */
export async function loadSigningKeys(
  db: Knex, secret: Buffer, projectId: string, fromDomains: Iterable<string>, onError?: (err: DkimKeyError) => void,
): Promise<Map<string, SigningKey>> {
  const wanted = [...new Set([...fromDomains].map((d) => d.toLowerCase()))];
  const out = new Map<string, SigningKey>();
  if (wanted.length === 0) return out;
  const candidates = [...new Set(wanted.flatMap(domainSuffixes))];
  const rows: { domain: string; dkim_selector: string; dkim_private_key: Buffer }[] = await db('domains')
    .where('project_id', projectId).whereIn('domain', candidates).whereNotNull('dkim_private_key')
    .select('domain', 'dkim_selector', 'dkim_private_key');
  const keys = new Map<string, SigningKey>();
  for (const row of rows) {
    try {
      keys.set(row.domain, { domain: row.domain, selector: row.dkim_selector, privateKey: parsedKey(row.domain, decryptPrivateKey(secret, projectId, row.domain, row.dkim_private_key)) });
    } catch (err) {
      if (!(err instanceof DkimKeyError)) throw err;
      onError?.(err);
    }
  }
  for (const from of wanted) {
    const key = domainSuffixes(from).map((d) => keys.get(d)).find((k) => k !== undefined);
    if (key) out.set(from, key);
  }
  return out;
}

/**
 * The header fields the signature covers: nodemailer's default list (dkim/sign.js, which has List-Id and
 * List-Unsubscribe) plus List-Unsubscribe-Post. RFC 8058 §4 requires both one-click headers in `h=`, and Gmail and
 * Yahoo check it. A field a message does not carry is simply not signed.
 */
export const DKIM_SIGNED_HEADERS = ['From', 'Sender', 'Reply-To', 'Subject', 'Date', 'Message-ID', 'To', 'Cc', 'MIME-Version',
  'Content-Type', 'Content-Transfer-Encoding', 'Content-ID', 'Content-Description', 'Resent-Date', 'Resent-From',
  'Resent-Sender', 'Resent-To', 'Resent-Cc', 'Resent-Message-ID', 'In-Reply-To', 'References', 'List-Id', 'List-Help',
  'List-Unsubscribe', 'List-Unsubscribe-Post', 'List-Subscribe', 'List-Post', 'List-Owner', 'List-Archive', 'OTP-Token'].join(':');

/** The `dkim` option of a message from `fromAddress`, or undefined when its domain has no key. */
export function dkimFor(keys: Map<string, SigningKey>, fromAddress: string): DkimOptions | undefined {
  const key = keys.get(domainOf(fromAddress));
  return key ? { domainName: key.domain, keySelector: key.selector, privateKey: key.privateKey, headerFieldNames: DKIM_SIGNED_HEADERS } : undefined;
}
