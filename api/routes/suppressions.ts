import { actorOf } from '../../audit/log';
import Joi from 'joi';
import { ADDRESS_HASH_PREFIX, type Suppression } from '../../audience/suppressions';
import { notFound } from '../../core/errors';
import { normaliseEmail } from '../../core/values';
import { noContent, ok } from '../openapi/operations';
import { decodeCursor, toPage } from '../pagination';
import { deleted, reply, route } from '../route';
import * as A from '../schemas/answers';
import { listSuppressionsQuerySchema, suppressSchema } from '../schemas/suppressions';

export function suppressionJson(s: Suppression) {
  return { id: s.id, email: s.email, reason: s.reason, details: s.details, createdAt: s.created_at.toISOString() };
}

/** The project's suppression list (audience/suppressions.ts). An address in a path is matched as stored (lower case). */
export const suppressionRoutes = [
  route({ operationId: 'listSuppressions', method: 'get', path: '/suppressions', summary: 'List suppressed addresses', tag: 'Suppressions', access: 'secret', permission: 'read', query: listSuppressionsQuerySchema,
    answers: ok('A page of suppressions; total exact up to 1,000 (totalExact).', A.cappedPageOf(A.suppressionAnswer)),
    async handle({ auth, query: q, services }) {
      const { rows, total, totalExact } = await services.suppressions.list(auth.projectId, { reason: q.reason }, { limit: q.limit, afterId: decodeCursor(q.cursor) });
      return reply({ ...toPage(rows, q.limit, total, suppressionJson), totalExact });
    } }),

  route({ operationId: 'createSuppression', method: 'post', path: '/suppressions', summary: 'Suppress an address', tag: 'Suppressions', access: 'secret', permission: 'admin', body: suppressSchema,
    answers: { 201: { description: 'Suppressed.', data: A.suppressionAnswer }, 200: { description: 'Already suppressed.', data: A.suppressionAnswer } },
    links: { deleteSuppression: { operationId: 'deleteSuppression', parameters: { email: '$response.body#/data/email' } } },
    async handle({ auth, body, services }) {
      const entry = await services.suppressions.add(auth.projectId, { email: body.email, reason: body.reason ?? 'manual', details: body.note ? { note: body.note } : { source: 'api' } }, actorOf(auth));
      return reply(suppressionJson(entry), entry.created ? 201 : 200);
    } }),

  route({ operationId: 'deleteSuppression', method: 'delete', path: '/suppressions/:email', summary: 'Remove an address from the suppression list', tag: 'Suppressions', access: 'secret', permission: 'admin',
    params: { email: Joi.string().description('The address (matched lower-cased), or an erased address\'s hash (`hmac-sha256:<hex>`).') }, answers: noContent('Removed.'), errors: [404],
    async handle({ auth, params, services }) {
      // An erased contact's entry is named by its keyed hash (contacts/erase.ts), not by an address.
      const given = params.email.trim().toLowerCase();
      const email = given.startsWith(ADDRESS_HASH_PREFIX) ? given : normaliseEmail(params.email);
      if (!email) throw notFound('Suppression');
      await services.suppressions.remove(auth.projectId, email, actorOf(auth));
      return deleted;
    } }),
];
