import Joi from 'joi';
import { conditionSchema, type AudienceCondition } from '../../audience/condition';
import type { SegmentInput, SegmentPatch } from '../../audience/segments';
import { cursorSchema, limitSchema } from '../pagination';
import { emailSchema } from './common';

// The segment's types live with the business (audience/segments.ts); these schemas are checked against them.
export type CreateSegmentBody = SegmentInput;

export const createSegmentSchema = Joi.object<CreateSegmentBody, true>({
  name: Joi.string().trim().min(1).max(200).required(),
  description: Joi.string().max(2000).allow('', null),
  type: Joi.string().valid('DYNAMIC', 'STATIC').required(),
  condition: conditionSchema.when('type', {
    is: 'DYNAMIC',
    then: Joi.required(),
    otherwise: Joi.forbidden().messages({ 'any.unknown': 'condition applies only to DYNAMIC segments' }),
  }),
});

export type PatchSegmentBody = SegmentPatch;

export const patchSegmentSchema = Joi.object<PatchSegmentBody, true>({
  name: Joi.string().trim().min(1).max(200),
  description: Joi.string().max(2000).allow('', null),
  condition: conditionSchema,
}).min(1);

export interface PreviewBody {
  condition: AudienceCondition;
}

export const previewSchema = Joi.object<PreviewBody, true>({ condition: conditionSchema.required() });

export interface MembersBody {
  emails: string[];
}

export const MAX_MEMBER_EMAILS = 1000;
export const membersSchema = Joi.object<MembersBody, true>({ emails: Joi.array().items(emailSchema).min(1).max(MAX_MEMBER_EMAILS).required() });

export interface ListQuery {
  limit: number;
  cursor?: string;
}

export const listQuerySchema = Joi.object<ListQuery, true>({ limit: limitSchema, cursor: cursorSchema });
