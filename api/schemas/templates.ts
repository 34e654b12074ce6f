import Joi from 'joi';
import { cursorSchema, limitSchema } from '../pagination';
import { emailSchema, headerTextSchema } from './common';

export type TemplateTypeValue = 'TRANSACTIONAL' | 'MARKETING';
export type BodyTypeValue = 'html' | 'markdown';

export interface TemplateBody {
  name: string;
  description?: string | null;
  subject: string;
  body: string;
  from?: string | null;
  fromName?: string | null;
  replyTo?: string | null;
  type?: TemplateTypeValue;
  /** How `body` is written (`type` is TRANSACTIONAL or MARKETING). */
  bodyType?: BodyTypeValue;
}

const fields = {
  name: Joi.string().trim().min(1).max(200),
  description: Joi.string().max(2000).allow('', null),
  subject: headerTextSchema.min(1).max(998),
  body: Joi.string().min(1).max(512 * 1024),
  from: emailSchema.allow(null),
  fromName: headerTextSchema.max(200).allow('', null),
  replyTo: emailSchema.allow(null),
  type: Joi.string().valid('TRANSACTIONAL', 'MARKETING'),
  bodyType: Joi.string().valid('html', 'markdown'),
};

export const createTemplateSchema = Joi.object<TemplateBody, true>({
  ...fields,
  name: fields.name.required(),
  subject: fields.subject.required(),
  body: fields.body.required(),
});

export type PatchTemplateBody = Partial<TemplateBody>;

export const patchTemplateSchema = Joi.object<PatchTemplateBody, true>(fields).min(1);

export interface ListTemplatesQuery {
  limit: number;
  cursor?: string;
  type?: TemplateTypeValue;
}

export const listTemplatesQuerySchema = Joi.object<ListTemplatesQuery, true>({
  limit: limitSchema,
  cursor: cursorSchema,
  type: fields.type,
});
