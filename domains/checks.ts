import type { Knex } from 'knex';
import type { DnsConfig, ReturnPath } from '../config';
import type { Domain } from '../db/models/Domain';
import { domainsAfter } from '../db/queries/domains';
import { ensureDomainKey, saveCheck } from './rows';
import type { Logger } from '../logging/logger';
import type { Engine } from '../engine/types';
import { DnsClient } from '../verify/dns';
import { checkDomainRecords } from './records';
import { workflowId } from '../workflows/registry';

/* A sending domain's DNS check, and the schedule of the re-checks: called by the API (POST /domains/:id/verify) and by
 * the re-check workflow's activities. */

/** Domain checks ask DNS every time (no cache): a record that was just published or just removed counts at once. */
export function domainDnsClient(config: DnsConfig): DnsClient {
  return new DnsClient({ servers: config.servers, timeoutMs: config.timeoutMs, tries: config.tries, cache: false });
}

/** Looks one domain's records up in DNS and stores the outcome; undefined when the domain was deleted meanwhile. */
export async function checkDomain(
  db: Knex, dns: DnsClient, secret: Buffer, domain: Domain,
  opts: { now?: Date; returnPath?: ReturnPath; save?: (write: (trx: Knex) => Promise<Domain | undefined>) => Promise<Domain | undefined> } = {},
): Promise<Domain | undefined> {
  const keyed = await ensureDomainKey(db, secret, domain);
  // DNS first, outside any transaction (it may take seconds); then the outcome is stored, through `save` when the
  // caller writes it in a transaction of its own (the API's check is audited: domains/domains.ts).
  const found = await checkDomainRecords(dns, keyed.domain, keyed.dkimSelector!, keyed.dkimPublicKey!, opts.returnPath);
  const write = (trx: Knex) => saveCheck(trx, keyed.projectId, keyed.id, found, opts.now ?? new Date());
  return opts.save ? opts.save(write) : write(db);
}

/** Concurrent DNS checks within one batch of the re-check. */
const CHECK_CONCURRENCY = 10;

/** One batch of the scheduled re-check: the next `size` domains (all projects, in id order) after `after`, against DNS. */
export async function checkDomainBatch(
  deps: { knex: Knex; dns: DnsClient; secret: Buffer; log: Logger; returnPath?: ReturnPath },
  ref: { after: string | null; size: number },
): Promise<{ checked: number; verified: number; failed: number; last: string | null; done: boolean }> {
  const domains = await domainsAfter(deps.knex, ref.after, ref.size);
  let verified = 0;
  let failed = 0;
  for (let i = 0; i < domains.length; i += CHECK_CONCURRENCY) {
    const results = await Promise.all(domains.slice(i, i + CHECK_CONCURRENCY).map(async (d) => {
      const after = await checkDomain(deps.knex, deps.dns, deps.secret, d, { returnPath: deps.returnPath });
      if (after && after.status !== d.status) deps.log.info({ projectId: d.projectId, domainId: d.id, domain: d.domain, from: d.status, to: after.status }, 'sending domain status changed');
      return after;
    }));
    verified += results.filter((r) => r?.status === 'VERIFIED').length;
    failed += results.filter((r) => r?.status === 'FAILED').length;
  }
  return { checked: domains.length, verified, failed, last: domains.at(-1)?.id ?? ref.after, done: domains.length < ref.size };
}

/** The start of the next slot of the re-check schedule after `afterMs`: slots are whole multiples of the interval since the epoch. */
export function nextCheckSlot(afterMs: number, intervalMs: number): number {
  return (Math.floor(afterMs / intervalMs) + 1) * intervalMs;
}

/**
 * Makes sure that the domain re-checks run every `intervalMs`. On an engine with schedules (Temporal) that is one
 * Schedule, `domain-checks`, created or updated here: a failed run does not stop the next. Elsewhere (DBOS) it is the
 * run of the next slot (after now, and after `after` when given): each run schedules its successor, and the run's id is
 * its slot (`domain-checks-<ISO time>`), so every caller — the previous run, any number of processes — asks for the same
 * one and the engine starts it once. Answers the next slot (on Temporal: when the schedule next fires, roughly).
 */
export async function scheduleDomainChecks(engine: Engine, intervalMs: number, after?: number, now = Date.now()): Promise<number> {
  const slot = nextCheckSlot(Math.max(now, after ?? 0), intervalMs);
  if (engine.schedule) {
    await engine.schedule('checkDomains', {}, { id: DOMAIN_CHECKS_SCHEDULE, everyMs: intervalMs, summary: `DNS re-check of every sending domain, every ${intervalMs / 60_000} minute(s)` });
    return slot;
  }
  await engine.start('checkDomains', { slot }, { id: workflowId.checkDomains({ slot }), startAt: new Date(slot) });
  return slot;
}

/** The id of the Temporal Schedule of the domain re-checks (and of the workflows it starts, with their start time appended). */
export const DOMAIN_CHECKS_SCHEDULE = 'domain-checks';

