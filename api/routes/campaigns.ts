import type Router from '@koa/router';
import type { Knex } from 'knex';
import { checkCondition } from '../../audience/check';
import { resolveSegments } from '../../audience/compile';
import type { AudienceCondition } from '../../audience/condition';
import { cancelCampaignRows } from '../../campaigns/lifecycle';
import { campaignStats } from '../../db/queries/campaigns';
import { isVerifiedSender } from '../../db/queries/domains';
import { dispatchCampaign } from '../../engine/dispatch';
import type { Engine } from '../../engine/types';
import type { Logger } from '../../logging/logger';
import { workflowId } from '../../workflows/registry';
import { checkTemplate, messageScope, type Renderer } from '../../mail/render';
import { conflict, notFound, validationFailed, type FieldError } from '../errors';
import type { AuthState } from '../middleware/auth';
import { isUuid } from '../../core/values';
import { decodeCursor, toPage } from '../pagination';
import {
  createCampaignSchema, listCampaignsQuerySchema, patchCampaignSchema, sendCampaignSchema, testCampaignSchema,
  type AudienceType, type CampaignBody, type CampaignStatus, type ListCampaignsQuery, type PatchCampaignBody,
  type SendCampaignBody, type TestCampaignBody,
} from '../schemas/campaigns';
import { validateBody, validateQuery } from '../validate';

export interface CampaignRow {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  subject: string;
  body: string;
  from_email: string;
  from_name: string | null;
  reply_to: string | null;
  audience_type: AudienceType;
  segment_id: string | null;
  audience_filter: AudienceCondition | null;
  status: CampaignStatus;
  scheduled_at: Date | null;
  started_at: Date | null;
  completed_at: Date | null;
  cancelled_at: Date | null;
  total_recipients: number | null;
  error: string | null;
  created_at: Date;
  updated_at: Date;
}

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

export async function findCampaign(db: Knex, projectId: string, id: string): Promise<CampaignRow> {
  const row = isUuid(id) ? await db('campaigns').where({ project_id: projectId, id }).first() : undefined;
  if (!row) throw notFound('Campaign');
  return row;
}

/**
 * Everything about a campaign's content that the schema cannot see: sender domain, template syntax and render budgets
 * (for a recipient with no data), audience.
 */
async function checkContent(db: Knex, render: Renderer, projectId: string, c: Pick<CampaignBody, 'subject' | 'body' | 'from' | 'audienceType' | 'segmentId' | 'audienceFilter'>): Promise<AudienceCondition | null> {
  const errors: FieldError[] = [];
  const problem = await checkTemplate(render, c.subject, c.body);
  if (problem) errors.push({ field: problem.part, message: problem.message, code: problem.code });
  if (!(await isVerifiedSender(db, projectId, c.from))) {
    errors.push({ field: 'from', message: `${c.from} is not at a verified domain of this project`, code: 'unverified_domain' });
  }
  if (c.audienceType === 'SEGMENT') {
    if (!c.segmentId) errors.push({ field: 'segmentId', message: 'segmentId is required for a SEGMENT audience', code: 'required' });
    else if (!(await db('segments').where({ project_id: projectId, id: c.segmentId.toLowerCase() }).first('id'))) {
      errors.push({ field: 'segmentId', message: 'segment not found', code: 'not_found' });
    }
  }
  let filter: AudienceCondition | null = null;
  if (c.audienceType === 'FILTERED') {
    if (!c.audienceFilter) errors.push({ field: 'audienceFilter', message: 'audienceFilter is required for a FILTERED audience', code: 'required' });
    else {
      const problems = checkCondition(c.audienceFilter, 'audienceFilter');
      if (!problems.length) problems.push(...(await resolveSegments(db, projectId, c.audienceFilter, 'audienceFilter')).errors);
      errors.push(...problems);
      filter = c.audienceFilter;
    }
  }
  if (errors.length) throw validationFailed(errors, errors.some((e) => e.code === 'unverified_domain') ? 'Verify the sender domain first (POST /domains).' : undefined);
  return filter;
}

export interface CampaignRouteDeps {
  knex: Knex;
  engine: Engine;
  log: Logger;
  render: Renderer;
}

