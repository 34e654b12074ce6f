import Joi from 'joi';
import * as A from '../schemas/answers';
import { createCampaignSchema, listCampaignsQuerySchema, patchCampaignSchema, sendCampaignSchema, testCampaignSchema } from '../schemas/campaigns';
import { listContactsQuerySchema, patchContactSchema, upsertContactSchema } from '../schemas/contacts';
import { createDomainSchema, listDomainsQuerySchema } from '../schemas/domains';
import { listEmailsQuerySchema } from '../schemas/emails';
import { listEventsQuerySchema, trackSchema } from '../schemas/events';
import { createSegmentSchema, listQuerySchema, membersSchema, patchSegmentSchema, previewSchema } from '../schemas/segments';
import { sendSchema } from '../schemas/send';
import { settingsPatchSchema } from '../schemas/settings';
import { listSuppressionsQuerySchema, suppressSchema } from '../schemas/suppressions';
import { createTemplateSchema, listTemplatesQuerySchema, patchTemplateSchema } from '../schemas/templates';
import { verifyBodySchema } from '../schemas/verify';
import { createWebhookSchema, listWebhooksQuerySchema, patchWebhookSchema } from '../schemas/webhooks';
import { createWorkflowSchema, listExecutionsQuerySchema, listWorkflowsQuerySchema, patchWorkflowSchema } from '../schemas/workflows';

/**
 * Every route of the app (api/app.ts), declared once for the OpenAPI document (api/openapi/document.ts): its method and
 * path as the router spells them, the Joi schemas that validate its request (the very ones the route uses), its
 * answers and the error statuses it can give. test/api/openapi.test.ts walks the routers and fails when a route and
 * this list disagree.
 */

/** Who may call: nobody needs a key, secret keys only, or secret and public keys (POST /v1/track). */
export type Access = 'open' | 'secret' | 'secretOrPublic';

export type Media = 'json' | 'html' | 'gif' | 'javascript' | 'text' | 'none';

export interface Answer {
  description: string;
  /** The `data` of the success envelope; `raw` is the whole body (GET /health); absent for no body. */
  data?: Joi.Schema;
  raw?: Joi.Schema;
  media?: Media;
  headers?: Record<string, string>;
}

export interface Link {
  /** The operation to call next, with the created resource's field as its path parameter. */
  operationId: string;
  parameters: Record<string, string>;
}

export interface Operation {
  operationId: string;
  method: 'get' | 'post' | 'patch' | 'delete';
  /** As @koa/router has it (`/contacts/:id`). */
  path: string;
  summary: string;
  description?: string;
  tag: string;
  access: Access;
  /** The JSON body's schema; its absence means the route reads no body. */
  body?: Joi.ObjectSchema;
  /** Whether the body may be left out (POST /campaigns/:id/send sends now with none). */
  bodyOptional?: boolean;
  query?: Joi.ObjectSchema;
  /** Path parameters' schemas; `:id` and `:executionId` are UUIDs unless said otherwise. */
  params?: Record<string, Joi.Schema>;
  /** Honours the Idempotency-Key header (api/idempotency.ts). */
  idempotent?: boolean;
  answers: Record<number, Answer>;
  /** Error statuses beyond those every route of its kind can give (see document.ts commonErrors). */
  errors?: number[];
  links?: Record<string, Link>;
}

const uuidParam = Joi.string().guid().description('A UUID (upper case is accepted and lower-cased); anything else is a 404.');
const token = Joi.string().description('The signed token from the link in the email.');

const ok = (description: string, data: Joi.Schema): Record<number, Answer> => ({ 200: { description, data } });
const created = (description: string, data: Joi.Schema): Record<number, Answer> => ({ 201: { description, data } });
const noContent = (description: string): Record<number, Answer> => ({ 204: { description, media: 'none' } });

/** The first item of a list answer, to an operation that takes its id (with the list's own path id, if any). */
const first = (operationId: string, param = 'id', parent?: string): Record<string, Link> => ({
  [operationId]: { operationId, parameters: { ...(parent ? { [parent]: `$request.path.${parent}` } : {}), [param]: '$response.body#/data/items/0/id' } },
});

