import { Resolver } from 'node:dns/promises';
// Before mailauth: its DKIM and ARC modules then verify with keys parsed once per key (inbound/dkimKeys.ts).
import './dkimKeys';
import { authenticate, type AuthenticateResult } from 'mailauth';
import type { DnsConfig } from '../config';

/**
 * SPF, DKIM, DMARC and ARC of a received message (mailauth 4.x: 5.x needs Node 22), looked up with Herald's resolvers
 * (DNS_SERVERS, its timeout and tries). The results are reported, never acted on: the route decides what a message
 * becomes, and the app what a `fail` means to it.
 */

export type AuthVerdict = 'pass' | 'fail' | 'neutral' | 'none' | 'temperror' | 'permerror' | 'policy' | 'softfail' | 'skipped';

export interface AuthResults {
  spf: { result: AuthVerdict; domain: string | null };
  dkim: { result: AuthVerdict; domain: string; selector: string | null; aligned: boolean }[];
  dmarc: { result: AuthVerdict; domain: string | null; policy: string | null };
  arc: { result: AuthVerdict };
  /** Set when the checks could not run (the message's own fault or DNS): every result is then `temperror`. */
  error?: string;
}

export type Authenticator = (raw: Buffer, session: { ip: string; helo: string; sender: string }) => Promise<AuthResults>;

const verdict = (v: string | undefined): AuthVerdict => (v === 'temperr' ? 'temperror' : (v as AuthVerdict | undefined) ?? 'none');

export function summarise(r: AuthenticateResult): AuthResults {
  return {
    spf: r.spf ? { result: verdict(r.spf.status.result), domain: r.spf.domain ?? null } : { result: 'none', domain: null },
    // mailauth reports an unsigned message as one `none` result without a domain: no signature, an empty list.
    dkim: (r.dkim?.results ?? []).filter((d) => d.signingDomain).slice(0, 20).map((d) => ({ result: verdict(d.status.result), domain: d.signingDomain, selector: d.selector ?? null, aligned: Boolean(d.status.aligned) })),
    dmarc: r.dmarc ? { result: verdict(r.dmarc.status.result), domain: r.dmarc.domain ?? null, policy: r.dmarc.policy ?? null } : { result: 'none', domain: null, policy: null },
    arc: { result: r.arc ? verdict(r.arc.status.result) : 'none' },
  };
}

/** How long an answer (or a "no such name / no such record") is reused, and how many are kept. */
export const DNS_CACHE_MS = 60_000;
export const DNS_CACHE_ENTRIES = 10_000;

type Lookup = (name: string, rr: string) => Promise<string[][] | string[]>;

/**
 * A lookup with a short-lived cache in front: mail comes in from a few senders' domains again and again, and each
 * message asks the same SPF, DKIM key and DMARC records (bench/inbound.ts: the lookups were the larger part of a
 * message's wait). Answers and the definite failures (ENOTFOUND, ENODATA) are kept `ttlMs`, whatever the records' own
 * TTL (Node's resolver does not give TXT records' TTLs); a timeout or a server failure is not kept. A lookup in
 * flight is shared. At most `entries` names; the oldest go first.
 */
export function cachedLookup(lookup: Lookup, ttlMs = DNS_CACHE_MS, entries = DNS_CACHE_ENTRIES, now = () => Date.now()): Lookup {
  const cache = new Map<string, { at: number; answer: Promise<string[][] | string[]> }>();
  return (name, rr) => {
    const key = `${rr} ${name.toLowerCase()}`;
    const hit = cache.get(key);
    if (hit && now() - hit.at < ttlMs) return hit.answer;
    if (hit) cache.delete(key);
    const answer = lookup(name, rr);
    cache.set(key, { at: now(), answer });
    if (cache.size > entries) cache.delete(cache.keys().next().value!);
    answer.catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOTFOUND' && err.code !== 'ENODATA' && cache.get(key)?.answer === answer) cache.delete(key);
    });
    return answer;
  };
}

export function authenticator(dns: DnsConfig, mta: string): Authenticator {
  const resolver = new Resolver({ timeout: dns.timeoutMs, tries: dns.tries });
  if (dns.servers.length) resolver.setServers(dns.servers);
  const resolve = cachedLookup((name, rr) => resolver.resolve(name, rr) as Promise<string[][] | string[]>);
  return async (raw, session) => {
    try {
      return summarise(await authenticate(raw, { ip: session.ip, helo: session.helo, sender: session.sender, mta, resolver: resolve, disableBimi: true }));
    } catch (err) {
      const t: AuthVerdict = 'temperror';
      return { spf: { result: t, domain: null }, dkim: [], dmarc: { result: t, domain: null, policy: null }, arc: { result: t }, error: (err as Error).message.slice(0, 300) };
    }
  };
}
