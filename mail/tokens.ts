import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Signed tokens for links in mail (unsubscribe, open pixel, click redirect): `<base64url(payload)>.<base64url(tag)>`,
 * the tag an HMAC-SHA256 of `<purpose>:<base64url(payload)>` with the installation secret (SECRET_KEY), cut to 20
 * bytes. The purpose keeps one kind of token from being accepted as another. Without the key a token can be neither
 * forged nor altered; a token of another installation (another key) does not verify.
 */
function tag(secret: Buffer, purpose: string, encoded: string): Buffer {
  return createHmac('sha256', secret).update(`${purpose}:${encoded}`).digest().subarray(0, 20);
}

export function signToken(secret: Buffer, purpose: string, payload: Buffer): string {
  const encoded = payload.toString('base64url');
  return `${encoded}.${tag(secret, purpose, encoded).toString('base64url')}`;
}

/**
 * The payload of a token signed for `purpose` with `secret`; null for anything else. A token is accepted only in the
 * one encoding signToken writes: Node's base64url decoder skips what it does not know (`=`, `!`, spaces), reads the
 * `+`/`/` alphabet too and ignores the unused low bits of the last character, so several spellings decode to the same
 * bytes. Each part must re-encode to exactly itself, or the token is refused (and nothing is recorded for it).
 */
export function verifyToken(secret: Buffer, purpose: string, token: string): Buffer | null {
  const [encoded, sig, extra] = token.split('.');
  if (!encoded || !sig || extra !== undefined) return null;
  const given = Buffer.from(sig, 'base64url');
  if (given.toString('base64url') !== sig) return null;
  const expected = tag(secret, purpose, encoded);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  const payload = Buffer.from(encoded, 'base64url');
  // The tag covers `encoded` as given, so the payload's own spelling is checked too (a forged alias cannot verify,
  // but one canonical form per payload keeps every token comparable byte for byte).
  if (payload.toString('base64url') !== encoded) return null;
  return payload;
}