/** Links from a create answer to the get, patch and delete of what it created (stateful testing, clients). */
function crud(kind: string, id = '$response.body#/data/id', param = 'id', ops: string[] = ['get', 'update', 'delete']): Record<string, Link> {
  const links: Record<string, Link> = {};
  // `get` is getContact for kind Contact; `sendCampaign:` names its operation whole.
  for (const op of ops) {
    const operationId = op.endsWith(':') ? op.slice(0, -1) : `${op}${kind}`;
    links[operationId] = { operationId, parameters: { [param]: id } };
  }
  return links;
}

export const OPERATIONS: Operation[] = [
  // The open router: no key.
  { operationId: 'health', method: 'get', path: '/health', summary: 'Health check', tag: 'Service', access: 'open',
    description: 'No key needed: 200 when the database answers, 503 otherwise (load balancers, compose healthchecks).',
    answers: { 200: { description: 'Herald and its database answer.', raw: A.healthAnswer }, 503: { description: 'The database does not answer.', raw: A.healthAnswer } } },
  { operationId: 'getOpenApiDocument', method: 'get', path: '/openapi.json', summary: 'This OpenAPI document', tag: 'Service', access: 'open',
    answers: { 200: { description: 'The OpenAPI 3.1 document of this API.', raw: Joi.object().unknown(true) } } },
  { operationId: 'getMetrics', method: 'get', path: '/metrics', summary: 'Prometheus metrics', tag: 'Service', access: 'open',
    description: 'The Prometheus text exposition (docs/api.md, "Metrics"). No API key: when METRICS_TOKEN is set, `Authorization: Bearer <METRICS_TOKEN>` is required (401 otherwise). With METRICS_PORT set it is served on that port instead, and this one answers 404.',
    answers: { 200: { description: 'The metrics, in the Prometheus text format 0.0.4.', media: 'text' } }, errors: [401] },
  { operationId: 'getReference', method: 'get', path: '/docs', summary: 'API reference page (Redoc)', tag: 'Service', access: 'open',
    answers: { 200: { description: 'The reference rendered by Redoc, served by Herald itself.', media: 'html' } } },
  { operationId: 'getReferenceScript', method: 'get', path: '/docs/redoc.standalone.js', summary: 'Redoc script of the reference page', tag: 'Service', access: 'open',
    answers: { 200: { description: "Redoc's standalone bundle.", media: 'javascript' } } },
  { operationId: 'unsubscribePage', method: 'get', path: '/unsubscribe/:token', summary: 'Unsubscribe confirmation page', tag: 'Recipients', access: 'open',
    params: { token }, description: 'Shows a confirmation form; following the link alone unsubscribes no one (link scanners).',
    answers: { 200: { description: 'The confirmation page.', media: 'html' }, 404: { description: 'The link is not valid.', media: 'html' } } },
  { operationId: 'unsubscribe', method: 'post', path: '/unsubscribe/:token', summary: 'Unsubscribe (also the RFC 8058 one-click target)', tag: 'Recipients', access: 'open',
    params: { token }, answers: { 200: { description: 'Unsubscribed (also when already).', media: 'html' }, 404: { description: 'The link is not valid.', media: 'html' } } },
  { operationId: 'trackOpen', method: 'get', path: '/t/o/:token', summary: 'Open pixel of tracked mail', tag: 'Recipients', access: 'open',
    params: { token }, answers: { 200: { description: 'A transparent 1×1 GIF (never cached); the open is recorded.', media: 'gif' } }, errors: [404] },
  { operationId: 'trackClick', method: 'get', path: '/t/c/:token', summary: 'Click redirect of tracked mail', tag: 'Recipients', access: 'open',
    params: { token }, answers: { 302: { description: 'To the link the token names; the click is recorded.', media: 'none', headers: { Location: 'The link.' } } }, errors: [404] },

  // Sending and tracking (the public API).
  { operationId: 'send', method: 'post', path: '/v1/send', summary: 'Send an email', tag: 'Sending', access: 'secret', body: sendSchema, idempotent: true,
    description: '`subject` and `body` are required unless `template` is given. Stores one QUEUED email per recipient (or SUPPRESSED, or SKIPPED) and answers at once; delivery is asynchronous. Body limit 15 MB.',
    answers: ok('Stored: one entry per recipient.', A.sendAnswer),
    links: { getEmail: { operationId: 'getEmail', parameters: { id: '$response.body#/data/emails/0/email' } } } },
  { operationId: 'track', method: 'post', path: '/v1/track', summary: 'Track an event', tag: 'Sending', access: 'secretOrPublic', body: trackSchema, idempotent: true,
    description: 'Upserts the contact and records the event. A public key (pk_) is accepted here only, and sets `subscribed` only for a contact it creates.',
    answers: ok('Recorded.', A.trackAnswer) },
  { operationId: 'verify', method: 'post', path: '/v1/verify', summary: 'Verify an address', tag: 'Sending', access: 'secret', body: verifyBodySchema,
    answers: ok('The verdict (a malformed address is an answer, valid: false, not an error).', A.verifyAnswer) },

  // Contacts.
  { operationId: 'listContacts', method: 'get', path: '/contacts', summary: 'List contacts', tag: 'Contacts', access: 'secret', query: listContactsQuerySchema,
    answers: ok('A page of contacts, newest first.', A.contactPageAnswer), links: first('getContact') },
  { operationId: 'createContact', method: 'post', path: '/contacts', summary: 'Create or update a contact by email', tag: 'Contacts', access: 'secret', body: upsertContactSchema,
    answers: { 201: { description: 'Created.', data: A.savedContactAnswer }, 200: { description: 'Updated (the address was known).', data: A.savedContactAnswer } },
    links: crud('Contact') },
  { operationId: 'getContact', method: 'get', path: '/contacts/:id', summary: 'Get a contact', tag: 'Contacts', access: 'secret', answers: ok('The contact.', A.contactAnswer) },
  { operationId: 'updateContact', method: 'patch', path: '/contacts/:id', summary: 'Update a contact', tag: 'Contacts', access: 'secret', body: patchContactSchema, answers: ok('The contact.', A.contactAnswer) },
  { operationId: 'deleteContact', method: 'delete', path: '/contacts/:id', summary: 'Delete a contact', tag: 'Contacts', access: 'secret', answers: noContent('Deleted.') },

  // Templates.
  { operationId: 'listTemplates', method: 'get', path: '/templates', summary: 'List templates', tag: 'Templates', access: 'secret', query: listTemplatesQuerySchema, answers: ok('A page of templates.', A.pageOf(A.templateAnswer)) },
  { operationId: 'createTemplate', method: 'post', path: '/templates', summary: 'Create a template', tag: 'Templates', access: 'secret', body: createTemplateSchema,
    answers: created('Created.', A.templateAnswer), links: crud('Template') },
  { operationId: 'getTemplate', method: 'get', path: '/templates/:id', summary: 'Get a template', tag: 'Templates', access: 'secret', answers: ok('The template.', A.templateAnswer) },
  { operationId: 'updateTemplate', method: 'patch', path: '/templates/:id', summary: 'Update a template', tag: 'Templates', access: 'secret', body: patchTemplateSchema, answers: ok('The template.', A.templateAnswer) },
  { operationId: 'deleteTemplate', method: 'delete', path: '/templates/:id', summary: 'Delete a template', tag: 'Templates', access: 'secret', answers: noContent('Deleted.'), errors: [409] },

  // Segments.
  { operationId: 'listSegments', method: 'get', path: '/segments', summary: 'List segments', tag: 'Segments', access: 'secret', query: listQuerySchema, answers: ok('A page of segments.', A.pageOf(A.segmentAnswer)) },
  { operationId: 'createSegment', method: 'post', path: '/segments', summary: 'Create a segment', tag: 'Segments', access: 'secret', body: createSegmentSchema,
    description: '`condition` is required for a DYNAMIC segment and refused for a STATIC one.',
    answers: created('Created.', A.segmentAnswer), links: crud('Segment', undefined, undefined, ['get', 'update', 'delete', 'listSegmentContacts:', 'addSegmentMembers:', 'removeSegmentMembers:']) },
  { operationId: 'previewSegment', method: 'post', path: '/segments/preview', summary: 'Preview a condition', tag: 'Segments', access: 'secret', body: previewSchema,
    answers: ok('How many contacts match, and the first of them.', A.segmentPreviewAnswer) },
  { operationId: 'getSegment', method: 'get', path: '/segments/:id', summary: 'Get a segment', tag: 'Segments', access: 'secret', answers: ok('The segment.', A.segmentAnswer) },
  { operationId: 'updateSegment', method: 'patch', path: '/segments/:id', summary: 'Update a segment', tag: 'Segments', access: 'secret', body: patchSegmentSchema, answers: ok('The segment.', A.segmentAnswer), errors: [409] },
  { operationId: 'deleteSegment', method: 'delete', path: '/segments/:id', summary: 'Delete a segment', tag: 'Segments', access: 'secret', answers: noContent('Deleted.'), errors: [409] },
  { operationId: 'listSegmentContacts', method: 'get', path: '/segments/:id/contacts', summary: "List a segment's contacts", tag: 'Segments', access: 'secret', query: listQuerySchema,
    answers: ok('A page of its contacts.', A.pageOf(A.contactAnswer)) },
  { operationId: 'addSegmentMembers', method: 'post', path: '/segments/:id/members', summary: 'Add members to a STATIC segment', tag: 'Segments', access: 'secret', body: membersSchema,
    answers: ok('Added (unknown addresses become contacts).', A.membersAddedAnswer), errors: [409] },
  { operationId: 'removeSegmentMembers', method: 'delete', path: '/segments/:id/members', summary: 'Remove members from a STATIC segment', tag: 'Segments', access: 'secret', body: membersSchema,
    answers: ok('Removed.', A.membersRemovedAnswer), errors: [409] },

  // Campaigns.
  { operationId: 'listCampaigns', method: 'get', path: '/campaigns', summary: 'List campaigns', tag: 'Campaigns', access: 'secret', query: listCampaignsQuerySchema, answers: ok('A page of campaigns.', A.pageOf(A.campaignAnswer)) },
  { operationId: 'createCampaign', method: 'post', path: '/campaigns', summary: 'Create a campaign (DRAFT)', tag: 'Campaigns', access: 'secret', body: createCampaignSchema,
    description: '`segmentId` is required for a SEGMENT audience and `audienceFilter` for a FILTERED one; each is refused otherwise.',
    answers: created('Created.', A.campaignAnswer),
    links: crud('Campaign', undefined, undefined, ['get', 'update', 'delete', 'getCampaignStats:', 'sendCampaign:', 'cancelCampaign:', 'testCampaign:']) },
  { operationId: 'getCampaign', method: 'get', path: '/campaigns/:id', summary: 'Get a campaign', tag: 'Campaigns', access: 'secret', answers: ok('The campaign.', A.campaignAnswer) },
  { operationId: 'updateCampaign', method: 'patch', path: '/campaigns/:id', summary: 'Update a DRAFT campaign', tag: 'Campaigns', access: 'secret', body: patchCampaignSchema, answers: ok('The campaign.', A.campaignAnswer), errors: [409] },
  { operationId: 'deleteCampaign', method: 'delete', path: '/campaigns/:id', summary: 'Delete a DRAFT or CANCELLED campaign', tag: 'Campaigns', access: 'secret', answers: noContent('Deleted.'), errors: [409] },
  { operationId: 'sendCampaign', method: 'post', path: '/campaigns/:id/send', summary: 'Send or schedule a campaign', tag: 'Campaigns', access: 'secret', body: sendCampaignSchema, bodyOptional: true,
    description: '`{}` (or no body) sends now; `{ "scheduledAt" }` schedules.', answers: ok('The campaign, SENDING or SCHEDULED.', A.campaignAnswer), errors: [409] },
  { operationId: 'cancelCampaign', method: 'post', path: '/campaigns/:id/cancel', summary: 'Cancel a scheduled or sending campaign', tag: 'Campaigns', access: 'secret',
    answers: ok('The campaign, CANCELLED.', A.campaignAnswer), errors: [409] },
  { operationId: 'testCampaign', method: 'post', path: '/campaigns/:id/test', summary: 'Send [TEST] copies', tag: 'Campaigns', access: 'secret', body: testCampaignSchema,
    answers: ok('The test emails.', A.campaignTestAnswer) },
  { operationId: 'getCampaignStats', method: 'get', path: '/campaigns/:id/stats', summary: "A campaign's statistics", tag: 'Campaigns', access: 'secret', answers: ok('The statistics.', A.campaignStatsAnswer) },

  // Events, emails, suppressions, settings.
  { operationId: 'listEvents', method: 'get', path: '/events', summary: 'List events', tag: 'Events', access: 'secret', query: listEventsQuerySchema, answers: ok('A page of events.', A.pageOf(A.eventAnswer)) },
  { operationId: 'listEventNames', method: 'get', path: '/events/names', summary: 'Event names seen, with counts', tag: 'Events', access: 'secret', answers: ok('The names.', A.eventNamesAnswer) },
  { operationId: 'listEmails', method: 'get', path: '/emails', summary: 'List emails', tag: 'Emails', access: 'secret', query: listEmailsQuerySchema, answers: ok('A page of emails (no bodies).', A.emailPageAnswer), links: first('getEmail') },
  { operationId: 'getEmail', method: 'get', path: '/emails/:id', summary: 'Get an email, its body and timeline', tag: 'Emails', access: 'secret', answers: ok('The email.', A.emailDetailAnswer) },
  { operationId: 'listSuppressions', method: 'get', path: '/suppressions', summary: 'List suppressed addresses', tag: 'Suppressions', access: 'secret', query: listSuppressionsQuerySchema,
    answers: ok('A page of suppressions.', A.pageOf(A.suppressionAnswer)) },
  { operationId: 'createSuppression', method: 'post', path: '/suppressions', summary: 'Suppress an address', tag: 'Suppressions', access: 'secret', body: suppressSchema,
    answers: { 201: { description: 'Suppressed.', data: A.suppressionAnswer }, 200: { description: 'Already suppressed.', data: A.suppressionAnswer } },
    links: { deleteSuppression: { operationId: 'deleteSuppression', parameters: { email: '$response.body#/data/email' } } } },
  { operationId: 'deleteSuppression', method: 'delete', path: '/suppressions/:email', summary: 'Remove an address from the suppression list', tag: 'Suppressions', access: 'secret',
    params: { email: Joi.string().description('The address (matched lower-cased).') }, answers: noContent('Removed.'), errors: [404] },
  { operationId: 'getSettings', method: 'get', path: '/settings', summary: "The project's settings", tag: 'Settings', access: 'secret', answers: ok('The settings.', A.settingsAnswer) },
  { operationId: 'updateSettings', method: 'patch', path: '/settings', summary: "Change the project's settings", tag: 'Settings', access: 'secret', body: settingsPatchSchema, answers: ok('The settings.', A.settingsAnswer) },

  // Webhooks.
  { operationId: 'createWebhook', method: 'post', path: '/webhooks', summary: 'Subscribe an endpoint', tag: 'Webhooks', access: 'secret', body: createWebhookSchema,
    answers: created('Created; the signing secret is shown here only.', A.webhookWithSecretAnswer),
    links: crud('Webhook', undefined, undefined, ['get', 'update', 'delete', 'rotateWebhookSecret:', 'listWebhookDeliveries:']) },
  { operationId: 'listWebhooks', method: 'get', path: '/webhooks', summary: 'List webhook endpoints', tag: 'Webhooks', access: 'secret', query: listWebhooksQuerySchema, answers: ok('A page of endpoints.', A.pageOf(A.webhookAnswer)) },
  { operationId: 'getWebhook', method: 'get', path: '/webhooks/:id', summary: 'Get a webhook endpoint', tag: 'Webhooks', access: 'secret', answers: ok('The endpoint.', A.webhookAnswer) },
  { operationId: 'updateWebhook', method: 'patch', path: '/webhooks/:id', summary: 'Update a webhook endpoint', tag: 'Webhooks', access: 'secret', body: patchWebhookSchema, answers: ok('The endpoint.', A.webhookAnswer) },
  { operationId: 'deleteWebhook', method: 'delete', path: '/webhooks/:id', summary: 'Delete a webhook endpoint', tag: 'Webhooks', access: 'secret', answers: ok('Deleted.', A.webhookDeletedAnswer) },
  { operationId: 'rotateWebhookSecret', method: 'post', path: '/webhooks/:id/rotate-secret', summary: 'Rotate the signing secret', tag: 'Webhooks', access: 'secret',
    answers: ok('The endpoint with its new secret.', A.webhookWithSecretAnswer) },
  { operationId: 'listWebhookDeliveries', method: 'get', path: '/webhooks/:id/deliveries', summary: "List an endpoint's deliveries", tag: 'Webhooks', access: 'secret', query: listWebhooksQuerySchema,
    answers: ok('A page of deliveries.', A.pageOf(A.webhookDeliveryAnswer)), links: first('redeliverWebhook', 'deliveryId', 'id') },
  { operationId: 'redeliverWebhook', method: 'post', path: '/webhooks/:id/deliveries/:deliveryId/redeliver', summary: 'Deliver again', tag: 'Webhooks', access: 'secret',
    params: { deliveryId: uuidParam }, answers: { 202: { description: 'Queued again, with the same webhook-id.', data: A.webhookDeliveryAnswer } } },

  // Workflows (automations).
  { operationId: 'listWorkflows', method: 'get', path: '/workflows', summary: 'List workflows', tag: 'Workflows', access: 'secret', query: listWorkflowsQuerySchema, answers: ok('A page of workflows.', A.pageOf(A.workflowAnswer)) },
  { operationId: 'createWorkflow', method: 'post', path: '/workflows', summary: 'Create a workflow', tag: 'Workflows', access: 'secret', body: createWorkflowSchema,
    description: "A step's `config` depends on its `type` (docs/api.md, Workflows); `next` is refused on EXIT and CONDITION steps, `branches` required on CONDITION and refused elsewhere.",
    answers: created('Created.', A.workflowAnswer),
    links: crud('Workflow', undefined, undefined, ['get', 'update', 'delete', 'listWorkflowExecutions:']) },
  { operationId: 'getWorkflow', method: 'get', path: '/workflows/:id', summary: 'Get a workflow', tag: 'Workflows', access: 'secret', answers: ok('The workflow.', A.workflowAnswer) },
  { operationId: 'updateWorkflow', method: 'patch', path: '/workflows/:id', summary: 'Update a workflow', tag: 'Workflows', access: 'secret', body: patchWorkflowSchema, answers: ok('The workflow.', A.workflowAnswer) },
  { operationId: 'deleteWorkflow', method: 'delete', path: '/workflows/:id', summary: 'Delete a workflow', tag: 'Workflows', access: 'secret', answers: noContent('Deleted.') },
  { operationId: 'listWorkflowExecutions', method: 'get', path: '/workflows/:id/executions', summary: "List a workflow's executions", tag: 'Workflows', access: 'secret', query: listExecutionsQuerySchema,
    answers: ok('A page of executions.', A.pageOf(A.executionAnswer)), links: first('getWorkflowExecution', 'executionId', 'id') },
  { operationId: 'getWorkflowExecution', method: 'get', path: '/workflows/:id/executions/:executionId', summary: 'Get an execution', tag: 'Workflows', access: 'secret',
    params: { executionId: uuidParam }, answers: ok('The execution.', A.executionAnswer) },

  // Sending domains.
  { operationId: 'listDomains', method: 'get', path: '/domains', summary: 'List sending domains', tag: 'Domains', access: 'secret', query: listDomainsQuerySchema, answers: ok('A page of domains.', A.pageOf(A.domainAnswer)) },
  { operationId: 'createDomain', method: 'post', path: '/domains', summary: 'Add a sending domain', tag: 'Domains', access: 'secret', body: createDomainSchema,
    answers: created('Added, with the DNS records to publish.', A.domainAnswer), errors: [409],
    links: crud('Domain', undefined, undefined, ['get', 'delete', 'verifyDomain:']) },
  { operationId: 'getDomain', method: 'get', path: '/domains/:id', summary: 'Get a sending domain', tag: 'Domains', access: 'secret', answers: ok('The domain.', A.domainAnswer) },
  { operationId: 'deleteDomain', method: 'delete', path: '/domains/:id', summary: 'Remove a sending domain', tag: 'Domains', access: 'secret', answers: noContent('Removed.') },
  { operationId: 'verifyDomain', method: 'post', path: '/domains/:id/verify', summary: "Check the domain's DNS records now", tag: 'Domains', access: 'secret', answers: ok('The domain after the check.', A.domainAnswer) },
];
