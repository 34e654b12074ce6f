import { actorOf } from '../../audit/log';
import type { Domain } from '../../db/models/Domain';
import type { ReturnPath } from '../../config';
import { domainRecords, type DomainRecord } from '../../domains/records';
import { crud, created, noContent, ok } from '../openapi/operations';
import { decodeCursor, toPage } from '../pagination';
import { deleted, reply, route } from '../route';
import * as A from '../schemas/answers';
import { createDomainSchema, listDomainsQuerySchema } from '../schemas/domains';

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

/** Spec 4.9 (domains/domains.ts). A domain is answered with its records, the bounce domain's among them. */
export const domainRoutes = [
  route({ operationId: 'listDomains', method: 'get', path: '/domains', summary: 'List sending domains', tag: 'Domains', access: 'secret', permission: 'read', query: listDomainsQuerySchema, answers: ok('A page of domains.', A.pageOf(A.domainAnswer)),
    async handle({ auth, query: q, services }) {
      const { rows, total } = await services.domains.list(auth.projectId, { status: q.status }, { limit: q.limit, afterId: decodeCursor(q.cursor) });
      return reply(toPage(rows, q.limit, total, (d) => domainJson(d, services.returnPath)));
    } }),

  route({ operationId: 'createDomain', method: 'post', path: '/domains', summary: 'Add a sending domain', tag: 'Domains', access: 'secret', permission: 'admin', body: createDomainSchema,
    answers: created('Added, with the DNS records to publish.', A.domainAnswer), errors: [409],
    links: crud('Domain', undefined, undefined, ['get', 'delete', 'verifyDomain:']),
    handle: async ({ auth, body, services }) => reply(domainJson(await services.domains.create(auth.projectId, body.domain, actorOf(auth)), services.returnPath), 201) }),

  route({ operationId: 'getDomain', method: 'get', path: '/domains/:id', summary: 'Get a sending domain', tag: 'Domains', access: 'secret', permission: 'read', answers: ok('The domain.', A.domainAnswer),
    handle: async ({ auth, params, services }) => reply(domainJson(await services.domains.get(auth.projectId, params.id), services.returnPath)) }),

  route({ operationId: 'deleteDomain', method: 'delete', path: '/domains/:id', summary: 'Remove a sending domain', tag: 'Domains', access: 'secret', permission: 'admin', answers: noContent('Removed.'),
    async handle({ auth, params, services }) {
      await services.domains.remove(auth.projectId, params.id, actorOf(auth));
      return deleted;
    } }),

  /** Checks the domain's records in DNS now and answers the outcome. */
  route({ operationId: 'verifyDomain', method: 'post', path: '/domains/:id/verify', summary: "Check the domain's DNS records now", tag: 'Domains', access: 'secret', permission: 'admin', answers: ok('The domain after the check.', A.domainAnswer),
    handle: async ({ auth, params, services }) => reply(domainJson(await services.domains.verify(auth.projectId, params.id, actorOf(auth)), services.returnPath)) }),
];
