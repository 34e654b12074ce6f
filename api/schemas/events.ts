import Joi from 'joi';
import { cursorSchema, limitSchema } from '../pagination';
import type { TrackInput } from '../../events/customEvents';
import { contactDataSchema, dateSchema, emailSchema, uuidSchema } from './common';

/** Event names: printable, 1 to 100 characters. Names under the service's own prefixes are the service's to record. */
// No control characters (Unicode's Cc: U+0000-U+001F and U+007F-U+009F), spelt as ranges rather than \p{Cc} so that
// the pattern means the same in every regular-expression engine that reads the OpenAPI document (schemathesis's too).
// eslint-disable-next-line no-control-regex
export const eventNameSchema = Joi.string().example('signed-up').trim().min(1).max(100).pattern(/^[^\u0000-\u001f\u007f-\u009f]+$/, 'printable characters');
export const RESERVED_EVENT_PREFIXES = ['email.', 'contact.', 'campaign.', 'execution.'];

// The tracked event's type lives with the business (events/customEvents.ts); this schema is checked against it.
export type TrackBody = TrackInput;

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
