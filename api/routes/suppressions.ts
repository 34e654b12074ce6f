import type Router from '@koa/router';
import type { Knex } from 'knex';
import { listSuppressions, suppress, unsuppress, type Suppression } from '../../audience/suppressions';
import { notFound } from '../../core/errors';
import { normaliseEmail } from '../../core/values';
import type { AuthState } from '../middleware/auth';
import { decodeCursor, toPage } from '../pagination';
import { listSuppressionsQuerySchema, suppressSchema, type ListSuppressionsQuery, type SuppressBody } from '../schemas/suppressions';
import { validateBody, validateQuery } from '../validate';

function suppressionJson(s: Suppression) {
  return { id: s.id, email: s.email, reason: s.reason, details: s.details, createdAt: s.created_at.toISOString() };
}

/** The project's suppression list (audience/suppressions.ts). An address in a path is matched as stored (lower case). */
export function suppressionRoutes(router: Router, knex: Knex): void {
  router.get('/suppressions', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const q = validateQuery<ListSuppressionsQuery>(ctx, listSuppressionsQuerySchema);
    const { rows, total } = await listSuppressions(knex, projectId, { reason: q.reason }, { limit: q.limit, afterId: decodeCursor(q.cursor) });
    ctx.body = { success: true, data: toPage(rows, q.limit, total, suppressionJson) };
  });

  router.post('/suppressions', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const body = validateBody<SuppressBody>(ctx, suppressSchema);
    const [entry] = await suppress(knex, projectId, [{ email: body.email, reason: body.reason ?? 'manual', details: body.note ? { note: body.note } : { source: 'api' } }]);
    ctx.status = entry!.created ? 201 : 200;
    ctx.body = { success: true, data: suppressionJson(entry!) };
  });

  router.delete('/suppressions/:email', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const email = normaliseEmail(ctx.params.email!);
    if (!email) throw notFound('Suppression');
    await unsuppress(knex, projectId, email);
    ctx.status = 204;
  });
}
