import { createPublicKey, type KeyObject } from 'node:crypto';

/**
 * The public keys of DKIM signatures and ARC seals, parsed once per key instead of once per message.
 *
 * mailauth 4.13.3 (pinned in package.json) turns a key's TXT record into a key for every signature it checks: its
 * `getPublicKey` (lib/tools.js) builds a PEM, parses it (`crypto.createPublicKey`), reads its type and length, exports
 * it to PEM again, and `crypto.verify` then parses that PEM once more. bench/inbound.ts (BENCH_CPU_PROF=1) put that at
 * ~0.5 ms of the listener's CPU per 10 KB message, a sixth of mailauth's whole cost, for the same few keys again and
 * again.
 *
 * The key is a pure function of its record: this wraps `getPublicKey` so that the record is still asked of the
 * resolver for every signature (Herald's resolver is the 60 s cache of inbound/auth.ts, so a key that is rotated or
 * withdrawn in DNS is seen as soon as that cache is), and the checks mailauth makes of it (version, type, length
 * against the minimum) and the parsed key are reused whenever the record's text is the same as one already checked.
 * What is reused is a KeyObject, which `crypto.verify` takes without parsing; its `toString()` is the PEM that
 * mailauth puts in its results. A record that fails a check is not kept: it is checked again next time, as before.
 *
 * mailauth has no option for this: its DKIM verifier and ARC modules take `getPublicKey` from lib/tools when they
 * are loaded, so the export is replaced here before they are (inbound/auth.ts imports this module before
 * `mailauth`). `keyCache.installed` says whether that happened in this process (false if mailauth was loaded first,
 * then it simply works as it always did); test/inbound/dkimKeys.test.ts checks that the keys are reused.
 */

type Resolver = (name: string, rr: string) => Promise<unknown>;
interface PublicKeyResult {
  publicKey: string | KeyObject;
  rr: string;
  modulusLength: number;
}
type GetPublicKey = (type: string, name: string, minBitLength: number | undefined, resolver?: Resolver) => Promise<PublicKeyResult>;

/** Checked keys kept (the oldest go first): a key is ~1 KB, and mail comes from far fewer signing keys than this. */
export const KEY_CACHE_ENTRIES = 1000;

// Loaded with require: these are mailauth's internals (no types), and the order of loading is the point.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const tools = require('mailauth/lib/tools') as { getPublicKey: GetPublicKey };
const loadedBefore = ['mailauth/lib/dkim/dkim-verifier', 'mailauth/lib/arc'].some((m) => require.cache[require.resolve(m)] !== undefined);

export const keyCache = { installed: false, parsed: 0, reused: 0 };

/** The record's text as mailauth reads it: the first record's strings joined, without whitespace. */
const recordText = (list: unknown): string => (Array.isArray(list) ? ([] as unknown[]).concat(list[0] ?? []).join('').replace(/\s+/g, '') : '');

export function cachingGetPublicKey(original: GetPublicKey, entries = KEY_CACHE_ENTRIES): GetPublicKey {
  const checked = new Map<string, PublicKeyResult>();
  return async (type, name, minBitLength, resolver) => {
    if (!resolver) return original(type, name, minBitLength, resolver); // mailauth's own resolver: as it is
    const list = await resolver(name, 'TXT');
    const rr = recordText(list);
    const key = `${type}\n${minBitLength ?? ''}\n${rr}`;
    const hit = rr ? checked.get(key) : undefined;
    if (hit) {
      keyCache.reused++;
      return hit;
    }
    // The same checks as ever, on the answer just got (DNS is not asked twice).
    keyCache.parsed++;
    const res = await original(type, name, minBitLength, async () => list);
    if (!rr || typeof res.publicKey !== 'string') return res;
    const pem = res.publicKey;
    const object = createPublicKey(pem);
    Object.defineProperty(object, 'toString', { value: () => pem });
    const kept = { publicKey: object, rr: res.rr, modulusLength: res.modulusLength };
    checked.set(key, kept);
    if (checked.size > entries) checked.delete(checked.keys().next().value!);
    return kept;
  };
}

if (!loadedBefore) {
  tools.getPublicKey = cachingGetPublicKey(tools.getPublicKey);
  keyCache.installed = true;
}
