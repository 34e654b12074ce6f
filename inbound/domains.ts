import { createHmac } from 'node:crypto';
import type { Knex } from 'knex';
import { audited, type Actor } from '../audit/log';
import type { DnsConfig } from '../config';
import { conflict, invalid, notFound } from '../core/errors';
import { isUuid } from '../core/values';
import { listPage, pageWithTotal, type Listed, type PageRequest } from '../db/pages';
import { domainDnsClient } from '../domains/checks';
import type { DnsAnswer } from '../verify/dns';
import { matchText, parseMatch, replyText, type MatchKind } from './matching';

/**
 * A project's inbound domains and routes (issue 31): the domains it receives mail at, and what becomes of the mail of
 * each address. A domain takes mail once DNS shows that the project owns it: its MX points at Herald's inbound
 * listener (`mxHost`) and a TXT record at `_herald.<domain>` carries the project's token (ownerToken), which only
 * the domain's owner can publish; so no project can take another's mail by adding its domain. A route names a match
 * (inbound/matching.ts), a priority and an action. Every call is scoped to the project.
 */

export type InboundDomainStatus = 'PENDING' | 'VERIFIED' | 'FAILED';

export interface InboundDomain {
  id: string;
  domain: string;
  status: InboundDomainStatus;
  /** What the last check found of each record. */
  mxStatus: InboundDomainStatus;
  ownerStatus: InboundDomainStatus;
  createdAt: Date;
  checkedAt: Date | null;
  verifiedAt: Date | null;
}

export type RouteAction = 'webhook' | 'store' | 'reject';

