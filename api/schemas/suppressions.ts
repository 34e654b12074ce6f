import Joi from 'joi';
import { ERASED_REASON, SUPPRESSION_REASONS, type SuppressionReason } from '../../audience/suppressions';
import { cursorSchema, limitSchema } from '../pagination';
import { emailSchema } from './common';

export interface SuppressBody {
  email: string;
  /** Default `manual`; `hard_bounce` and `complaint` let a list be imported from another provider with its reasons. */
  reason?: SuppressionReason;
  /** A note kept with the entry (e.g. where it came from). */
  note?: string;
}

export const suppressSchema = Joi.object<SuppressBody, true>({
  email: emailSchema.required(),
  reason: Joi.string().valid(...SUPPRESSION_REASONS),
  note: Joi.string().max(500).example('Asked by phone to stop all mail.'),
});

export interface ListSuppressionsQuery {
  limit: number;
  cursor?: string;
  reason?: SuppressionReason | typeof ERASED_REASON;
}

export const listSuppressionsQuerySchema = Joi.object<ListSuppressionsQuery, true>({
  limit: limitSchema,
  cursor: cursorSchema,
  reason: Joi.string().valid(...SUPPRESSION_REASONS, ERASED_REASON),
});
