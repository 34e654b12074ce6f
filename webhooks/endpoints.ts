import type { Knex } from 'knex';
import { v7 as uuidv7 } from 'uuid';
import { notFound } from '../core/errors';
import type { PageRequest } from '../db/pages';
import {
  deleteEndpoint, findEndpoint, insertEndpoint, listDeliveries, listEndpoints, redeliver, updateEndpoint,
  type AttemptRow, type DeliveryRow, type EndpointRow,
} from '../db/queries/webhooks';
import { newWebhookSecret, sealWebhookSecret } from './secrets';
import type { WebhookDeliveryJson, WebhookEndpointJson, WebhookEventType, WebhookPayload } from './types';

/**
 * A project's outbound webhook endpoints (POST/GET/PATCH/DELETE /webhooks). Every call is scoped to the caller's
 * project: another project's id is not found. URLs and event types arrive validated (api/schemas/webhooks.ts); the
 * address a URL reaches is judged at each delivery (worker/webhookQueue.ts), where DNS answers are.
 */

export interface WebhookDeps {
  knex: Knex;
  /** The installation secret, which seals endpoint secrets at rest. */
  secret: Buffer;
}

export interface NewEndpoint {
  url: string;
  events: WebhookEventType[];
  enabled?: boolean;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function endpointJson(r: EndpointRow): WebhookEndpointJson {
  return {
    id: r.id, url: r.url, events: r.events as WebhookEventType[], enabled: r.enabled,
    status: r.failing_since ? 'failing' : 'healthy', failingSince: iso(r.failing_since), lastError: r.last_error,
    createdAt: r.created_at.toISOString(), updatedAt: r.updated_at.toISOString(),
  };
}

/** The `webhook-id` of a delivery: the same on every attempt and redelivery. */
export const messageId = (deliveryId: string) => `msg_${deliveryId}`;

export function deliveryJson(r: DeliveryRow & { attempt_log: AttemptRow[] }): WebhookDeliveryJson {
  return {
    id: r.id, messageId: messageId(r.id), type: r.type, status: r.status, attempts: r.attempts,
    nextAttemptAt: r.status === 'PENDING' ? r.next_attempt_at.toISOString() : null,
    lastStatusCode: r.last_status_code, lastLatencyMs: r.last_latency_ms, lastError: r.last_error,
    deliveredAt: iso(r.delivered_at), createdAt: r.created_at.toISOString(), payload: r.payload as unknown as WebhookPayload,
    attemptLog: r.attempt_log.map((a) => ({ attempt: a.attempt, statusCode: a.status_code, latencyMs: a.latency_ms, error: a.error, at: a.created_at.toISOString() })),
  };
}

/** Creates an endpoint; its secret is in this answer only. */
export async function createWebhook(deps: WebhookDeps, projectId: string, input: NewEndpoint): Promise<WebhookEndpointJson & { secret: string }> {
  const id = uuidv7();
  const secret = newWebhookSecret();
  const row = await insertEndpoint(deps.knex, {
    id, projectId, url: input.url, events: [...new Set(input.events)], enabled: input.enabled ?? true,
    secret: sealWebhookSecret(deps.secret, projectId, id, secret),
  });
  return { ...endpointJson(row), secret };
}

export async function listWebhooks(deps: WebhookDeps, projectId: string, page: PageRequest) {
  const { rows, total } = await listEndpoints(deps.knex, projectId, page);
  return { rows: rows.map((r) => ({ ...endpointJson(r), id: r.id })), total };
}

export async function getWebhook(deps: WebhookDeps, projectId: string, id: string): Promise<WebhookEndpointJson> {
  const row = await findEndpoint(deps.knex, projectId, id);
  if (!row) throw notFound('Webhook');
  return endpointJson(row);
}

export async function updateWebhook(deps: WebhookDeps, projectId: string, id: string, patch: Partial<NewEndpoint>): Promise<WebhookEndpointJson> {
  const row = await updateEndpoint(deps.knex, projectId, id, { ...patch, ...(patch.events ? { events: [...new Set(patch.events)] } : {}) });
  if (!row) throw notFound('Webhook');
  return endpointJson(row);
}

export async function deleteWebhook(deps: WebhookDeps, projectId: string, id: string): Promise<void> {
  if (!(await deleteEndpoint(deps.knex, projectId, id))) throw notFound('Webhook');
}

/**
 * A new secret, in this answer only. Deliveries signed from now on use it, including retries of earlier messages
 * (each attempt is signed when it is made).
 */
export async function rotateWebhookSecret(deps: WebhookDeps, projectId: string, id: string): Promise<WebhookEndpointJson & { secret: string }> {
  const secret = newWebhookSecret();
  const row = await updateEndpoint(deps.knex, projectId, id, { secret: sealWebhookSecret(deps.secret, projectId, id, secret) });
  if (!row) throw notFound('Webhook');
  return { ...endpointJson(row), secret };
}

export async function listWebhookDeliveries(deps: WebhookDeps, projectId: string, endpointId: string, page: PageRequest) {
  if (!(await findEndpoint(deps.knex, projectId, endpointId))) throw notFound('Webhook');
  const { rows, total } = await listDeliveries(deps.knex, projectId, endpointId, page);
  return { rows: rows.map(deliveryJson), total };
}

/** Sends one delivery again, with the same `webhook-id` and payload. */
export async function redeliverWebhook(deps: WebhookDeps, projectId: string, endpointId: string, deliveryId: string): Promise<WebhookDeliveryJson> {
  const row = await redeliver(deps.knex, projectId, endpointId, deliveryId);
  if (!row) throw notFound('Webhook delivery');
  return deliveryJson({ ...row, attempt_log: [] });
}
