import Joi from 'joi';
import { EMAIL_STATUSES } from '../../emails/emails';
import type { EmailStatus } from '../../db/models/Email';
import { cursorSchema, limitSchema } from '../pagination';
import { dateSchema, emailSchema, uuidSchema } from './common';

/**
 * GET /emails. `to` is the recipient (as `to` is in /v1/send), so the date range is `since`/`until`, as in GET /events:
 * the email's creation (queued) time, `since` inclusive and `until` exclusive.
 */
export interface ListEmailsQuery {
  limit: number;
  cursor?: string;
  status?: EmailStatus;
  to?: string;
  contactId?: string;
  campaignId?: string;
  since?: Date;
  until?: Date;
}

export const listEmailsQuerySchema = Joi.object<ListEmailsQuery, true>({
  limit: limitSchema,
  cursor: cursorSchema,
  // Case-insensitive: `sent` is SENT.
  status: Joi.string().uppercase().valid(...EMAIL_STATUSES),
  to: emailSchema,
  contactId: uuidSchema.description('The emails of this contact (a contact of another project matches nothing).'),
  campaignId: uuidSchema,
  since: dateSchema,
  until: dateSchema,
});
