import { hash, verify, type Algorithm } from '@node-rs/argon2';

/**
 * Passwords, hashed with argon2id through @node-rs/argon2: a maintained binding whose prebuilt binaries are npm
 * packages (optional dependencies per platform), so it installs from the registry alone (the `argon2` package
 * downloads its binary at install time). It hashes on libuv's thread pool: a login never stalls other requests.
 *
 * Parameters: OWASP's Password Storage Cheat Sheet (2025), argon2id with m = 19 MiB, t = 2, p = 1.
 */
// Algorithm is an ambient const enum, which isolatedModules cannot read: 2 is its Argon2id.
const PARAMS = { algorithm: 2 as Algorithm.Argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

/** Shortest password accepted (NIST SP 800-63B: at least 8; no composition rules). */
export const MIN_PASSWORD_LENGTH = 10;
export const MAX_PASSWORD_LENGTH = 256;

export function hashPassword(password: string): Promise<string> {
  return hash(password, PARAMS);
}

/**
 * A hash of nothing anyone knows, verified against when there is no account (or no password) to check: an unknown
 * email costs the same time as a wrong password, so timing does not tell which addresses have accounts.
 */
let dummy: Promise<string> | undefined;

/** Whether `password` matches `stored`; with no stored hash, the same work and false. */
export async function passwordMatches(password: string, stored: string | null | undefined): Promise<boolean> {
  if (!stored) {
    dummy ??= hashPassword(`no account ${Math.random()}`);
    await verify(await dummy, password).catch(() => false);
    return false;
  }
  return verify(stored, password).catch(() => false);
}
