import { actorOf } from '../../audit/log';
import type { AttemptRow, DeliveryRow, EndpointRow } from '../../db/queries/webhooks';
import { messageId } from '../../webhooks/endpoints';
import type { WebhookEventType, WebhookPayload } from '../../webhooks/types';
import { created, crud, first, noContent, ok, uuidParam } from '../openapi/operations';
import { decodeCursor, toPage } from '../pagination';
import { deleted, reply, route } from '../route';
import * as A from '../schemas/answers';
import { createWebhookSchema, listWebhooksQuerySchema, patchWebhookSchema } from '../schemas/webhooks';

export interface WebhookEndpointJson {
  id: string;
  url: string;
  events: WebhookEventType[];
  enabled: boolean;
  /** `healthy`, or `failing` once a delivery exhausted its retries (until the next success). */
  status: 'healthy' | 'failing';
  failingSince: string | null;
  lastError: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface WebhookAttemptJson {
  attempt: number;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  at: string;
}

export interface WebhookDeliveryJson {
  id: string;
  /** The `webhook-id` header: the same on every attempt and redelivery. */
  messageId: string;
  type: string;
  status: 'PENDING' | 'DELIVERING' | 'SUCCEEDED' | 'FAILED';
  attempts: number;
  nextAttemptAt: string | null;
  lastStatusCode: number | null;
  lastLatencyMs: number | null;
  lastError: string | null;
  deliveredAt: string | null;
  createdAt: string;
  payload: WebhookPayload;
  attemptLog: WebhookAttemptJson[];
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** An endpoint as answered; its secret never is, but in the answers that make one (`withSecret`). */
export function endpointJson(r: Omit<EndpointRow, 'secret'>): WebhookEndpointJson {
  return {
    id: r.id, url: r.url, events: r.events as WebhookEventType[], enabled: r.enabled,
    status: r.failing_since ? 'failing' : 'healthy', failingSince: iso(r.failing_since), lastError: r.last_error,
    createdAt: r.created_at.toISOString(), updatedAt: r.updated_at.toISOString(),
  };
}

const withSecret = (r: Omit<EndpointRow, 'secret'> & { secret: string }) => ({ ...endpointJson(r), secret: r.secret });

export function deliveryJson(r: DeliveryRow & { attempt_log: AttemptRow[] }): WebhookDeliveryJson {
  return {
    id: r.id, messageId: messageId(r.id), type: r.type, status: r.status, attempts: r.attempts,
    nextAttemptAt: r.status === 'PENDING' ? r.next_attempt_at.toISOString() : null,
    lastStatusCode: r.last_status_code, lastLatencyMs: r.last_latency_ms, lastError: r.last_error,
    deliveredAt: iso(r.delivered_at), createdAt: r.created_at.toISOString(), payload: r.payload as unknown as WebhookPayload,
    attemptLog: r.attempt_log.map((a) => ({ attempt: a.attempt, statusCode: a.status_code, latencyMs: a.latency_ms, error: a.error, at: a.created_at.toISOString() })),
  };
}

/** Outbound webhook endpoints (issue 16, point 3; docs/api.md "Webhooks"). The business is webhooks/endpoints.ts. */
export const webhookRoutes = [
  route({ operationId: 'createWebhook', method: 'post', path: '/webhooks', summary: 'Subscribe an endpoint', tag: 'Webhooks', access: 'secret', permission: 'admin', body: createWebhookSchema,
    answers: created('Created; the signing secret is shown here only.', A.webhookWithSecretAnswer),
    links: crud('Webhook', undefined, undefined, ['get', 'update', 'delete', 'rotateWebhookSecret:', 'listWebhookDeliveries:']),
    handle: async ({ auth, body, services }) => reply(withSecret(await services.webhooks.create(auth.projectId, body, actorOf(auth))), 201) }),

  route({ operationId: 'listWebhooks', method: 'get', path: '/webhooks', summary: 'List webhook endpoints', tag: 'Webhooks', access: 'secret', permission: 'read', query: listWebhooksQuerySchema, answers: ok('A page of endpoints.', A.pageOf(A.webhookAnswer)),
    async handle({ auth, query: q, services }) {
      const { rows, total } = await services.webhooks.list(auth.projectId, { limit: q.limit, afterId: decodeCursor(q.cursor) });
      return reply(toPage(rows, q.limit, total, endpointJson));
    } }),

  route({ operationId: 'getWebhook', method: 'get', path: '/webhooks/:id', summary: 'Get a webhook endpoint', tag: 'Webhooks', access: 'secret', permission: 'read', answers: ok('The endpoint.', A.webhookAnswer),
    handle: async ({ auth, params, services }) => reply(endpointJson(await services.webhooks.get(auth.projectId, params.id))) }),

  route({ operationId: 'updateWebhook', method: 'patch', path: '/webhooks/:id', summary: 'Update a webhook endpoint', tag: 'Webhooks', access: 'secret', permission: 'admin', body: patchWebhookSchema, answers: ok('The endpoint.', A.webhookAnswer),
    handle: async ({ auth, params, body, services }) => reply(endpointJson(await services.webhooks.update(auth.projectId, params.id, body, actorOf(auth)))) }),

  route({ operationId: 'deleteWebhook', method: 'delete', path: '/webhooks/:id', summary: 'Delete a webhook endpoint', tag: 'Webhooks', access: 'secret', permission: 'admin', answers: noContent('Deleted.'),
    async handle({ auth, params, services }) {
      await services.webhooks.remove(auth.projectId, params.id, actorOf(auth));
      return deleted;
    } }),

  route({ operationId: 'rotateWebhookSecret', method: 'post', path: '/webhooks/:id/rotate-secret', summary: 'Rotate the signing secret', tag: 'Webhooks', access: 'secret', permission: 'admin',
    answers: ok('The endpoint with its new secret.', A.webhookWithSecretAnswer),
    handle: async ({ auth, params, services }) => reply(withSecret(await services.webhooks.rotateSecret(auth.projectId, params.id, actorOf(auth)))) }),

  route({ operationId: 'listWebhookDeliveries', method: 'get', path: '/webhooks/:id/deliveries', summary: "List an endpoint's deliveries", tag: 'Webhooks', access: 'secret', permission: 'read', query: listWebhooksQuerySchema,
    answers: ok('A page of deliveries; total exact up to 1,000 (totalExact).', A.cappedPageOf(A.webhookDeliveryAnswer)), links: first('redeliverWebhook', 'deliveryId', 'id'),
    async handle({ auth, params, query: q, services }) {
      const { rows, total, totalExact } = await services.webhooks.deliveries(auth.projectId, params.id, { limit: q.limit, afterId: decodeCursor(q.cursor) });
      return reply({ ...toPage(rows, q.limit, total, deliveryJson), totalExact });
    } }),

  route({ operationId: 'redeliverWebhook', method: 'post', path: '/webhooks/:id/deliveries/:deliveryId/redeliver', summary: 'Deliver again', tag: 'Webhooks', access: 'secret', permission: 'write',
    params: { deliveryId: uuidParam }, answers: { 202: { description: 'Queued again, with the same webhook-id.', data: A.webhookDeliveryAnswer } },
    handle: async ({ auth, params, services }) => reply(deliveryJson(await services.webhooks.redeliver(auth.projectId, params.id, params.deliveryId)), 202) }),
];
