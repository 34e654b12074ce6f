import type { Knex } from 'knex';
import { newId } from '../core/ids';
import { notFound } from '../core/errors';
import type { PageRequest } from '../db/pages';
import {
  deleteEndpoint, findEndpoint, insertEndpoint, listDeliveries, listEndpoints, redeliver, updateEndpoint,
  type AttemptRow, type DeliveryRow, type EndpointRow,
} from '../db/queries/webhooks';
import { newWebhookSecret, sealWebhookSecret } from './secrets';
import type { WebhookEventType } from './types';
import { audited, type Actor } from '../audit/log';

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

/** An endpoint with its secret in clear: the answer of a create or a rotation, the only ones that show it. */
export type EndpointWithSecret = Omit<EndpointRow, 'secret'> & { secret: string };

/** The `webhook-id` of a delivery: the same on every attempt and redelivery. */
export const messageId = (deliveryId: string) => `msg_${deliveryId}`;

/** Creates an endpoint; its secret is in this answer only. */
export async function createWebhook(deps: WebhookDeps, projectId: string, input: NewEndpoint): Promise<EndpointWithSecret> {
  const id = newId();
  const secret = newWebhookSecret();
  const row = await insertEndpoint(deps.knex, {
    id, projectId, url: input.url, events: [...new Set(input.events)], enabled: input.enabled ?? true,
    secret: sealWebhookSecret(deps.secret, projectId, id, secret),
  });
  return { ...row, secret };
}

export async function listWebhooks(deps: WebhookDeps, projectId: string, page: PageRequest) {
  return listEndpoints(deps.knex, projectId, page);
}

export async function getWebhook(deps: WebhookDeps, projectId: string, id: string): Promise<EndpointRow> {
  const row = await findEndpoint(deps.knex, projectId, id);
  if (!row) throw notFound('Webhook');
  return row;
}

export async function updateWebhook(deps: WebhookDeps, projectId: string, id: string, patch: Partial<NewEndpoint>): Promise<EndpointRow> {
  const row = await updateEndpoint(deps.knex, projectId, id, { ...patch, ...(patch.events ? { events: [...new Set(patch.events)] } : {}) });
  if (!row) throw notFound('Webhook');
  return row;
}

export async function deleteWebhook(deps: WebhookDeps, projectId: string, id: string): Promise<void> {
  if (!(await deleteEndpoint(deps.knex, projectId, id))) throw notFound('Webhook');
}

/**
 * A new secret, in this answer only. Deliveries signed from now on use it, including retries of earlier messages
 * (each attempt is signed when it is made).
 */
export async function rotateWebhookSecret(deps: WebhookDeps, projectId: string, id: string): Promise<EndpointWithSecret> {
  const secret = newWebhookSecret();
  const row = await updateEndpoint(deps.knex, projectId, id, { secret: sealWebhookSecret(deps.secret, projectId, id, secret) });
  if (!row) throw notFound('Webhook');
  return { ...row, secret };
}

export async function listWebhookDeliveries(deps: WebhookDeps, projectId: string, endpointId: string, page: PageRequest) {
  // The page alone when it has rows: they are the project's deliveries to this endpoint (both in the page's key), and a
  // delivery is made from its endpoint's row in its project (db/queries/events.ts, `hooked`) and goes with it (ON DELETE CASCADE).
  // Only an empty page asks for the endpoint (a 404 for another project's): one statement for a page of deliveries,
  // where the lookup beside it was a second on another connection (as a workflow's executions: automations.ts).
  const deliveries = await listDeliveries(deps.knex, projectId, endpointId, page);
  if (deliveries.rows.length === 0 && !(await findEndpoint(deps.knex, projectId, endpointId))) throw notFound('Webhook');
  return deliveries;
}

/** Sends one delivery again, with the same `webhook-id` and payload. */
export async function redeliverWebhook(deps: WebhookDeps, projectId: string, endpointId: string, deliveryId: string): Promise<DeliveryRow & { attempt_log: AttemptRow[] }> {
  const row = await redeliver(deps.knex, projectId, endpointId, deliveryId);
  if (!row) throw notFound('Webhook delivery');
  return { ...row, attempt_log: [] };
}

/** A receiver's URL as the audit log keeps it: its origin and path, without the query, where receivers put tokens. */
export function urlForAudit(url: string): string {
  const u = new URL(url);
  return `${u.origin}${u.pathname}`;
}

/** The functions above as one object over the app's deps, the API's way in (like campaignService). */
export function webhookService(deps: WebhookDeps) {
  return {
    list: (projectId: string, page: PageRequest) => listWebhooks(deps, projectId, page),
    get: (projectId: string, id: string) => getWebhook(deps, projectId, id),
    // Changes are audited in their transaction (audit/log.ts): where the URL points and the events, never the secret.
    create: (projectId: string, input: NewEndpoint, actor: Actor) =>
      audited(deps.knex, projectId, actor, (w: EndpointWithSecret) => ({ operation: 'createWebhook', resourceType: 'webhook', resourceId: w.id, details: { url: urlForAudit(w.url), events: w.events } }),
        (trx) => createWebhook({ ...deps, knex: trx }, projectId, input)),
    update: (projectId: string, id: string, patch: Partial<NewEndpoint>, actor: Actor) =>
      audited(deps.knex, projectId, actor, { operation: 'updateWebhook', resourceType: 'webhook', resourceId: id, details: { changed: Object.keys(patch) } },
        (trx) => updateWebhook({ ...deps, knex: trx }, projectId, id, patch)),
    remove: (projectId: string, id: string, actor: Actor) =>
      audited(deps.knex, projectId, actor, { operation: 'deleteWebhook', resourceType: 'webhook', resourceId: id }, (trx) => deleteWebhook({ ...deps, knex: trx }, projectId, id)),
    rotateSecret: (projectId: string, id: string, actor: Actor) =>
      audited(deps.knex, projectId, actor, { operation: 'rotateWebhookSecret', resourceType: 'webhook', resourceId: id }, (trx) => rotateWebhookSecret({ ...deps, knex: trx }, projectId, id)),
    deliveries: (projectId: string, endpointId: string, page: PageRequest) => listWebhookDeliveries(deps, projectId, endpointId, page),
    redeliver: (projectId: string, endpointId: string, deliveryId: string) => redeliverWebhook(deps, projectId, endpointId, deliveryId),
  };
}

export type Webhooks = ReturnType<typeof webhookService>;
