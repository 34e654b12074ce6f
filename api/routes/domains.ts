import type Router from '@koa/router';
import type { Knex } from 'knex';
import { checkDomain, domainDnsClient, scheduleDomainChecks } from '../../domains/checks';
import type { DnsConfig } from '../../config';
import type { Domain } from '../../db/models/Domain';
import { createDomain, deleteDomain, domainListQueries, ensureDomainKey, getDomain } from '../../db/queries/domains';
import type { Engine } from '../../engine/types';
import type { Logger } from '../../logging/logger';
import { domainRecords, type DomainRecord } from '../../verify/domainRecords';
import { conflict, notFound } from '../errors';
import type { AuthState } from '../middleware/auth';
import { isUuid } from '../../core/values';
import { decodeCursor, toPage } from '../pagination';
import { createDomainSchema, listDomainsQuerySchema, type CreateDomainBody, type ListDomainsQuery } from '../schemas/domains';
import { validateBody, validateQuery } from '../validate';

export interface DomainJson {
  id: string;
  domain: string;
  status: Domain['status'];
  records: DomainRecord[];
  createdAt: string;
  verifiedAt: string | null;
  /** When DNS was last asked (null before the first check). */
  checkedAt: string | null;
}

export function domainJson(d: Domain): DomainJson {
  return {
    id: d.id,
    domain: d.domain,
    status: d.status,
    records: domainRecords(d.domain, d.dkimSelector!, d.dkimPublicKey!, d.records ?? {}),
    createdAt: d.createdAt.toISOString(),
    verifiedAt: d.verifiedAt?.toISOString() ?? null,
    checkedAt: d.checkedAt?.toISOString() ?? null,
  };
}

export interface DomainRouteDeps {
  knex: Knex;
  engine: Engine;
  log: Logger;
  secret: Buffer;
  dns: DnsConfig;
}

export function domainRoutes(router: Router, deps: DomainRouteDeps): void {
  const { knex, secret } = deps;
  const dns = domainDnsClient(deps.dns);
  const intervalMs = deps.dns.domainCheckIntervalMinutes * 60_000;
  // Rows from before DKIM keys (or added by the operator's tools) get their key when first shown.
  const keyed = (d: Domain) => ensureDomainKey(knex, secret, d);

  /** The scheduled re-check is started (idempotently) whenever a domain is added or checked; a failure is retried then. */
  const schedule = async () => {
    try {
      await scheduleDomainChecks(deps.engine, intervalMs);
    } catch (err) {
      deps.log.warn({ err }, 'could not schedule the domain re-check; the next domain added or checked tries again');
    }
  };

  router.get('/domains', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const q = validateQuery<ListDomainsQuery>(ctx, listDomainsQuerySchema);
    const { page, count } = domainListQueries(knex, projectId, q, q.limit, decodeCursor(q.cursor));
    const [rows, total] = await Promise.all([page, count]);
    const items = await Promise.all(rows.map(keyed));
    ctx.body = { success: true, data: toPage(items, q.limit, total, domainJson) };
  });

  router.post('/domains', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const body = validateBody<CreateDomainBody>(ctx, createDomainSchema);
    const row = await createDomain(knex, secret, projectId, body.domain);
    if (!row) throw conflict(`The project already has the domain ${body.domain}`, 'GET /domains lists it with its records; POST /domains/:id/verify checks it again.');
    await schedule();
    ctx.status = 201;
    ctx.body = { success: true, data: domainJson(row) };
  });

  router.get('/domains/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const id = ctx.params.id!;
    const d = isUuid(id) ? await getDomain(knex, projectId, id) : undefined;
    if (!d) throw notFound('Domain');
    ctx.body = { success: true, data: domainJson(await keyed(d)) };
  });

  router.delete('/domains/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const id = ctx.params.id!;
    if (!isUuid(id) || !(await deleteDomain(knex, projectId, id))) throw notFound('Domain');
    ctx.status = 204;
  });

  /** Checks the domain's records in DNS now and answers the outcome. */
  router.post('/domains/:id/verify', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const id = ctx.params.id!;
    const d = isUuid(id) ? await getDomain(knex, projectId, id) : undefined;
    if (!d) throw notFound('Domain');
    const checked = await checkDomain(knex, dns, secret, d);
    if (!checked) throw notFound('Domain'); // deleted meanwhile
    await schedule();
    ctx.body = { success: true, data: domainJson(checked) };
  });
}