export interface InboundRoute {
  id: string;
  domainId: string;
  domain: string;
  kind: MatchKind;
  localPart: string | null;
  /** As written back: `support@in.example.com`, `reply+*@…`, `*@…`. */
  match: string;
  priority: number;
  action: RouteAction;
  /** For `webhook`; null when its endpoint was deleted (the route then stores only). */
  endpointId: string | null;
  rejectMessage: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface RouteInput {
  match: string;
  priority?: number;
  action: RouteAction;
  endpointId?: string | null;
  rejectMessage?: string | null;
}

export interface InboundSetupDeps {
  knex: Knex;
  dns: DnsConfig;
  /** The host the domains' MX must name: where the inbound listener is reached (BOUNCE_MX_HOST). */
  mxHost: string;
  /** The installation secret: the projects' ownership tokens derive from it. */
  secret: Buffer;
}

/** Where a domain's ownership record is published. */
export const ownerRecordName = (domain: string) => `_herald.${domain}`;

/**
 * The TXT value that proves a project owns a domain: derived from the installation secret and the project, the same
 * for all its domains, unguessable by another project (HMAC-SHA256, 128 bits shown).
 */
export function ownerToken(secret: Buffer, projectId: string): string {
  return `herald-inbound=${createHmac('sha256', secret).update(`inbound-domain-owner\0${projectId}`).digest('base64url').slice(0, 22)}`;
}

const domainOf = (r: Record<string, unknown>): InboundDomain => ({
  id: r.id as string, domain: r.domain as string, status: r.status as InboundDomainStatus,
  mxStatus: r.mx_status as InboundDomainStatus, ownerStatus: r.owner_status as InboundDomainStatus, createdAt: r.created_at as Date,
  checkedAt: (r.checked_at as Date | null) ?? null, verifiedAt: (r.verified_at as Date | null) ?? null,
});

const routeOf = (r: Record<string, unknown>): InboundRoute => ({
  id: r.id as string, domainId: r.domain_id as string, domain: r.domain as string, kind: r.kind as MatchKind, localPart: (r.local_part as string | null) ?? null,
  match: matchText({ kind: r.kind as MatchKind, localPart: r.local_part as string | null }, r.domain as string),
  priority: r.priority as number, action: r.action as RouteAction, endpointId: (r.endpoint_id as string | null) ?? null,
  rejectMessage: (r.reject_message as string | null) ?? null, createdAt: r.created_at as Date, updatedAt: r.updated_at as Date,
});

const sameHost = (a: string, b: string) => a.toLowerCase().replace(/\.$/, '') === b.toLowerCase().replace(/\.$/, '');

/** An answer's verdict on one record: undefined when DNS did not answer (the last verdict stands). */
function verdict(answer: DnsAnswer, wanted: (record: string) => boolean): InboundDomainStatus | undefined {
  if (answer.status === 'FOUND') return answer.records.some(wanted) ? 'VERIFIED' : 'FAILED';
  return answer.status === 'NXDOMAIN' || answer.status === 'NODATA' ? 'FAILED' : undefined;
}

export function inboundSetupService({ knex, dns: dnsConfig, mxHost, secret }: InboundSetupDeps) {
  const dns = domainDnsClient(dnsConfig);
  const routes = () => knex('inbound_routes as r').join('inbound_domains as d', function on() {
    this.on('d.project_id', 'r.project_id').andOn('d.id', 'r.domain_id');
  }).select('r.*', 'd.domain');

  async function findDomain(db: Knex, projectId: string, id: string): Promise<InboundDomain> {
    const row = isUuid(id) ? await db('inbound_domains').where({ project_id: projectId, id }).first() : undefined;
    if (!row) throw notFound('Inbound domain');
    return domainOf(row);
  }
  async function findRoute(projectId: string, id: string): Promise<InboundRoute> {
    const row = isUuid(id) ? await routes().where({ 'r.project_id': projectId, 'r.id': id }).first() : undefined;
    if (!row) throw notFound('Inbound route');
    return routeOf(row);
  }

  /** The route's columns from a request: its match at one of the project's domains, an endpoint of the project. */
  async function columns(trx: Knex, projectId: string, input: RouteInput) {
    const m = parseMatch(input.match);
    if ('error' in m) throw invalid([{ field: 'match', message: `match ${m.error}`, code: 'invalid' }]);
    const domain = await trx('inbound_domains').where({ project_id: projectId, domain: m.domain }).first('id');
    if (!domain) throw invalid([{ field: 'match', message: `match must be at one of the project's inbound domains; ${m.domain} is not one`, code: 'unknown_domain' }], 'POST /inbound/domains adds it.');
    if (input.action === 'webhook') {
      const endpoint = input.endpointId && isUuid(input.endpointId) ? await trx('webhook_endpoints').where({ project_id: projectId, id: input.endpointId }).first('id') : undefined;
      if (!endpoint) throw invalid([{ field: 'endpointId', message: 'endpointId must name a webhook endpoint of the project (a webhook route delivers to it)', code: 'not_found' }], 'POST /webhooks creates one.');
    }
    return {
      domain_id: domain.id, kind: m.kind, local_part: m.localPart, priority: input.priority ?? 100, action: input.action,
      endpoint_id: input.action === 'webhook' ? input.endpointId : null,
      reject_message: input.action === 'reject' ? replyText(input.rejectMessage ?? 'This address does not take mail') : null,
    };
  }

  return {
    async listDomains(projectId: string, page: PageRequest): Promise<Listed<InboundDomain>> {
      return listPage(() => knex('inbound_domains').where('project_id', projectId), page, domainOf);
    },
    getDomain: (projectId: string, id: string) => findDomain(knex, projectId, id),
    /**
     * Adds a PENDING domain; 409 when the project has it already. Another project having it changes nothing here: the
     * domain receives for the project that proves it owns it (verifyDomain).
     */
    async createDomain(projectId: string, domain: string, actor: Actor): Promise<InboundDomain> {
      return audited(knex, projectId, actor, (d: InboundDomain) => ({ operation: 'createInboundDomain', resourceType: 'inbound_domain', resourceId: d.id, details: { domain: d.domain } }), async (trx) => {
        const [row] = await trx('inbound_domains').insert({ project_id: projectId, domain }).onConflict(['project_id', 'domain']).ignore().returning('*');
        if (!row) throw conflict(`The project has the inbound domain ${domain} already`, 'GET /inbound/domains lists the project\'s.');
        return domainOf(row);
      });
    },
    /** Removes the domain and its routes; the messages received stay until their retention ends. */
    async removeDomain(projectId: string, id: string, actor: Actor): Promise<void> {
      if (!isUuid(id)) throw notFound('Inbound domain');
      await audited(knex, projectId, actor, { operation: 'deleteInboundDomain', resourceType: 'inbound_domain', resourceId: id }, async (trx) => {
        if (!(await trx('inbound_domains').where({ project_id: projectId, id }).delete())) throw notFound('Inbound domain');
      });
    },
    /**
     * Asks DNS for the domain's MX and ownership TXT record now: VERIFIED when the MX names `mxHost` and the TXT
     * record carries the project's token, FAILED when either is missing or wrong; a lookup that does not answer keeps
     * that record's last verdict. A project that proves a domain another project has VERIFIED takes it over (only the
     * domain's owner can have published its token): the other's row becomes FAILED, in the same transaction.
     */
    async verifyDomain(projectId: string, id: string, actor: Actor): Promise<InboundDomain> {
      const d = await findDomain(knex, projectId, id);
      const token = ownerToken(secret, projectId);
      const [mxAnswer, txtAnswer] = await Promise.all([dns.lookup('MX', d.domain), dns.lookup('TXT', ownerRecordName(d.domain))]);
      const mx = verdict(mxAnswer, (h) => sameHost(h, mxHost)) ?? d.mxStatus;
      const owner = verdict(txtAnswer, (t) => t.trim() === token) ?? d.ownerStatus;
      const status: InboundDomainStatus = mx === 'VERIFIED' && owner === 'VERIFIED' ? 'VERIFIED' : mx === 'FAILED' || owner === 'FAILED' ? 'FAILED' : d.status;
      return audited(knex, projectId, actor, (after: InboundDomain & { displaced: number }) => ({
        operation: 'verifyInboundDomain', resourceType: 'inbound_domain', resourceId: id, details: { status: after.status, mx: after.mxStatus, owner: after.ownerStatus, ...(after.displaced ? { tookOverFromProjects: after.displaced } : {}) },
      }), async (trx) => {
        const now = new Date();
        const displaced = status === 'VERIFIED'
          ? await trx('inbound_domains').where({ domain: d.domain, status: 'VERIFIED' }).whereNot('project_id', projectId).update({ status: 'FAILED', owner_status: 'FAILED', verified_at: null, checked_at: now })
          : 0;
        const [row] = await trx('inbound_domains').where({ project_id: projectId, id }).update({
          checked_at: now, mx_status: mx, owner_status: owner, status,
          verified_at: status === 'VERIFIED' ? knex.raw('coalesce(verified_at, ?)', [now]) : null,
        }).returning('*');
        if (!row) throw notFound('Inbound domain');
        return { ...domainOf(row), displaced };
      });
    },
    /** The records to publish for a domain: the MX (mail reaches Herald) and the TXT record (the project owns it). */
    records: (projectId: string, d: InboundDomain) => [
      { type: 'MX' as const, name: d.domain, value: `10 ${mxHost}`, status: d.mxStatus },
      { type: 'TXT' as const, name: ownerRecordName(d.domain), value: ownerToken(secret, projectId), status: d.ownerStatus },
    ],


    /**
     * The routes in the order they are tried: priority, then oldest first (as verifiedRoutes reads them), a page being
     * the rows after the previous page's last (priority, id): the list shows the true order across pages.
     */
    async listRoutes(projectId: string, filter: { domainId?: string }, { limit, after }: { limit: number; after?: { priority: number; id: string } }): Promise<Listed<InboundRoute>> {
      const filtered = () => {
        const q = routes().where('r.project_id', projectId);
        if (filter.domainId) q.where('r.domain_id', filter.domainId);
        return q;
      };
      const page = filtered().orderBy([{ column: 'r.priority' }, { column: 'r.id' }]).limit(limit + 1);
      if (after) page.whereRaw('(r.priority, r.id) > (?, ?)', [after.priority, after.id]);
      const { rows, total } = await pageWithTotal(page, filtered().clearSelect().clearOrder().count('* as n'),
        { column: 'r.id', order: [{ column: 'priority', order: 'asc' }, { column: 'id', order: 'asc' }] });
      return { rows: rows.map(routeOf), total };
    },
    getRoute: findRoute,
    async createRoute(projectId: string, input: RouteInput, actor: Actor): Promise<InboundRoute> {
      const id = await audited(knex, projectId, actor, (made: string) => ({ operation: 'createInboundRoute', resourceType: 'inbound_route', resourceId: made, details: { match: input.match, action: input.action } }), async (trx) => {
        const [row] = await trx('inbound_routes').insert({ project_id: projectId, ...(await columns(trx, projectId, input)) }).returning('id');
        return row.id as string;
      });
      return findRoute(projectId, id);
    },
    /** Changes what is given; the rest stays (a new action without its endpoint or text is checked as a whole). */
    async updateRoute(projectId: string, id: string, patch: Partial<RouteInput>, actor: Actor): Promise<InboundRoute> {
      const current = await findRoute(projectId, id);
      const merged: RouteInput = {
        match: patch.match ?? current.match, priority: patch.priority ?? current.priority, action: patch.action ?? current.action,
        endpointId: patch.endpointId !== undefined ? patch.endpointId : current.endpointId,
        rejectMessage: patch.rejectMessage !== undefined ? patch.rejectMessage : current.rejectMessage,
      };
      await audited(knex, projectId, actor, { operation: 'updateInboundRoute', resourceType: 'inbound_route', resourceId: id, details: { ...patch } }, async (trx) => {
        const n = await trx('inbound_routes').where({ project_id: projectId, id }).update({ ...(await columns(trx, projectId, merged)), updated_at: trx.fn.now() });
        if (!n) throw notFound('Inbound route');
      });
      return findRoute(projectId, id);
    },
    async removeRoute(projectId: string, id: string, actor: Actor): Promise<void> {
      if (!isUuid(id)) throw notFound('Inbound route');
      await audited(knex, projectId, actor, { operation: 'deleteInboundRoute', resourceType: 'inbound_route', resourceId: id }, async (trx) => {
        if (!(await trx('inbound_routes').where({ project_id: projectId, id }).delete())) throw notFound('Inbound route');
      });
    },
  };
}

export type InboundSetup = ReturnType<typeof inboundSetupService>;
