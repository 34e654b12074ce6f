import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * VERP return paths: every message's envelope sender is `bounces+<token>@<BOUNCE_DOMAIN>`, where the token names the
 * email and is signed with the installation's secret. A bounce (or a complaint) that comes back to that address maps to
 * its email without reading anything the remote server wrote; a token we did not sign maps to nothing.
 *
 * The token is base32 (lower case: some servers lower-case local parts; no other case is accepted back) of the email's id (16 bytes) and an 80-bit
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

/** What a token is for: a token made for one purpose names nothing for another (the tag covers it). */
export type TokenPurpose = 'bounce' | 'reply';

const tag = (secret: Buffer, purpose: TokenPurpose, id: Buffer) => createHmac('sha256', secret).update(`${purpose}:`).update(id).digest().subarray(0, 10);

const uuidBytes = (id: string) => Buffer.from(id.replace(/-/g, ''), 'hex');
const uuidOf = (b: Buffer) => b.toString('hex').replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5');

/** An email's signed token for a purpose (42 characters of lower-case base32). */
export function emailToken(secret: Buffer, emailId: string, purpose: TokenPurpose): string {
  const id = uuidBytes(emailId);
  return base32(Buffer.concat([id, tag(secret, purpose, id)]));
}

/** The length of a token: 26 bytes (id and tag) in base32, the last character carrying 3 bits and 2 zero bits. */
export const TOKEN_LENGTH = 42;

/**
 * The email a token names, or undefined for any text that is not exactly a token Herald made for this purpose: 42
 * characters as `emailToken` spells them (decoded and encoded again, the same text), signed with this secret.
 */
export function emailOfToken(secret: Buffer, token: string, purpose: TokenPurpose): string | undefined {
  if (token.length !== TOKEN_LENGTH) return undefined;
  const raw = unbase32(token);
  if (!raw || raw.length !== 26 || base32(raw) !== token) return undefined;
  const id = raw.subarray(0, 16);
  return timingSafeEqual(raw.subarray(16), tag(secret, purpose, id)) ? uuidOf(id) : undefined;
}

/** The envelope sender of an email: its bounces come back to Herald's inbound listener. */
export function bounceAddress(secret: Buffer, emailId: string, bounceDomain: string): string {
  return `${PREFIX}${emailToken(secret, emailId, 'bounce')}@${bounceDomain}`;
}

/**
 * The email a bounce address names, or undefined for any address that is not exactly one Herald wrote: the prefix and
 * the token as `bounceAddress` spells them (lower case, 42 characters, the unused bits of the last one zero: the token
 * decoded and encoded again must give the same text), at `bounceDomain` (any case: domains are case-insensitive), and
 * signed with this installation's secret. No other spelling names the email, so a report counts only through the one
 * address the email was sent with.
 */
export function emailOfBounceAddress(secret: Buffer, address: string, bounceDomain: string | undefined): string | undefined {
  if (!bounceDomain) return undefined;
  const at = address.lastIndexOf('@');
  if (at < 0 || address.slice(at + 1).toLowerCase() !== bounceDomain.toLowerCase()) return undefined;
  const local = address.slice(0, at);
  if (!local.startsWith(PREFIX)) return undefined;
  return emailOfToken(secret, local.slice(PREFIX.length), 'bounce');
}
