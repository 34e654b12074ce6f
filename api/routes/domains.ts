import type Router from '@koa/router';
import type { Domain } from '../../db/models/Domain';
import type { Domains } from '../../domains/domains';
import type { ReturnPath } from '../../config';
import { domainRecords, type DomainRecord } from '../../domains/records';
import type { AuthState } from '../middleware/auth';
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

export function domainJson(d: Domain, returnPath?: ReturnPath): DomainJson {
  return {
    id: d.id,
    domain: d.domain,
    status: d.status,
    records: domainRecords(d.domain, d.dkimSelector!, d.dkimPublicKey!, d.records ?? {}, returnPath),
    createdAt: d.createdAt.toISOString(),
    verifiedAt: d.verifiedAt?.toISOString() ?? null,
    checkedAt: d.checkedAt?.toISOString() ?? null,
  };
}

/** Spec 4.9 (domains/domains.ts). */
export function domainRoutes(router: Router, domains: Domains, returnPath?: ReturnPath): void {
  const json = (d: Domain) => domainJson(d, returnPath);
  router.get('/domains', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const q = validateQuery<ListDomainsQuery>(ctx, listDomainsQuerySchema);
    const { rows, total } = await domains.list(projectId, { status: q.status }, { limit: q.limit, afterId: decodeCursor(q.cursor) });
    ctx.body = { success: true, data: toPage(rows, q.limit, total, json) };
  });

  router.post('/domains', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const body = validateBody<CreateDomainBody>(ctx, createDomainSchema);
    ctx.status = 201;
    ctx.body = { success: true, data: json(await domains.create(projectId, body.domain)) };
  });

  router.get('/domains/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    ctx.body = { success: true, data: json(await domains.get(projectId, ctx.params.id!)) };
  });

  router.delete('/domains/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    await domains.remove(projectId, ctx.params.id!);
    ctx.status = 204;
  });

  /** Checks the domain's records in DNS now and answers the outcome. */
  router.post('/domains/:id/verify', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    ctx.body = { success: true, data: json(await domains.verify(projectId, ctx.params.id!)) };
  });
}
