import type { AuditRow } from '../../audit/log';
import { ok } from '../openapi/operations';
import { decodeCursor, toPage } from '../pagination';
import { reply, route } from '../route';
import * as A from '../schemas/answers';
import { listAuditQuerySchema } from '../schemas/keys';

export function auditJson(r: AuditRow) {
  return {
    id: r.id, actor: { kind: r.actor_kind, id: r.actor_id }, operation: r.operation, resourceType: r.resource_type,
    resourceId: r.resource_id, address: r.address, at: r.at.toISOString(), details: r.details,
  };
}

/** Who changed what (issue 27, point 4; audit/log.ts). */
export const auditLogRoutes = [
  route({ operationId: 'listAuditLog', method: 'get', path: '/audit-log', summary: 'List the audit log', tag: 'Audit log', access: 'secret', permission: 'admin', query: listAuditQuerySchema,
    description: 'Changes made by keys and people to keys, domains, webhooks, settings, suppressions, campaign sends and every delete, newest first. Sends, tracking and SMTP are not listed: their events are their record.',
    answers: ok('A page of entries; total exact up to 1,000 (totalExact).', A.cappedPageOf(A.auditEntryAnswer)),
    async handle({ auth, query: q, services }) {
      const { actor, operation, resourceType, resourceId, since, until } = q;
      const { rows, total, totalExact } = await services.audit.list(auth.projectId, { actor, operation, resourceType, resourceId, since, until }, { limit: q.limit, afterId: decodeCursor(q.cursor) });
      return reply({ ...toPage(rows, q.limit, total, auditJson), totalExact });
    } }),
];
