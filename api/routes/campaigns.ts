import { actorOf } from '../../audit/log';
import type { CampaignRow, Campaigns } from '../../campaigns/campaigns';
import { keyOf } from '../../campaigns/abTest';
import { crud, created, noContent, ok } from '../openapi/operations';
import { decodeCursor, toPage } from '../pagination';
import { deleted, reply, route, type Lookup } from '../route';
import * as A from '../schemas/answers';
import {
  audienceSchema, campaignStatsQuerySchema, chooseWinnerSchema, createCampaignSchema, listCampaignsQuerySchema, patchCampaignSchema, sendCampaignSchema, testCampaignSchema,
} from '../schemas/campaigns';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function campaignJson(c: CampaignRow, campaigns: Pick<Campaigns, 'workflowUrl'>) {
  return {
    id: c.id, name: c.name, description: c.description, templateId: c.template_id, subject: c.subject, body: c.body, bodyType: c.body_type,
    from: c.from_email, fromName: c.from_name, replyTo: c.reply_to, previewText: c.preview_text, type: 'MARKETING' as const, status: c.status,
    audienceType: c.audience_type, segmentId: c.segment_id, audienceFilter: c.audience_filter,
    scheduledAt: iso(c.scheduled_at), startedAt: iso(c.started_at), completedAt: iso(c.completed_at), cancelledAt: iso(c.cancelled_at),
    totalRecipients: c.total_recipients ?? c.recipients_so_far ?? null, error: c.error,
    createdAt: c.created_at.toISOString(), updatedAt: c.updated_at.toISOString(),
    temporalUiUrl: campaigns.workflowUrl(c),
    variants: c.variants.length ? c.variants.map((v) => ({
      key: keyOf(v.position), name: v.name, subject: v.subject, previewText: v.preview_text, fromName: v.from_name, body: v.body, templateId: v.template_id,
    })) : null,
    abTest: c.ab_metric ? {
      samplePercent: c.ab_sample_percent!, waitMinutes: c.ab_wait_minutes!, metric: c.ab_metric,
      phase: c.ab_phase, sampleSize: c.ab_sample_size, waitEndsAt: iso(c.ab_ends_at),
      chosen: c.ab_chosen === null ? null : keyOf(c.ab_chosen), winner: c.ab_winner === null ? null : keyOf(c.ab_winner), decidedAt: iso(c.ab_decided_at),
    } : null,
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
    description: 'An A/B campaign sends a copy of each variant to each address (its subject says which: `[TEST B]`), or of `variant` only.',
    handle: async ({ auth, params, body, services }) => reply({ emails: await services.campaigns.test(auth.projectId, params.id, body.emails, body.variant) }) }),

  route({ operationId: 'chooseCampaignWinner', method: 'post', path: '/campaigns/:id/winner', summary: "Choose an A/B campaign's winner", tag: 'Campaigns', access: 'secret', permission: 'write', body: chooseWinnerSchema,
    description: 'While the test runs (its sample sending, or its wait): ends the wait, and the variant goes to the rest of the audience. '
      + 'The only way a `manual` test is decided; a test by opens or clicks may be decided early this way too. 409 once a winner is decided.',
    answers: ok('The campaign, its winner chosen (decided by its workflow a moment later: `abTest.winner`).', A.campaignAnswer), errors: [409],
    before: owned,
    handle: async ({ auth, params, body, services }) => reply(campaignJson(await services.campaigns.chooseWinner(auth.projectId, params.id, body.variant, actorOf(auth)), services.campaigns)) }),

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
