import { Resolver } from 'node:dns/promises';
import { LRUCache } from 'lru-cache';
import type { DnsConfig } from '../config';

/**
 * DNS lookups for sending-domain verification and POST /v1/verify, through node:dns (c-ares) with the configured
 * resolvers (DNS_SERVERS) and timeouts. Answers are normalised into a small union: what was found, that the name has
 * no records of that type (NODATA), that the name does not exist (NXDOMAIN), or that no answer came (TIMEOUT / ERROR).
 */

export type RecordType = 'A' | 'AAAA' | 'MX' | 'TXT';

export type DnsAnswer =
  /** A/AAAA: addresses; MX: exchange host names ('' for a null MX, RFC 7505); TXT: each record's strings joined. */
  | { status: 'FOUND'; records: string[] }
  | { status: 'NODATA' }
  | { status: 'NXDOMAIN' }
  | { status: 'TIMEOUT' }
  | { status: 'ERROR'; code: string };

export interface DnsCacheOptions {
  /** Most answers kept (least recently used go first). */
  max?: number;
  /** How long an answer with records is kept. */
  positiveTtlMs?: number;
  /** How long NXDOMAIN / NODATA is kept. Timeouts and errors are never cached. */
  negativeTtlMs?: number;
}

export interface DnsClientOptions extends Pick<DnsConfig, 'servers' | 'timeoutMs' | 'tries'> {
  /** Cache answers (POST /v1/verify). Domain verification asks DNS every time: false. */
  cache?: DnsCacheOptions | false;
}

const TIMEOUT: DnsAnswer = { status: 'TIMEOUT' };

function toAnswer(err: unknown): DnsAnswer {
  const code = (err as NodeJS.ErrnoException).code ?? 'EUNKNOWN';
  if (code === 'ENOTFOUND') return { status: 'NXDOMAIN' };
  if (code === 'ENODATA') return { status: 'NODATA' };
  if (code === 'ETIMEOUT') return TIMEOUT;
  return { status: 'ERROR', code };
}

export class DnsClient {
  private readonly resolver: Resolver;
  private readonly cache: LRUCache<string, DnsAnswer> | undefined;
  private readonly positiveTtl: number;
  private readonly negativeTtl: number;
  /** Lookups in flight: concurrent asks for the same name and type share one query. */
  private readonly inflight = new Map<string, Promise<DnsAnswer>>();

  constructor(opts: DnsClientOptions) {
    this.resolver = new Resolver({ timeout: opts.timeoutMs, tries: opts.tries });
    if (opts.servers.length) this.resolver.setServers(opts.servers);
    const cache = opts.cache === false ? undefined : (opts.cache ?? {});
    this.positiveTtl = cache?.positiveTtlMs ?? 5 * 60_000;
    this.negativeTtl = cache?.negativeTtlMs ?? 60_000;
    this.cache = cache ? new LRUCache<string, DnsAnswer>({ max: cache.max ?? 10_000, ttl: this.positiveTtl }) : undefined;
  }

  /**
   * One lookup. With `deadline` (epoch ms), an answer that has not come by then is TIMEOUT for this caller; the query
   * itself runs on (bounded by timeout × tries) and its answer still fills the cache for the next caller.
   */
  async lookup(type: RecordType, name: string, deadline?: number): Promise<DnsAnswer> {
    const key = `${type} ${name.toLowerCase()}`;
    const cached = this.cache?.get(key);
    if (cached) return cached;
    let pending = this.inflight.get(key);
    if (!pending) {
      pending = this.query(type, name).then((answer) => {
        if (answer.status === 'FOUND') this.cache?.set(key, answer, { ttl: this.positiveTtl });
        else if (answer.status === 'NXDOMAIN' || answer.status === 'NODATA') this.cache?.set(key, answer, { ttl: this.negativeTtl });
        return answer;
      }).finally(() => this.inflight.delete(key));
      this.inflight.set(key, pending);
    }
    if (deadline === undefined) return pending;
    const left = deadline - Date.now();
    if (left <= 0) return TIMEOUT;
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<DnsAnswer>((resolve) => { timer = setTimeout(() => resolve(TIMEOUT), left); });
    try {
      return await Promise.race([pending, expired]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async query(type: RecordType, name: string): Promise<DnsAnswer> {
    try {
      switch (type) {
        case 'A': return found(await this.resolver.resolve4(name));
        case 'AAAA': return found(await this.resolver.resolve6(name));
        case 'MX': return found((await this.resolver.resolveMx(name)).map((mx) => (mx.exchange === '.' ? '' : mx.exchange.toLowerCase())));
        case 'TXT': return found((await this.resolver.resolveTxt(name)).map((chunks) => chunks.join('')));
      }
    } catch (err) {
      return toAnswer(err);
    }
  }
}

function found(records: string[]): DnsAnswer {
  return records.length ? { status: 'FOUND', records } : { status: 'NODATA' };
}
