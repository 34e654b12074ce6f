import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * VERP return paths: every message's envelope sender is `bounces+<token>@<BOUNCE_DOMAIN>`, where the token names the
 * email and is signed with the installation's secret. A bounce (or a complaint) that comes back to that address maps to
 * its email without reading anything the remote server wrote; a token we did not sign maps to nothing.
 *
 * The token is base32 (lower case: some servers lower-case local parts) of the email's id (16 bytes) and an 80-bit
 * HMAC-SHA256 tag: 42 characters, so the local part (50) stays within RFC 5321's 64.
 */

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
const PREFIX = 'bounces+';

function base32(bytes: Buffer): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

function unbase32(text: string): Buffer | undefined {
  const bytes: number[] = [];
  let bits = 0;
  let value = 0;
  for (const c of text) {
    const v = ALPHABET.indexOf(c);
    if (v < 0) return undefined;
    value = (value << 5) | v;
    bits += 5;
    if (bits >= 8) {
      bytes.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return Buffer.from(bytes);
}

const tag = (secret: Buffer, id: Buffer) => createHmac('sha256', secret).update('bounce:').update(id).digest().subarray(0, 10);

const uuidBytes = (id: string) => Buffer.from(id.replace(/-/g, ''), 'hex');
const uuidOf = (b: Buffer) => b.toString('hex').replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5');

/** The envelope sender of an email: its bounces come back to Herald's inbound listener. */
export function bounceAddress(secret: Buffer, emailId: string, bounceDomain: string): string {
  const id = uuidBytes(emailId);
  return `${PREFIX}${base32(Buffer.concat([id, tag(secret, id)]))}@${bounceDomain}`;
}

/** The email a bounce address names, or undefined for an address Herald did not sign (any case; any domain). */
export function emailOfBounceAddress(secret: Buffer, address: string): string | undefined {
  const local = address.slice(0, address.lastIndexOf('@')).toLowerCase();
  if (!local.startsWith(PREFIX)) return undefined;
  const raw = unbase32(local.slice(PREFIX.length));
  if (!raw || raw.length !== 26) return undefined;
  const id = raw.subarray(0, 16);
  const given = raw.subarray(16);
  return timingSafeEqual(given, tag(secret, id)) ? uuidOf(id) : undefined;
}
