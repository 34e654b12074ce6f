import Joi from 'joi';
import { cursorSchema, limitSchema } from '../pagination';
import type { RequestData } from '../../core/requestData';
import { contactDataSchema, dateSchema, emailSchema, uuidSchema } from './common';

/** Event names: printable, 1 to 100 characters. Names under the service's own prefixes are the service's to record. */
export const eventNameSchema = Joi.string().trim().min(1).max(100).pattern(/^[^\p{Cc}]+$/u, 'printable characters');
export const RESERVED_EVENT_PREFIXES = ['email.', 'contact.', 'campaign.', 'execution.'];

export interface TrackBody {
  email: string;
  event: string;
  subscribed?: boolean;
  /** Merged into the contact and recorded with the event; entries may be `{ value, persistent? }` (common.ts DataEntry). */
  data?: RequestData;
}

export const trackSchema = Joi.object<TrackBody, true>({
  email: emailSchema.required(),
  event: eventNameSchema.required().custom((value: string, helpers) => (
    RESERVED_EVENT_PREFIXES.some((p) => value.toLowerCase().startsWith(p)) ? helpers.error('event.reserved') : value
  )).messages({ 'event.reserved': `event names beginning with ${RESERVED_EVENT_PREFIXES.map((p) => `"${p}"`).join(', ')} are reserved for the service` }),
  subscribed: Joi.boolean(),
  data: contactDataSchema,
});

export interface ListEventsQuery {
  limit: number;
  cursor?: string;
  name?: string;
  contactId?: string;
  since?: Date;
  until?: Date;
}

export const listEventsQuerySchema = Joi.object<ListEventsQuery, true>({
  limit: limitSchema,
  cursor: cursorSchema,
  name: eventNameSchema,
  contactId: uuidSchema,
  since: dateSchema,
  until: dateSchema,
});
