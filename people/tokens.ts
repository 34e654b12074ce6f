import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * The secrets people hold: a session's cookie value and the tokens in invitation, password-reset and setup links.
 * 32 random bytes (base64url); only their SHA-256 is stored, so a database dump opens no session and accepts no link.
 * Found by the hash's unique index, then compared in constant time.
 */
export function newToken(): { token: string; hash: Buffer } {
  const token = randomBytes(32).toString('base64url');
  return { token, hash: tokenHash(token) };
}

export function tokenHash(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** A presented token shaped like ours (43 base64url characters); anything else is refused before any lookup. */
export const isTokenShaped = (token: string): boolean => /^[A-Za-z0-9_-]{43}$/.test(token);

export function tokenMatches(token: string, stored: Buffer): boolean {
  const presented = tokenHash(token);
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}
