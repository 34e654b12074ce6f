import type Router from '@koa/router';
import type { CampaignRow, Campaigns } from '../../campaigns/campaigns';
import type { AuthState } from '../middleware/auth';
import { decodeCursor, toPage } from '../pagination';
import {
  createCampaignSchema, listCampaignsQuerySchema, patchCampaignSchema, sendCampaignSchema, testCampaignSchema,
  type CampaignBody, type ListCampaignsQuery, type PatchCampaignBody, type SendCampaignBody, type TestCampaignBody,
} from '../schemas/campaigns';
import { validateBody, validateQuery } from '../validate';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function campaignJson(c: CampaignRow) {
  return {
    id: c.id, name: c.name, description: c.description, subject: c.subject, body: c.body,
    from: c.from_email, fromName: c.from_name, replyTo: c.reply_to, type: 'MARKETING' as const, status: c.status,
    audienceType: c.audience_type, segmentId: c.segment_id, audienceFilter: c.audience_filter,
    scheduledAt: iso(c.scheduled_at), startedAt: iso(c.started_at), completedAt: iso(c.completed_at), cancelledAt: iso(c.cancelled_at),
    totalRecipients: c.total_recipients, error: c.error,
    createdAt: c.created_at.toISOString(), updatedAt: c.updated_at.toISOString(),
  };
}

/** Spec 4.5 (campaigns/campaigns.ts). */
export function campaignRoutes(router: Router, campaigns: Campaigns): void {
  router.get('/campaigns', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const q = validateQuery<ListCampaignsQuery>(ctx, listCampaignsQuerySchema);
    const { rows, total } = await campaigns.list(projectId, { status: q.status }, { limit: q.limit, afterId: decodeCursor(q.cursor) });
    ctx.body = { success: true, data: toPage(rows, q.limit, total, campaignJson) };
  });

  router.post('/campaigns', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const row = await campaigns.create(projectId, validateBody<CampaignBody>(ctx, createCampaignSchema));
    ctx.status = 201;
    ctx.body = { success: true, data: campaignJson(row) };
  });

  router.get('/campaigns/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    ctx.body = { success: true, data: campaignJson(await campaigns.get(projectId, ctx.params.id!)) };
  });

  // Another project's campaign is a 404 whatever the body says: the routes that take a body look the campaign up first.
  router.patch('/campaigns/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    await campaigns.get(projectId, ctx.params.id!);
    const body = validateBody<PatchCampaignBody>(ctx, patchCampaignSchema);
    ctx.body = { success: true, data: campaignJson(await campaigns.update(projectId, ctx.params.id!, body)) };
  });

  router.delete('/campaigns/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    await campaigns.remove(projectId, ctx.params.id!);
    ctx.status = 204;
  });

  /** `{}` sends now; `{ scheduledAt }` schedules. */
  router.post('/campaigns/:id/send', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    await campaigns.get(projectId, ctx.params.id!);
    const body = validateBody<SendCampaignBody>(ctx, sendCampaignSchema);
    ctx.body = { success: true, data: campaignJson(await campaigns.send(projectId, ctx.params.id!, body.scheduledAt)) };
  });

  router.post('/campaigns/:id/cancel', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    ctx.body = { success: true, data: campaignJson(await campaigns.cancel(projectId, ctx.params.id!)) };
  });

  router.post('/campaigns/:id/test', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    await campaigns.get(projectId, ctx.params.id!);
    const { emails } = validateBody<TestCampaignBody>(ctx, testCampaignSchema);
    ctx.body = { success: true, data: { emails: await campaigns.test(projectId, ctx.params.id!, emails) } };
  });

  router.get('/campaigns/:id/stats', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    ctx.body = { success: true, data: await campaigns.stats(projectId, ctx.params.id!) };
  });
}
