import type { Knex } from 'knex';
import type { DnsConfig, ReturnPath } from '../config';
import { conflict, notFound } from '../core/errors';
import { isUuid } from '../core/values';
import type { Domain } from '../db/models/Domain';
import type { Listed, PageRequest } from '../db/pages';
import * as rows from '../db/queries/domains';
import type { Engine } from '../engine/types';
import type { Logger } from '../logging/logger';
import type { DnsClient } from '../verify/dns';
import { checkDomain, domainDnsClient, scheduleDomainChecks } from './checks';
import { createDomain, ensureDomainKey } from './rows';
import { audited, type Actor } from '../audit/log';

/**
 * A project's sending domains (spec 4.9): added with a fresh DKIM key, checked in DNS on demand and on a schedule.
 * Every call is scoped to the project; another project's domain is not found.
 */
export interface Domains {
  list(projectId: string, filter: { status?: Domain['status'] }, page: PageRequest): Promise<Listed<Domain>>;
  get(projectId: string, id: string): Promise<Domain>;
  /** Adds a PENDING domain; 409 when the project already has it. Starts the re-check schedule. */
  create(projectId: string, domain: string, actor: Actor): Promise<Domain>;
  remove(projectId: string, id: string, actor: Actor): Promise<void>;
  /** Checks the domain's records in DNS now and stores the outcome. */
  verify(projectId: string, id: string, actor: Actor): Promise<Domain>;
}

export interface DomainDeps {
  knex: Knex;
  engine: Engine;
  log: Logger;
  /** Installation secret: DKIM private keys are encrypted with it. */
  secret: Buffer;
  dns: DnsConfig;
  /** The bounce domain's records, checked with each domain's (config returnPathOf). */
  returnPath?: ReturnPath;
}

export function domainService({ knex, engine, log, secret, dns: dnsConfig, returnPath }: DomainDeps): Domains {
  const dns: DnsClient = domainDnsClient(dnsConfig);
  const intervalMs = dnsConfig.domainCheckIntervalMinutes * 60_000;
  // Rows from before DKIM keys (or added by the operator's tools) get their key when first shown.
  const keyed = (d: Domain) => ensureDomainKey(knex, secret, d);
  const find = async (projectId: string, id: string): Promise<Domain> => {
    const d = isUuid(id) ? await rows.getDomain(knex, projectId, id) : undefined;
    if (!d) throw notFound('Domain');
    return d;
  };
  /** The scheduled re-check is started (idempotently) whenever a domain is added or checked; a failure is retried then. */
  const schedule = async () => {
    try {
      await scheduleDomainChecks(engine, intervalMs);
    } catch (err) {
      log.warn({ err }, 'could not schedule the domain re-check; the next domain added or checked tries again');
    }
  };

  return {
    async list(projectId, filter, page) {
      const listed = await rows.listDomains(knex, projectId, filter, page);
      return { ...listed, rows: await Promise.all(listed.rows.map(keyed)) };
    },
    get: async (projectId, id) => keyed(await find(projectId, id)),
    async create(projectId, domain, actor) {
      const row = await audited(knex, projectId, actor, (d: Domain) => ({ operation: 'createDomain', resourceType: 'domain', resourceId: d.id, details: { domain: d.domain } }), async (trx) => {
        const made = await createDomain(trx, secret, projectId, domain);
        if (!made) throw conflict(`The project already has the domain ${domain}`, 'GET /domains lists it with its records; POST /domains/:id/verify checks it again.');
        return made;
      });
      await schedule();
      return row;
    },
    async remove(projectId, id, actor) {
      if (!isUuid(id)) throw notFound('Domain');
      await audited(knex, projectId, actor, { operation: 'deleteDomain', resourceType: 'domain', resourceId: id }, async (trx) => {
        if (!(await rows.deleteDomain(trx, projectId, id))) throw notFound('Domain');
      });
    },
    async verify(projectId, id, actor) {
      // The DNS lookups run before the transaction; the stored outcome and its audit entry commit together.
      const checked = await checkDomain(knex, dns, secret, await find(projectId, id), {
        returnPath,
        save: (write) => audited(knex, projectId, actor, (d: Domain | undefined) => ({ operation: 'verifyDomain', resourceType: 'domain', resourceId: id, details: { status: d?.status ?? null } }), async (trx) => {
          const d = await write(trx);
          if (!d) throw notFound('Domain'); // deleted meanwhile: nothing changed, nothing recorded
          return d;
        }),
      });
      if (!checked) throw notFound('Domain');
      await schedule();
      return checked;
    },
  };
}
