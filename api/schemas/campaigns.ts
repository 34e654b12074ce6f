import Joi from 'joi';
import { conditionSchema } from '../../audience/condition';
import type { CampaignInput, CampaignStatus } from '../../campaigns/campaigns';
import { cursorSchema, limitSchema } from '../pagination';
import { dateSchema, emailSchema, headerTextSchema, uuidSchema } from './common';

// The campaign's types live with the business (campaigns/campaigns.ts); these schemas are checked against them.
export type CampaignBody = CampaignInput;

const fields = {
  name: Joi.string().trim().min(1).max(200),
  description: Joi.string().max(2000).allow('', null),
  subject: headerTextSchema.min(1).max(998),
  body: Joi.string().min(1).max(2 * 1024 * 1024),
  from: emailSchema,
  fromName: headerTextSchema.max(200).allow('', null),
  replyTo: emailSchema.allow(null),
  audienceType: Joi.string().valid('ALL', 'SEGMENT', 'FILTERED'),
  segmentId: uuidSchema,
  audienceFilter: conditionSchema,
};

const byAudience = {
  segmentId: fields.segmentId.when('audienceType', { is: 'SEGMENT', then: Joi.required(), otherwise: Joi.forbidden() }),
  audienceFilter: fields.audienceFilter.when('audienceType', { is: 'FILTERED', then: Joi.required(), otherwise: Joi.forbidden() }),
};

export const createCampaignSchema = Joi.object<CampaignBody, true>({
  ...fields,
  name: fields.name.required(),
  subject: fields.subject.required(),
  body: fields.body.required(),
  from: fields.from.required(),
  audienceType: fields.audienceType.required(),
  ...byAudience,
});

export type PatchCampaignBody = Partial<CampaignBody>;

/** A patch may change the audience; segmentId/audienceFilter must then agree with the (new or current) type, checked in the route. */
export const patchCampaignSchema = Joi.object<PatchCampaignBody, true>(fields).min(1);

export interface SendCampaignBody {
  scheduledAt?: Date;
}

export const sendCampaignSchema = Joi.object<SendCampaignBody, true>({
  scheduledAt: dateSchema.greater('now').messages({ 'date.greater': 'scheduledAt must be in the future' }),
});

export interface TestCampaignBody {
  emails: string[];
}

export const testCampaignSchema = Joi.object<TestCampaignBody, true>({ emails: Joi.array().items(emailSchema).min(1).max(10).required() });

export interface ListCampaignsQuery {
  limit: number;
  cursor?: string;
  status?: CampaignStatus;
}

export const listCampaignsQuerySchema = Joi.object<ListCampaignsQuery, true>({
  limit: limitSchema,
  cursor: cursorSchema,
  status: Joi.string().valid('DRAFT', 'SCHEDULED', 'SENDING', 'SENT', 'CANCELLED', 'FAILED'),
});
