import Joi from 'joi';
import { cursorSchema, limitSchema } from '../pagination';
import { emailSchema, headerTextSchema } from './common';

import type { TemplateType } from '../../db/models/Template';
import type { TemplateInput } from '../../templates/templates';

// The template's types live with the business (templates/templates.ts); this schema is checked against them.
export type TemplateBody = TemplateInput;

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
  type?: TemplateType;
}

export const listTemplatesQuerySchema = Joi.object<ListTemplatesQuery, true>({
  limit: limitSchema,
  cursor: cursorSchema,
  type: fields.type,
});
