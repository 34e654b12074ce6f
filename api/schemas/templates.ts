import Joi from 'joi';
import { cursorSchema, limitSchema } from '../pagination';
import { contactDataSchema, emailSchema, EXAMPLE, example, headerTextSchema, uuidSchema } from './common';

import type { TemplateType } from '../../db/models/Template';
import type { PreviewInput, TemplateInput, TestInput } from '../../templates/templates';

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

/** Whom a preview or a test is rendered for: a contact of the project, and data, as POST /v1/send's `data`. */
const renderFor = {
  contactId: example(uuidSchema, EXAMPLE.contactId).description('Render for this contact of the project: its `email`, `data.*` and `contact.*`. Without it: a recipient with no data.'),
  data: contactDataSchema.description('Variables at the top level, as the `data` of POST /v1/send.'),
};

/**
 * POST /templates/preview: the editor's content, saved or not. An empty subject or body is a draft being written, and
 * renders as nothing; the rest is checked as a template's.
 */
export const previewTemplateSchema = Joi.object<PreviewInput, true>({
  subject: fields.subject.min(0).allow('').required(),
  body: fields.body.min(0).allow('').required(),
  bodyType: fields.bodyType,
  ...renderFor,
}).example({ subject: 'Welcome, {{ data.firstName }}', body: '# Hello {{ data.firstName | default: "there" }}\n\nYour plan: **{{ plan }}**.', bodyType: 'markdown', contactId: EXAMPLE.contactId, data: { plan: 'pro' } });

export const testTemplateSchema = Joi.object<TestInput, true>({
  to: Joi.array().items(emailSchema).min(1).max(10).description('Up to 10 addresses. Default: the address of the person signed in; an API key must name them.')
    .example(['ada@example.com']),
  ...renderFor,
});
