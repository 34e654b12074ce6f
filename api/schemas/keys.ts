import type { AuditFilter } from '../../audit/log';
import Joi from 'joi';
import type { KeyScope } from '../../projects/roles';
import { cursorSchema, limitSchema } from '../pagination';
import { dateSchema, uuidSchema } from './common';
import { domainNameSchema } from './domains';

/** POST /keys: a new secret key (projects/apiKeys.ts NewKey). */
export interface CreateKeyBody {
  name: string;
  scope: KeyScope;
  domains?: string[];
}

export const createKeySchema = Joi.object<CreateKeyBody, true>({
  name: Joi.string().trim().min(1).max(200).required().example('Billing service').description('What the key is for ("CI", "billing service").'),
  scope: Joi.string().valid('full', 'sending').required().example('sending')
    .description('`full`: what an admin may do, through the API; `sending`: only /v1/send, /v1/track, /v1/verify and SMTP submission.'),
  domains: Joi.array().items(domainNameSchema).min(1).max(50).unique()
    .description('Sending domains the key may send From (their subdomains too); absent: any verified domain of the project.'),
});

export interface ListKeysQuery {
  limit: number;
  cursor?: string;
}

export const listKeysQuerySchema = Joi.object<ListKeysQuery, true>({ limit: limitSchema, cursor: cursorSchema });

/** GET /audit-log: `since` inclusive, `until` exclusive, as in GET /events. */
export interface ListAuditQuery extends AuditFilter {
  limit: number;
  cursor?: string;
}

export const listAuditQuerySchema = Joi.object<ListAuditQuery, true>({
  limit: limitSchema,
  cursor: cursorSchema,
  actor: uuidSchema.description("A key's or a user's id."),
  operation: Joi.string().max(100).description('An operationId (deleteContact) or a CLI verb (key.create).'),
  resourceType: Joi.string().max(50).description('key, contact, template, segment, campaign, workflow, execution, domain, webhook, suppression, settings.'),
  resourceId: Joi.string().max(320),
  since: dateSchema,
  until: dateSchema,
});
