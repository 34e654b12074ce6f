import { hash, randomInt, timingSafeEqual } from 'node:crypto';
import type { ApiKeyType } from '../db/models/ApiKey';

/**
 * API keys: `sk_` (secret) or `pk_` (public) followed by 40 base62 characters (~238 bits).
 * The first 16 characters locate the stored row; the SHA-256 of the whole key is compared in constant time.
 * A fast hash is right here: the key is random and long, so there is nothing to brute-force that a slow
 * password hash would protect, and authentication stays one indexed lookup per request.
 */
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const BODY_LENGTH = 40;
const LOOKUP_LENGTH = 16;
const PREFIX: Record<ApiKeyType, string> = { secret: 'sk_', public: 'pk_' };
const KEY_PATTERN = /^(sk|pk)_([A-Za-z0-9]{40})$/;

export interface GeneratedKey {
  key: string;
  type: ApiKeyType;
  lookup: string;
  hash: Buffer;
  hint: string;
}

/** One-shot hash (no Hash object): it runs at every request's authentication. */
export function hashKey(key: string): Buffer {
  return hash('sha256', key, 'buffer');
}

export function generateKey(type: ApiKeyType): GeneratedKey {
  let body = '';
  for (let i = 0; i < BODY_LENGTH; i++) body += ALPHABET[randomInt(ALPHABET.length)];
  const key = PREFIX[type] + body;
  return { key, type, lookup: body.slice(0, LOOKUP_LENGTH), hash: hashKey(key), hint: body.slice(-4) };
}

/** Splits a presented key into its type and lookup part, or null when it is not shaped like a Herald key. */
export function parseKey(key: string): { type: ApiKeyType; lookup: string } | null {
  const m = KEY_PATTERN.exec(key);
  if (!m) return null;
  return { type: m[1] === 'sk' ? 'secret' : 'public', lookup: m[2]!.slice(0, LOOKUP_LENGTH) };
}

export function keyMatches(key: string, storedHash: Buffer): boolean {
  const presented = hashKey(key);
  return presented.length === storedHash.length && timingSafeEqual(presented, storedHash);
}

/**
 * Whether a key limited to `domains` may send From `email`: its domain is one of them or a subdomain of one
 * (`mail.example.com` under `example.com`). No list: any (verified) domain of the project.
 */
export function mayUseFrom(domains: readonly string[] | null | undefined, email: string): boolean {
  if (!domains || domains.length === 0) return true;
  const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
  return domains.some((d) => domain === d || domain.endsWith(`.${d}`));
}
