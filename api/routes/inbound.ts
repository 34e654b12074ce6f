import { actorOf } from '../../audit/log';
import type { InboundDomain, InboundRoute } from '../../inbound/domains';
import type { InboundMessage } from '../../inbound/messages';
import { notFound } from '../../core/errors';
import { crud, created, first, noContent, ok, token } from '../openapi/operations';
import { decodeCursor, decodeRankCursor, encodeRankCursor, toPage } from '../pagination';
import { deleted, rawRoute, reply, route } from '../route';
import * as A from '../schemas/answers';
import {
  attachmentParam, createInboundDomainSchema, createInboundRouteSchema, listInboundDomainsQuerySchema, listInboundQuerySchema, listInboundRoutesQuerySchema,
  updateInboundRouteSchema,
} from '../schemas/inbound';

const domainJson = (d: InboundDomain, records: { type: 'MX' | 'TXT'; name: string; value: string; status: string }[]) => ({
  id: d.id, domain: d.domain, status: d.status, records, createdAt: d.createdAt.toISOString(),
  checkedAt: d.checkedAt?.toISOString() ?? null, verifiedAt: d.verifiedAt?.toISOString() ?? null,
});

const routeJson = (r: InboundRoute) => ({
  id: r.id, domainId: r.domainId, match: r.match, kind: r.kind, priority: r.priority, action: r.action, endpointId: r.endpointId,
  rejectMessage: r.rejectMessage, createdAt: r.createdAt.toISOString(), updatedAt: r.updatedAt.toISOString(),
});

const messageJson = (m: InboundMessage) => ({
  id: m.id, routeId: m.routeId, recipient: m.recipient, mailFrom: m.mailFrom, remoteAddress: m.remoteAddress, from: m.from, to: m.to, cc: m.cc, replyTo: m.replyTo,
  subject: m.subject, date: m.date?.toISOString() ?? null, messageId: m.messageId, inReplyToMessageId: m.inReplyToMessageId, references: m.references,
  attachments: m.attachments, auth: m.auth, warnings: m.warnings, inReplyTo: m.inReplyTo, size: m.size, createdAt: m.createdAt.toISOString(),
});

/** A file's name in Content-Disposition: the ASCII fallback, and the name itself (RFC 6266, RFC 5987). */
const disposition = (name: string) => `attachment; filename="${name.replace(/[^\x20-\x7e]|["\\]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(name)}`;

const attachmentIndex = (n: string | undefined) => {
  if (!n || !/^\d{1,4}$/.test(n)) throw notFound('Attachment');
  return Number(n);
};

