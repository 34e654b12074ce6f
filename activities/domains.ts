import type { Knex } from 'knex';
import { loadDnsConfig, type DnsConfig } from '../config';
import { domainsAfter } from '../db/queries/domains';
import { checkDomain, domainDnsClient, scheduleDomainChecks } from '../domains/checks';
import type { Engine } from '../engine/types';
import type { Logger } from '../logging/logger';
import type { DnsClient } from '../verify/dns';
import type { DomainBatchResult } from '../workflows/types';

export interface DomainDeps {
  knex: Knex;
  engine: Engine;
  log: Logger;
  /** Encrypts the DKIM keys that rows from before DKIM keys get on their first check. */
  secret: Buffer;
  /** DNS_SERVERS, timeouts and the re-check interval; read from the environment when not given. */
  dns?: DnsConfig;
}

/** Concurrent DNS checks within one batch. */
const CHECK_CONCURRENCY = 10;

export function domainActivities(deps: DomainDeps) {
  const config = () => deps.dns ?? loadDnsConfig();
  let dns: DnsClient | undefined;
  return {
    /** Re-checks the next `size` domains (all projects, in id order) against DNS. */
    async checkDomainBatch(ref: { after: string | null; size: number }): Promise<DomainBatchResult> {
      dns ??= domainDnsClient(config());
      const client = dns;
      const domains = await domainsAfter(deps.knex, ref.after, ref.size);
      let verified = 0;
      let failed = 0;
      for (let i = 0; i < domains.length; i += CHECK_CONCURRENCY) {
        const results = await Promise.all(domains.slice(i, i + CHECK_CONCURRENCY).map(async (d) => {
          const after = await checkDomain(deps.knex, client, deps.secret, d);
          if (after && after.status !== d.status) deps.log.info({ projectId: d.projectId, domainId: d.id, domain: d.domain, from: d.status, to: after.status }, 'sending domain status changed');
          return after;
        }));
        verified += results.filter((r) => r?.status === 'VERIFIED').length;
        failed += results.filter((r) => r?.status === 'FAILED').length;
      }
      return { checked: domains.length, verified, failed, last: domains.at(-1)?.id ?? ref.after, done: domains.length < ref.size };
    },

    /** Schedules the run after the slot `after` (the current run's own slot). */
    async scheduleDomainChecks(ref: { after: number }): Promise<number> {
      return scheduleDomainChecks(deps.engine, config().domainCheckIntervalMinutes * 60_000, ref.after);
    },
  };
}
