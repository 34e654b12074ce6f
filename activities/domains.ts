import type { Knex } from 'knex';
import { loadDnsConfig, type DnsConfig, type ReturnPath } from '../config';
import { checkDomainBatch, domainDnsClient, scheduleDomainChecks } from '../domains/checks';
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
  /** The bounce domain's records, checked with every domain's. */
  returnPath?: ReturnPath;
}

export function domainActivities(deps: DomainDeps) {
  const config = () => deps.dns ?? loadDnsConfig();
  let dns: DnsClient | undefined;
  return {
    /** Re-checks the next `size` domains (all projects, in id order) against DNS. */
    async checkDomainBatch(ref: { after: string | null; size: number }): Promise<DomainBatchResult> {
      dns ??= domainDnsClient(config());
      return checkDomainBatch({ knex: deps.knex, dns, secret: deps.secret, log: deps.log, returnPath: deps.returnPath }, ref);
    },

    /** Schedules the run after the slot `after` (the current run's own slot). */
    async scheduleDomainChecks(ref: { after: number }): Promise<number> {
      return scheduleDomainChecks(deps.engine, config().domainCheckIntervalMinutes * 60_000, ref.after);
    },
  };
}
