import Joi from 'joi';
import { cursorSchema, limitSchema } from '../pagination';
import { emailSchema, example, headerTextSchema } from './common';

import type { TemplateType } from '../../db/models/Template';
import type { TemplateInput } from '../../templates/templates';

// The template's types live with the business (templates/templates.ts); this schema is checked against them.
export type TemplateBody = TemplateInput;

const fields = {
  name: Joi.string().trim().min(1).max(200).example('Password reset'),
  description: Joi.string().max(2000).allow('', null).example('Sent when someone asks to reset their password.'),
  subject: headerTextSchema.min(1).max(998).example('Reset your password'),
  body: Joi.string().min(1).max(512 * 1024).example('<p>Hello {{ name }},</p><p><a href="{{ resetUrl }}">Choose a new password</a> (valid for one hour).</p>'),
  from: example(emailSchema.allow(null), 'hello@example.com'),
  fromName: headerTextSchema.max(200).allow('', null).example('Acme'),
  replyTo: example(emailSchema.allow(null), 'support@example.com'),
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
