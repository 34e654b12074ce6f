import type Router from '@koa/router';
import type { Knex } from 'knex';
import { isUuid } from '../../core/values';
import { notFound } from '../../core/errors';
import {
  createWebhook, deleteWebhook, getWebhook, listWebhookDeliveries, listWebhooks, redeliverWebhook, rotateWebhookSecret, updateWebhook,
} from '../../webhooks/endpoints';
import type { AuthState } from '../middleware/auth';
import { decodeCursor, toPage } from '../pagination';
import {
  createWebhookSchema, listWebhooksQuerySchema, patchWebhookSchema, type CreateWebhookBody, type ListWebhooksQuery, type PatchWebhookBody,
} from '../schemas/webhooks';
import { validateBody, validateQuery } from '../validate';

/** Outbound webhook endpoints (issue 16, point 3; docs/api.md "Webhooks"). The business is webhooks/endpoints.ts. */
export function webhookRoutes(router: Router, deps: { knex: Knex; secret: Buffer }): void {
  const idOf = (value: string | undefined, what = 'Webhook') => {
    if (!value || !isUuid(value)) throw notFound(what);
    return value;
  };

  router.post('/webhooks', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const body = validateBody<CreateWebhookBody>(ctx, createWebhookSchema);
    ctx.status = 201;
    ctx.body = { success: true, data: await createWebhook(deps, projectId, body) };
  });

  router.get('/webhooks', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const q = validateQuery<ListWebhooksQuery>(ctx, listWebhooksQuerySchema);
    const { rows, total } = await listWebhooks(deps, projectId, { limit: q.limit, afterId: decodeCursor(q.cursor) });
    ctx.body = { success: true, data: toPage(rows, q.limit, total, (r) => r) };
  });

  router.get('/webhooks/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    ctx.body = { success: true, data: await getWebhook(deps, projectId, idOf(ctx.params.id)) };
  });

  router.patch('/webhooks/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const id = idOf(ctx.params.id);
    const body = validateBody<PatchWebhookBody>(ctx, patchWebhookSchema);
    ctx.body = { success: true, data: await updateWebhook(deps, projectId, id, body) };
  });

  router.delete('/webhooks/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    await deleteWebhook(deps, projectId, idOf(ctx.params.id));
    ctx.body = { success: true, data: { deleted: true } };
  });

  router.post('/webhooks/:id/rotate-secret', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    ctx.body = { success: true, data: await rotateWebhookSecret(deps, projectId, idOf(ctx.params.id)) };
  });

  router.get('/webhooks/:id/deliveries', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const id = idOf(ctx.params.id);
    const q = validateQuery<ListWebhooksQuery>(ctx, listWebhooksQuerySchema);
    const { rows, total } = await listWebhookDeliveries(deps, projectId, id, { limit: q.limit, afterId: decodeCursor(q.cursor) });
    ctx.body = { success: true, data: toPage(rows, q.limit, total, (r) => r) };
  });

  router.post('/webhooks/:id/deliveries/:deliveryId/redeliver', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const id = idOf(ctx.params.id);
    const deliveryId = idOf(ctx.params.deliveryId?.toLowerCase(), 'Webhook delivery');
    ctx.status = 202;
    ctx.body = { success: true, data: await redeliverWebhook(deps, projectId, id, deliveryId) };
  });
}