/** Inbound mail (inbound/, issue 31): domains that receive, routes that decide, and the messages received. */
export const inboundRoutes = [
  route({ operationId: 'listInboundDomains', method: 'get', path: '/inbound/domains', summary: 'List inbound domains', tag: 'Inbound', access: 'secret', permission: 'read',
    query: listInboundDomainsQuerySchema, answers: ok('A page of inbound domains.', A.pageOf(A.inboundDomainAnswer)),
    async handle({ auth, query: q, services }) {
      const { rows, total } = await services.inbound.setup.listDomains(auth.projectId, { limit: q.limit, afterId: decodeCursor(q.cursor) });
      return reply(toPage(rows, q.limit, total, (d) => domainJson(d, services.inbound.setup.records(auth.projectId, d))));
    } }),

  route({ operationId: 'createInboundDomain', method: 'post', path: '/inbound/domains', summary: 'Add an inbound domain', tag: 'Inbound', access: 'secret', permission: 'admin',
    description: 'Adds a domain to receive mail at. It stays PENDING until DNS shows that the project owns it: the MX record and the TXT record shown in `records` (the TXT value is the project\'s own token), checked by POST /inbound/domains/:id/verify. A domain receives for one project of the installation, the one that proved it last; 409 when this project has it already.',
    body: createInboundDomainSchema, answers: created('Added, with the records to publish.', A.inboundDomainAnswer), errors: [409],
    links: crud('InboundDomain', undefined, undefined, ['get', 'delete', 'verifyInboundDomain:']),
    async handle({ auth, body, services }) {
      const d = await services.inbound.setup.createDomain(auth.projectId, body.domain, actorOf(auth));
      return reply(domainJson(d, services.inbound.setup.records(auth.projectId, d)), 201);
    } }),

  route({ operationId: 'getInboundDomain', method: 'get', path: '/inbound/domains/:id', summary: 'Get an inbound domain', tag: 'Inbound', access: 'secret', permission: 'read',
    answers: ok('The domain.', A.inboundDomainAnswer),
    async handle({ auth, params, services }) {
      const d = await services.inbound.setup.getDomain(auth.projectId, params.id);
      return reply(domainJson(d, services.inbound.setup.records(auth.projectId, d)));
    } }),

  route({ operationId: 'deleteInboundDomain', method: 'delete', path: '/inbound/domains/:id', summary: 'Remove an inbound domain and its routes', tag: 'Inbound', access: 'secret', permission: 'admin',
    description: 'Its mail is refused from then on; the messages already received stay until their retention ends.', answers: noContent('Removed.'),
    async handle({ auth, params, services }) {
      await services.inbound.setup.removeDomain(auth.projectId, params.id, actorOf(auth));
      return deleted;
    } }),

  route({ operationId: 'verifyInboundDomain', method: 'post', path: '/inbound/domains/:id/verify', summary: "Check the inbound domain's DNS records now", tag: 'Inbound', access: 'secret', permission: 'admin',
    description: 'VERIFIED when the MX names Herald\'s host and the TXT record carries the project\'s token; the domain then receives for this project, and another project that had it VERIFIED loses it (FAILED).',
    answers: ok('The domain after the check: VERIFIED when both records are right, FAILED when one is missing or wrong.', A.inboundDomainAnswer),
    async handle({ auth, params, services }) {
      const d = await services.inbound.setup.verifyDomain(auth.projectId, params.id, actorOf(auth));
      return reply(domainJson(d, services.inbound.setup.records(auth.projectId, d)));
    } }),

  route({ operationId: 'listInboundRoutes', method: 'get', path: '/inbound/routes', summary: 'List inbound routes', tag: 'Inbound', access: 'secret', permission: 'read',
    query: listInboundRoutesQuerySchema, answers: ok('A page of routes in the order they are tried: by priority, then oldest first.', A.pageOf(A.inboundRouteAnswer)), links: first('getInboundRoute'),
    async handle({ auth, query: q, services }) {
      const after = decodeRankCursor(q.cursor);
      const { rows, total } = await services.inbound.setup.listRoutes(auth.projectId, { domainId: q.domainId }, { limit: q.limit, ...(after ? { after: { priority: after.rank, id: after.id } } : {}) });
      return reply(toPage(rows, q.limit, total, routeJson, (r) => encodeRankCursor(r.priority, r.id)));
    } }),

  route({ operationId: 'createInboundRoute', method: 'post', path: '/inbound/routes', summary: 'Add an inbound route', tag: 'Inbound', access: 'secret', permission: 'admin',
    body: createInboundRouteSchema, answers: created('Added.', A.inboundRouteAnswer), links: crud('InboundRoute'),
    handle: async ({ auth, body, services }) => reply(routeJson(await services.inbound.setup.createRoute(auth.projectId, body, actorOf(auth))), 201) }),

  route({ operationId: 'getInboundRoute', method: 'get', path: '/inbound/routes/:id', summary: 'Get an inbound route', tag: 'Inbound', access: 'secret', permission: 'read',
    answers: ok('The route.', A.inboundRouteAnswer),
    handle: async ({ auth, params, services }) => reply(routeJson(await services.inbound.setup.getRoute(auth.projectId, params.id))) }),

  route({ operationId: 'updateInboundRoute', method: 'patch', path: '/inbound/routes/:id', summary: 'Change an inbound route', tag: 'Inbound', access: 'secret', permission: 'admin',
    body: updateInboundRouteSchema, answers: ok('The route as changed.', A.inboundRouteAnswer),
    before: ({ auth, params, services }) => services.inbound.setup.getRoute(auth.projectId, params.id),
    handle: async ({ auth, params, body, services }) => reply(routeJson(await services.inbound.setup.updateRoute(auth.projectId, params.id, body, actorOf(auth)))) }),

  route({ operationId: 'deleteInboundRoute', method: 'delete', path: '/inbound/routes/:id', summary: 'Remove an inbound route', tag: 'Inbound', access: 'secret', permission: 'admin',
    answers: noContent('Removed.'),
    async handle({ auth, params, services }) {
      await services.inbound.setup.removeRoute(auth.projectId, params.id, actorOf(auth));
      return deleted;
    } }),

  route({ operationId: 'listInbound', method: 'get', path: '/inbound', summary: 'List received messages', tag: 'Inbound', access: 'secret', permission: 'read',
    description: 'Newest first, without bodies and headers (GET /inbound/:id has them). `since` is inclusive, `until` exclusive (the time received).',
    query: listInboundQuerySchema, answers: ok('A page of received messages; total exact up to 1,000 (totalExact).', A.cappedPageOf(A.inboundMessageAnswer)), links: first('getInbound'),
    async handle({ auth, query: q, services }) {
      const { rows, total, totalExact } = await services.inbound.messages.list(auth.projectId, { routeId: q.route, from: q.from, to: q.to, since: q.since, until: q.until }, { limit: q.limit, afterId: decodeCursor(q.cursor) });
      return reply({ ...toPage(rows, q.limit, total, messageJson), totalExact });
    } }),

  route({ operationId: 'getInbound', method: 'get', path: '/inbound/:id', summary: 'Get a received message: parsed, with its authentication', tag: 'Inbound', access: 'secret', permission: 'read',
    answers: ok('The message.', A.inboundMessageDetailAnswer),
    async handle({ auth, params, services }) {
      const m = await services.inbound.messages.get(auth.projectId, params.id);
      return reply({ ...messageJson(m), text: m.text, html: m.html, headers: m.headers });
    } }),

  route({ operationId: 'getInboundRaw', method: 'get', path: '/inbound/:id/raw', summary: 'Download a received message as it arrived (.eml)', tag: 'Inbound', access: 'secret', permission: 'read',
    answers: { 200: { description: 'The message\'s bytes, as an attachment named <id>.eml.', media: 'mime', headers: { 'Content-Disposition': '`attachment; filename="<id>.eml"`' } } },
    async handle({ auth, params, services }) {
      const bytes = await services.inbound.messages.raw(auth.projectId, params.id);
      return { status: 200, body: bytes, headers: { 'Content-Type': 'message/rfc822', 'Content-Disposition': `attachment; filename="${params.id}.eml"` } };
    } }),

  route({ operationId: 'getInboundAttachment', method: 'get', path: '/inbound/:id/attachments/:n', summary: 'Download an attachment of a received message', tag: 'Inbound', access: 'secret', permission: 'read',
    params: { n: attachmentParam }, answers: { 200: { description: 'The attachment\'s bytes, with its name.', media: 'binary', headers: { 'Content-Disposition': '`attachment; filename="<name>"`' } } },
    async handle({ auth, params, services }) {
      const a = await services.inbound.messages.attachment(auth.projectId, params.id, attachmentIndex(params.n));
      return { status: 200, body: a.content, headers: { 'Content-Type': 'application/octet-stream', 'Content-Disposition': disposition(a.filename), 'X-Content-Type-Options': 'nosniff' } };
    } }),

  /** The links of an `email.received` payload: the signed token authorises, until it expires. */
  rawRoute({ operationId: 'getInboundFile', method: 'get', path: '/inbound-files/:token', summary: 'Download a received message or attachment by its signed link', tag: 'Inbound', access: 'open',
    description: 'The `rawUrl` and `attachments[].url` of an `email.received` webhook payload: no key, the signed token authorises; 404 once it has expired (a week after the message arrived) or its message was deleted.',
    params: { token }, answers: { 200: { description: 'The file\'s bytes.', media: 'binary', headers: { 'Content-Disposition': '`attachment; filename="<name>"`' } } }, errors: [404],
    async serve(ctx, { inbound }) {
      const file = await inbound.messages.byToken(ctx.params.token!);
      if (!file || file === 'expired') throw notFound(file === 'expired' ? 'Link expired; it' : 'File');
      ctx.set('Cache-Control', 'private, no-store');
      ctx.set('Content-Disposition', disposition(file.filename));
      ctx.set('X-Content-Type-Options', 'nosniff');
      ctx.type = file.contentType === 'message/rfc822' ? 'message/rfc822' : 'application/octet-stream';
      ctx.body = file.content;
    } }),
];
