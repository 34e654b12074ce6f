import Joi from 'joi';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../../webhooks/types';
import { cursorSchema, limitSchema } from '../pagination';

/**
 * A receiver's URL: http or https, at most 2,000 characters, no credentials in it (they would be stored and shown in
 * clear: a receiver authenticates Herald by the signature). Whether its address may be reached is judged at delivery.
 */
export const webhookUrlSchema = Joi.string().example('https://hooks.example.com/herald').trim().max(2000).uri({ scheme: ['http', 'https'] })
  .custom((value: string, helpers) => {
    const url = new URL(value);
    if (url.username || url.password) return helpers.error('url.credentials');
    return value;
  })
  .messages({ 'url.credentials': 'url may not carry credentials (user:password@): receivers check the signature instead' });

export const webhookEventsSchema = Joi.array().items(Joi.string().valid(...WEBHOOK_EVENT_TYPES)).min(1).max(WEBHOOK_EVENT_TYPES.length * 2)
  .example(['email.sent', 'email.bounced']);

export interface CreateWebhookBody {
  url: string;
  events: WebhookEventType[];
  enabled?: boolean;
}

export const createWebhookSchema = Joi.object<CreateWebhookBody, true>({
  url: webhookUrlSchema.required(),
  events: webhookEventsSchema.required(),
  enabled: Joi.boolean(),
});

export type PatchWebhookBody = Partial<CreateWebhookBody>;

export const patchWebhookSchema = Joi.object<PatchWebhookBody, true>({
  url: webhookUrlSchema,
  events: webhookEventsSchema,
  enabled: Joi.boolean(),
}).min(1).messages({ 'object.min': 'body must contain url, events or enabled' });

export interface ListWebhooksQuery {
  limit: number;
  cursor?: string;
}

export const listWebhooksQuerySchema = Joi.object<ListWebhooksQuery, true>({ limit: limitSchema, cursor: cursorSchema });
