import Joi from 'joi';
import { conditionSchema } from '../../audience/condition';
import type { Audience, CampaignInput, CampaignStatus } from '../../campaigns/campaigns';
import { AB_LIMITS, AB_METRICS, VARIANT_KEYS, type AbTestSettings, type VariantInput, type VariantKey } from '../../campaigns/abTest';
import { SERIES_INTERVALS, type SeriesInterval } from '../../campaigns/series';
import { cursorSchema, limitSchema } from '../pagination';
import { dateSchema, emailSchema, EXAMPLE, example, headerTextSchema, uuidSchema } from './common';

// The campaign's types live with the business (campaigns/campaigns.ts); these schemas are checked against them.
export type CampaignBody = CampaignInput;

// subject, body and from may be null (or left out) when the campaign uses a template that gives them: each part the
// campaign has none of is the template's (campaigns/campaigns.ts checks that one or the other gives it).
const fields = {
  name: Joi.string().trim().min(1).max(200).example('June newsletter'),
  description: Joi.string().max(2000).allow('', null).example('What shipped in May.'),
  templateId: example(uuidSchema.allow(null), EXAMPLE.templateId)
    .description('A template of the project: its subject, body (HTML or Markdown), from, fromName and replyTo apply where the campaign has none of its own. `null` clears it.'),
  subject: headerTextSchema.min(1).max(998).allow(null).example('What’s new in June, {{ firstName }}'),
  body: Joi.string().min(1).max(2 * 1024 * 1024).allow(null).example('<h1>Hello {{ firstName }}</h1><p>Here is what shipped in May.</p>'),
  from: example(emailSchema.allow(null), 'news@example.com'),
  fromName: headerTextSchema.max(200).allow('', null).example('Acme'),
  replyTo: example(emailSchema.allow(null), 'support@example.com'),
  audienceType: Joi.string().valid('ALL', 'SEGMENT', 'FILTERED').example('SEGMENT'),
  segmentId: example(uuidSchema, EXAMPLE.segmentId),
  audienceFilter: conditionSchema,
  previewText: headerTextSchema.max(500).allow('', null).example('Three new features and a fix you asked for')
    .description('The line inboxes show after the subject: a hidden preheader at the top of the body, with Liquid like the body.'),
};

/** A variant of an A/B campaign: each part it gives replaces the campaign's (campaigns/abTest.ts resolveVariant). */
const variantSchema = Joi.object<VariantInput, true>({
  name: Joi.string().trim().max(100).allow('', null).example('Question subject'),
  subject: fields.subject,
  previewText: fields.previewText,
  fromName: fields.fromName,
  body: fields.body,
  templateId: example(uuidSchema.allow(null), EXAMPLE.templateId)
    .description('A template of the project: its subject and body apply where the variant has none of its own (the sender stays the campaign\'s).'),
}).example({ name: 'Question subject', subject: 'Ready for June, {{ firstName }}?' });

const abTestSchema = Joi.object<AbTestSettings, true>({
  samplePercent: Joi.number().integer().min(AB_LIMITS.minPercent).max(AB_LIMITS.maxPercent).required().example(20)
    .description('The share of the audience, in percent, that gets the variants first, split evenly and at random between them (the same people on a retry).'),
  waitMinutes: Joi.number().integer().min(AB_LIMITS.minWaitMinutes).max(AB_LIMITS.maxWaitMinutes).required().example(240)
    .description('How long after the sample has left the queue the winner is decided: 10 minutes to 7 days.'),
  metric: Joi.string().valid(...AB_METRICS).required().example('opens')
    .description('What decides: unique opens or unique clicks (as rates of delivered emails; proxies and scanners do not count), or `manual` (POST /campaigns/{id}/winner; the campaign waits for the choice).'),
}).allow(null).example({ samplePercent: 20, waitMinutes: 240, metric: 'opens' })
  .description('The A/B test of `variants` (both or neither). The winner goes to the rest of the audience as it is then, minus everyone already mailed.');

