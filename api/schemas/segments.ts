import Joi from 'joi';
import { conditionSchema, type AudienceCondition } from '../../audience/condition';
import type { SegmentInput, SegmentPatch } from '../../audience/segments';
import { cursorSchema, limitSchema } from '../pagination';
import { emailSchema } from './common';

// The segment's types live with the business (audience/segments.ts); these schemas are checked against them.
export type CreateSegmentBody = SegmentInput;

export const createSegmentSchema = Joi.object<CreateSegmentBody, true>({
  name: Joi.string().trim().min(1).max(200).required().example('Pro customers'),
  description: Joi.string().max(2000).allow('', null).example('Everyone on the pro plan.'),
  type: Joi.string().valid('DYNAMIC', 'STATIC').required(),
  condition: conditionSchema.when('type', {
    is: 'DYNAMIC',
    then: Joi.required(),
    otherwise: Joi.forbidden().messages({ 'any.unknown': 'condition applies only to DYNAMIC segments' }),
  }),
}).example({
  name: 'Pro customers', description: 'Everyone on the pro plan.', type: 'DYNAMIC',
  condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] },
});

export type PatchSegmentBody = SegmentPatch;

export const patchSegmentSchema = Joi.object<PatchSegmentBody, true>({
  name: Joi.string().trim().min(1).max(200).example('Pro and team customers'),
  description: Joi.string().max(2000).allow('', null),
  condition: conditionSchema.example({ logic: 'OR', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }, { filters: [{ field: 'data.plan', operator: 'equals', value: 'team' }] }] }),
}).min(1);

export interface PreviewBody {
  condition: AudienceCondition;
}

export const previewSchema = Joi.object<PreviewBody, true>({ condition: conditionSchema.required() });

export interface MembersBody {
  emails: string[];
}

export const MAX_MEMBER_EMAILS = 1000;
export const membersSchema = Joi.object<MembersBody, true>({ emails: Joi.array().items(emailSchema).min(1).max(MAX_MEMBER_EMAILS).required().example(['ada@example.com', 'grace@example.com']) });

export interface ListQuery {
  limit: number;
  cursor?: string;
}

export const listQuerySchema = Joi.object<ListQuery, true>({ limit: limitSchema, cursor: cursorSchema });
