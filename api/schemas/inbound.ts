import Joi from 'joi';
import { cursorSchema, limitSchema } from '../pagination';
import { dateSchema, emailSchema, uuidSchema } from './common';
import { domainNameSchema } from './domains';

/** The inbound domains, routes and received messages (inbound/, issue 31). */

export interface CreateInboundDomainBody {
  domain: string;
}

export const createInboundDomainSchema = Joi.object<CreateInboundDomainBody, true>({
  domain: domainNameSchema.required().example('in.example.com').description('Usually a subdomain kept for receiving, e.g. in.example.com: its MX must point at Herald.'),
});

export interface ListQuery {
  limit: number;
  cursor?: string;
}

export const listInboundDomainsQuerySchema = Joi.object<ListQuery, true>({ limit: limitSchema, cursor: cursorSchema });

export interface ListRoutesQuery extends ListQuery {
  domainId?: string;
}

export const listInboundRoutesQuerySchema = Joi.object<ListRoutesQuery, true>({ limit: limitSchema, cursor: cursorSchema, domainId: uuidSchema });

const matchSchema = Joi.string().trim().max(320).example('support@in.example.com')
  .description('`name@domain` (that address), `name+*@domain` (name with any +tag) or `*@domain` (any address), at one of the project\'s inbound domains.');
const actionSchema = Joi.string().valid('webhook', 'store', 'reject').example('webhook')
  .description('`webhook`: stored, and delivered to `endpointId` as `email.received`; `store`: stored only; `reject`: refused at RCPT TO with 550 and `rejectMessage`.');
const prioritySchema = Joi.number().integer().min(0).max(100000).example(10).description('Lower first; a domain\'s routes are tried in this order (then oldest first), the first match decides.');
const endpointSchema = uuidSchema.allow(null).example('0197a12c-7b3e-7f04-a6d8-9c1e3a5b7d60').description('The webhook endpoint of a `webhook` route (POST /webhooks).');
const rejectSchema = Joi.string().trim().max(200).allow(null).example('This address does not take mail').description('The text of a `reject` route\'s 550 (printable ASCII; anything else becomes a space).');

export interface RouteBody {
  match: string;
  priority?: number;
  action: 'webhook' | 'store' | 'reject';
  endpointId?: string | null;
  rejectMessage?: string | null;
}

export const createInboundRouteSchema = Joi.object<RouteBody, true>({
  match: matchSchema.required(),
  priority: prioritySchema,
  action: actionSchema.required(),
  endpointId: endpointSchema.when('action', { is: 'webhook', then: Joi.required() }),
  rejectMessage: rejectSchema,
});

export const updateInboundRouteSchema = Joi.object<Partial<RouteBody>, true>({
  match: matchSchema,
  priority: prioritySchema,
  action: actionSchema,
  endpointId: endpointSchema,
  rejectMessage: rejectSchema,
}).min(1).example({ priority: 5 });

export interface ListInboundQuery extends ListQuery {
  route?: string;
  from?: string;
  to?: string;
  since?: Date;
  until?: Date;
}

export const listInboundQuerySchema = Joi.object<ListInboundQuery, true>({
  limit: limitSchema,
  cursor: cursorSchema,
  route: uuidSchema.description('The messages a route took.'),
  from: emailSchema.description('The From address.'),
  to: emailSchema.description('The recipient (envelope) a route took it for.'),
  since: dateSchema,
  until: dateSchema,
});

export const attachmentParam = Joi.number().integer().min(0).max(1000).description('The attachment\'s index (`attachments[].index`).');