const abFields = {
  variants: Joi.array().items(variantSchema).min(AB_LIMITS.minVariants).max(AB_LIMITS.maxVariants).allow(null)
    .example([{ name: 'Statement', subject: 'June is here' }, { name: 'Question', subject: 'Ready for June, {{ firstName }}?' }])
    .description('2 to 5 variants (A, B, … in this order) of the message, tested on a sample before the winner goes to the rest (`abTest`). null clears them.'),
  abTest: abTestSchema,
};

const byAudience = {
  segmentId: fields.segmentId.when('audienceType', { is: 'SEGMENT', then: Joi.required(), otherwise: Joi.forbidden() }),
  audienceFilter: fields.audienceFilter.when('audienceType', { is: 'FILTERED', then: Joi.required(), otherwise: Joi.forbidden() }),
};

/** Without a template, a campaign gives its own subject, body and sender (a null one is refused by the business: `required`). */
const unlessTemplate = <S extends Joi.StringSchema>(schema: S): S => schema.when('templateId', { is: Joi.string().required(), otherwise: Joi.required() }) as S;

export const createCampaignSchema = Joi.object<CampaignBody, true>({
  ...fields,
  ...abFields,
  name: fields.name.required(),
  subject: unlessTemplate(fields.subject),
  body: unlessTemplate(fields.body),
  from: unlessTemplate(fields.from),
  audienceType: fields.audienceType.required(),
  ...byAudience,
}).example({
  name: 'June newsletter', subject: 'What’s new in June, {{ firstName }}', body: '<h1>Hello {{ firstName }}</h1><p>Here is what shipped in May.</p>',
  from: 'news@example.com', fromName: 'Acme', audienceType: 'SEGMENT', segmentId: EXAMPLE.segmentId,
});

export type PatchCampaignBody = Partial<CampaignBody>;

/** A patch may change the audience; segmentId/audienceFilter must then agree with the (new or current) type, checked in the route. */
export const patchCampaignSchema = Joi.object<PatchCampaignBody, true>({ ...fields, ...abFields }).min(1)
  .example({ subject: 'What’s new in June', description: 'Moved to the first Tuesday.' });

export interface SendCampaignBody {
  scheduledAt?: Date;
}

export const sendCampaignSchema = Joi.object<SendCampaignBody, true>({
  scheduledAt: example(dateSchema.greater('now').messages({ 'date.greater': 'scheduledAt must be in the future' }), '2030-06-03T08:00:00Z'),
});

export interface TestCampaignBody {
  emails: string[];
  variant?: VariantKey;
}

export const testCampaignSchema = Joi.object<TestCampaignBody, true>({
  emails: Joi.array().items(emailSchema).min(1).max(10).required().example(['ada@example.com', 'grace@example.com']),
  variant: Joi.string().valid(...VARIANT_KEYS).example('B')
    .description('An A/B campaign\'s variant to send copies of; without it, a copy of each variant to each address.'),
});

export interface ChooseWinnerBody {
  variant: VariantKey;
}

export const chooseWinnerSchema = Joi.object<ChooseWinnerBody, true>({
  variant: Joi.string().valid(...VARIANT_KEYS).required().example('B').description('The variant that goes to the rest of the audience.'),
});

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

export interface CampaignStatsQuery {
  series?: SeriesInterval;
}

export const campaignStatsQuerySchema = Joi.object<CampaignStatsQuery, true>({
  series: Joi.string().valid(...SERIES_INTERVALS).example('hour')
    .description('Adds `series`: opens and clicks per hour (the first 7 days since the campaign started) or per UTC day (the first 90).'),
});

export type AudienceBody = Audience;

/** An audience as a campaign takes it (the same fields and rules as create's). */
export const audienceSchema = Joi.object<AudienceBody, true>({
  audienceType: fields.audienceType.required(),
  ...byAudience,
}).example({ audienceType: 'SEGMENT', segmentId: EXAMPLE.segmentId });
