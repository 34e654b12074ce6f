import Joi from 'joi';
import { cursorSchema, limitSchema } from '../pagination';
import { contactDataSchema, emailSchema } from './common';

export interface UpsertContactBody {
  email: string;
  subscribed?: boolean;
  data?: Record<string, unknown>;
}

export const upsertContactSchema = Joi.object<UpsertContactBody, true>({
  email: emailSchema.required(),
  subscribed: Joi.boolean(),
  data: contactDataSchema,
});

export interface PatchContactBody {
  subscribed?: boolean;
  data?: Record<string, unknown>;
}

export const patchContactSchema = Joi.object<PatchContactBody, true>({
  subscribed: Joi.boolean(),
  data: contactDataSchema,
}).min(1).messages({ 'object.min': 'body must contain subscribed or data' });

export interface ListContactsQuery {
  limit: number;
  cursor?: string;
  subscribed?: boolean;
  search?: string;
}

export const listContactsQuerySchema = Joi.object<ListContactsQuery, true>({
  limit: limitSchema,
  cursor: cursorSchema,
  subscribed: Joi.boolean(),
  search: Joi.string().trim().lowercase().min(1).max(254),
});