export function campaignRoutes(router: Router, { knex, engine, log, render }: CampaignRouteDeps): void {
  router.get('/campaigns', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const q = validateQuery<ListCampaignsQuery>(ctx, listCampaignsQuerySchema);
    const filtered = () => {
      const b = knex('campaigns').where('project_id', projectId);
      if (q.status) b.where('status', q.status);
      return b;
    };
    const afterId = decodeCursor(q.cursor);
    const page = filtered().orderBy('id', 'desc').limit(q.limit + 1);
    if (afterId) page.where('id', '<', afterId);
    const [rows, total] = await Promise.all([page as Promise<CampaignRow[]>, filtered().count('* as n').first()]);
    ctx.body = { success: true, data: toPage(rows, q.limit, Number(total?.n ?? 0), campaignJson) };
  });

  router.post('/campaigns', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const body = validateBody<CampaignBody>(ctx, createCampaignSchema);
    const filter = await checkContent(knex, render, projectId, body);
    const [row] = await knex('campaigns').insert({
      project_id: projectId, name: body.name, description: body.description || null, subject: body.subject, body: body.body,
      from_email: body.from, from_name: body.fromName || null, reply_to: body.replyTo ?? null, audience_type: body.audienceType,
      segment_id: body.segmentId?.toLowerCase() ?? null, audience_filter: filter ? JSON.stringify(filter) : null,
    }).returning('*');
    ctx.status = 201;
    ctx.body = { success: true, data: campaignJson(row) };
  });

  router.get('/campaigns/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    ctx.body = { success: true, data: campaignJson(await findCampaign(knex, projectId, ctx.params.id!)) };
  });

  router.patch('/campaigns/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const current = await findCampaign(knex, projectId, ctx.params.id!);
    const body = validateBody<PatchCampaignBody>(ctx, patchCampaignSchema);
    const updated = await knex.transaction(async (trx) => {
      const locked: CampaignRow | undefined = await trx('campaigns').where({ project_id: projectId, id: current.id }).forUpdate().first();
      if (!locked) throw notFound('Campaign'); // deleted meanwhile
      if (locked.status !== 'DRAFT') throw conflict(`Only DRAFT campaigns can be edited; this one is ${locked.status}`);
      const audienceType = body.audienceType ?? locked.audience_type;
      const merged = {
        subject: body.subject ?? locked.subject,
        body: body.body ?? locked.body,
        from: body.from ?? locked.from_email,
        audienceType,
        // Changing the audience type drops what belonged to the old one.
        segmentId: audienceType === 'SEGMENT' ? (body.segmentId ?? locked.segment_id ?? undefined) : undefined,
        audienceFilter: audienceType === 'FILTERED' ? (body.audienceFilter ?? locked.audience_filter ?? undefined) : undefined,
      };
      if (audienceType !== 'SEGMENT' && body.segmentId) throw validationFailed([{ field: 'segmentId', message: 'segmentId applies only to a SEGMENT audience', code: 'unrecognized_key' }]);
      if (audienceType !== 'FILTERED' && body.audienceFilter) throw validationFailed([{ field: 'audienceFilter', message: 'audienceFilter applies only to a FILTERED audience', code: 'unrecognized_key' }]);
      const filter = await checkContent(trx, render, projectId, merged);
      const [row] = await trx('campaigns').where({ project_id: projectId, id: current.id }).update({
        ...(body.name !== undefined ? { name: body.name } : {}),
        ...(body.description !== undefined ? { description: body.description || null } : {}),
        ...(body.fromName !== undefined ? { from_name: body.fromName || null } : {}),
        ...(body.replyTo !== undefined ? { reply_to: body.replyTo } : {}),
        subject: merged.subject, body: merged.body, from_email: merged.from, audience_type: audienceType,
        segment_id: merged.segmentId?.toLowerCase() ?? null, audience_filter: filter ? JSON.stringify(filter) : null,
        updated_at: trx.fn.now(),
      }).returning('*');
      return row as CampaignRow;
    });
    ctx.body = { success: true, data: campaignJson(updated) };
  });

  router.delete('/campaigns/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const current = await findCampaign(knex, projectId, ctx.params.id!);
    const deleted = await knex('campaigns').where({ project_id: projectId, id: current.id }).whereIn('status', ['DRAFT', 'CANCELLED']).delete();
    if (!deleted) throw conflict(`Only DRAFT or CANCELLED campaigns can be deleted; this one is ${current.status}`, 'Cancel it first.');
    ctx.status = 204;
  });

  /** `{}` sends now; `{ scheduledAt }` schedules. Only a DRAFT can be sent; its content is checked again first. */
  router.post('/campaigns/:id/send', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const current = await findCampaign(knex, projectId, ctx.params.id!);
    const body = validateBody<SendCampaignBody>(ctx, sendCampaignSchema);
    const row = await knex.transaction(async (trx) => {
      const locked: CampaignRow | undefined = await trx('campaigns').where({ project_id: projectId, id: current.id }).forUpdate().first();
      if (!locked) throw notFound('Campaign'); // deleted meanwhile
      if (locked.status !== 'DRAFT') throw conflict(`Campaign is ${locked.status}; only a DRAFT campaign can be sent or scheduled`);
      await checkContent(trx, render, projectId, {
        subject: locked.subject, body: locked.body, from: locked.from_email, audienceType: locked.audience_type,
        segmentId: locked.segment_id ?? undefined, audienceFilter: locked.audience_filter ?? undefined,
      });
      const [updated] = await trx('campaigns').where({ project_id: projectId, id: current.id })
        .update({ status: 'SCHEDULED', scheduled_at: body.scheduledAt ?? trx.fn.now(), updated_at: trx.fn.now() }).returning('*');
      return updated as CampaignRow;
    });
    await dispatchCampaign(engine, knex, row, log);
    ctx.body = { success: true, data: campaignJson((await knex('campaigns').where({ project_id: projectId, id: row.id }).first()) ?? row) };
  });

  /** A SCHEDULED campaign never sends; a SENDING one stops before its next batch and its unsent emails are cancelled. */
  router.post('/campaigns/:id/cancel', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const current = await findCampaign(knex, projectId, ctx.params.id!);
    const result = await cancelCampaignRows(knex, { projectId, campaignId: current.id });
    if (!result.changed) throw conflict(`Campaign is ${result.status}; only DRAFT, SCHEDULED or SENDING campaigns can be cancelled`);
    // The database is already final; the engine cancel releases a pending schedule at once (it is also safe to lose).
    await engine.cancel(workflowId.sendCampaign({ campaignId: current.id })).catch((err) => log.warn({ err, campaignId: current.id }, 'engine cancel failed; the workflow will see the CANCELLED status'));
    ctx.body = { success: true, data: campaignJson(await findCampaign(knex, projectId, current.id)) };
  });

  /** `[TEST]` copies to up to 10 addresses, through the same rendering and delivery; nothing else changes. */
  router.post('/campaigns/:id/test', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const campaign = await findCampaign(knex, projectId, ctx.params.id!);
    const { emails } = validateBody<TestCampaignBody>(ctx, testCampaignSchema);
    const unique = [...new Set(emails)];
    // Rendered here for each address (its contact's data, when it is one) so that a test that cannot render within the
    // budgets is a 422 now, not a failed email later.
    const known = new Map((await knex('contacts').where('project_id', projectId).whereIn('email', unique).select('id', 'email', 'subscribed', 'data'))
      .map((c) => [c.email as string, c]));
    const problem = await checkTemplate(render, campaign.subject, campaign.body, unique.map((email) => {
      const c = known.get(email);
      return messageScope({}, c ?? { id: '', email, subscribed: false, data: {} }, 'https://example.invalid/unsubscribe');
    }));
    if (problem) throw validationFailed([{ field: problem.part, message: `${problem.message} (for ${unique[problem.index]})`, code: problem.code }]);
    const rows: { id: string; to_email: string }[] = await knex.raw(
      `INSERT INTO emails (project_id, contact_id, campaign_id, is_test, from_email, from_name, reply_to, to_email, subject, html)
       SELECT ?::uuid, c.id, ?::uuid, true, ?, ?, ?, t.email, NULL, NULL
       FROM unnest(?::text[]) AS t(email) LEFT JOIN contacts c ON c.project_id = ?::uuid AND c.email = t.email
       RETURNING id, to_email`,
      [projectId, campaign.id, campaign.from_email, campaign.from_name, campaign.reply_to, unique, projectId],
    ).then((r) => r.rows);
    ctx.body = { success: true, data: { emails: rows.map((r) => ({ email: r.to_email, id: r.id })) } };
  });

  router.get('/campaigns/:id/stats', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const campaign = await findCampaign(knex, projectId, ctx.params.id!);
    ctx.body = { success: true, data: await campaignStats(knex, projectId, campaign.id) };
  });
}
