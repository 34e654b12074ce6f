import { actorOf } from '../../audit/log';
import type { CampaignRow, Campaigns } from '../../campaigns/campaigns';
import { crud, created, noContent, ok } from '../openapi/operations';
import { decodeCursor, toPage } from '../pagination';
import { deleted, reply, route, type Lookup } from '../route';
import * as A from '../schemas/answers';
import {
  audienceSchema, campaignStatsQuerySchema, createCampaignSchema, listCampaignsQuerySchema, patchCampaignSchema, sendCampaignSchema, testCampaignSchema,
} from '../schemas/campaigns';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function campaignJson(c: CampaignRow, campaigns: Pick<Campaigns, 'workflowUrl'>) {
  return {
    id: c.id, name: c.name, description: c.description, templateId: c.template_id, subject: c.subject, body: c.body, bodyType: c.body_type,
    from: c.from_email, fromName: c.from_name, replyTo: c.reply_to, type: 'MARKETING' as const, status: c.status,
    audienceType: c.audience_type, segmentId: c.segment_id, audienceFilter: c.audience_filter,
    scheduledAt: iso(c.scheduled_at), startedAt: iso(c.started_at), completedAt: iso(c.completed_at), cancelledAt: iso(c.cancelled_at),
    totalRecipients: c.total_recipients ?? c.recipients_so_far ?? null, error: c.error,
    createdAt: c.created_at.toISOString(), updatedAt: c.updated_at.toISOString(),
    temporalUiUrl: campaigns.workflowUrl(c),
  };
}

// Another project's campaign is a 404 whatever the body says: the routes that take a body look the campaign up first.
const owned = ({ auth, params, services }: Lookup<'/campaigns/:id'>) => services.campaigns.get(auth.projectId, params.id);

/** Spec 4.5 (campaigns/campaigns.ts). */
export const campaignRoutes = [
  route({ operationId: 'listCampaigns', method: 'get', path: '/campaigns', summary: 'List campaigns', tag: 'Campaigns', access: 'secret', permission: 'read', query: listCampaignsQuerySchema, answers: ok('A page of campaigns.', A.pageOf(A.campaignAnswer)),
    async handle({ auth, query: q, services }) {
      const { rows, total } = await services.campaigns.list(auth.projectId, { status: q.status }, { limit: q.limit, afterId: decodeCursor(q.cursor) });
      return reply(toPage(rows, q.limit, total, (c) => campaignJson(c, services.campaigns)));
    } }),

  route({ operationId: 'createCampaign', method: 'post', path: '/campaigns', summary: 'Create a campaign (DRAFT)', tag: 'Campaigns', access: 'secret', permission: 'write', body: createCampaignSchema,
    description: '`segmentId` is required for a SEGMENT audience and `audienceFilter` for a FILTERED one; each is refused otherwise. '
      + '`subject`, `body` and `from` are required unless the campaign uses a template (`templateId`) that gives them: each part it leaves out is the template\'s, '
      + 'as for POST /v1/send\'s `template`.',
    answers: created('Created.', A.campaignAnswer),
    links: crud('Campaign', undefined, undefined, ['get', 'update', 'delete', 'getCampaignStats:', 'sendCampaign:', 'cancelCampaign:', 'testCampaign:']),
    handle: async ({ auth, body, services }) => reply(campaignJson(await services.campaigns.create(auth.projectId, body), services.campaigns), 201) }),

  route({ operationId: 'getCampaign', method: 'get', path: '/campaigns/:id', summary: 'Get a campaign', tag: 'Campaigns', access: 'secret', permission: 'read', answers: ok('The campaign.', A.campaignAnswer),
    handle: async (call) => reply(campaignJson(await owned(call), call.services.campaigns)) }),

  route({ operationId: 'updateCampaign', method: 'patch', path: '/campaigns/:id', summary: 'Update a DRAFT campaign', tag: 'Campaigns', access: 'secret', permission: 'write', body: patchCampaignSchema, answers: ok('The campaign.', A.campaignAnswer), errors: [409],
    before: owned,
    handle: async ({ auth, params, body, services }) => reply(campaignJson(await services.campaigns.update(auth.projectId, params.id, body), services.campaigns)) }),

  route({ operationId: 'deleteCampaign', method: 'delete', path: '/campaigns/:id', summary: 'Delete a DRAFT or CANCELLED campaign', tag: 'Campaigns', access: 'secret', permission: 'write', answers: noContent('Deleted.'), errors: [409],
    async handle({ auth, params, services }) {
      await services.campaigns.remove(auth.projectId, params.id, actorOf(auth));
      return deleted;
    } }),

  route({ operationId: 'sendCampaign', method: 'post', path: '/campaigns/:id/send', summary: 'Send or schedule a campaign', tag: 'Campaigns', access: 'secret', permission: 'write', body: sendCampaignSchema, bodyOptional: true,
    description: '`{}` (or no body) sends now; `{ "scheduledAt" }` schedules.', answers: ok('The campaign, SENDING or SCHEDULED.', A.campaignAnswer), errors: [409],
    before: owned,
    handle: async ({ auth, params, body, services }) => reply(campaignJson(await services.campaigns.send(auth.projectId, params.id, body.scheduledAt, actorOf(auth)), services.campaigns)) }),

  route({ operationId: 'cancelCampaign', method: 'post', path: '/campaigns/:id/cancel', summary: 'Cancel a scheduled or sending campaign', tag: 'Campaigns', access: 'secret', permission: 'write',
    answers: ok('The campaign, CANCELLED.', A.campaignAnswer), errors: [409],
    handle: async ({ auth, params, services }) => reply(campaignJson(await services.campaigns.cancel(auth.projectId, params.id, actorOf(auth)), services.campaigns)) }),

  route({ operationId: 'testCampaign', method: 'post', path: '/campaigns/:id/test', summary: 'Send [TEST] copies', tag: 'Campaigns', access: 'secret', permission: 'write', body: testCampaignSchema,
    answers: ok('The test emails.', A.campaignTestAnswer),
    before: owned,
    handle: async ({ auth, params, body, services }) => reply({ emails: await services.campaigns.test(auth.projectId, params.id, body.emails) }) }),

  route({ operationId: 'getCampaignStats', method: 'get', path: '/campaigns/:id/stats', summary: "A campaign's statistics", tag: 'Campaigns', access: 'secret', permission: 'read', query: campaignStatsQuerySchema,
    description: '`?series=hour` or `?series=day` adds its opens and clicks over time (`series`).',
    answers: ok('The statistics.', A.campaignStatsAnswer),
    before: owned,
    handle: async ({ auth, params, query, services }) => reply(await services.campaigns.stats(auth.projectId, params.id, query.series)) }),

  route({ operationId: 'countCampaignAudience', method: 'post', path: '/campaigns/audience', summary: 'Count the recipients of an audience', tag: 'Campaigns', access: 'secret', permission: 'write', body: audienceSchema,
    description: 'How many contacts a campaign with this audience would go to now (subscribed, not suppressed): the number to confirm before sending. Nothing is saved.',
    answers: ok('The count.', A.audienceCountAnswer),
    handle: async ({ auth, body, services }) => reply({ count: await services.campaigns.countAudience(auth.projectId, body) }) }),
];
