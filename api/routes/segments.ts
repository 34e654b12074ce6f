import type Router from '@koa/router';
import type { Knex } from 'knex';
import {
  addMembers, createSegment, deleteSegment, getSegment, listSegments, previewSegment, removeMembers, segmentMembers,
  staticSegment, updateSegment, type Segment,
} from '../../audience/segments';
import type { AuthState } from '../middleware/auth';
import { decodeCursor, toPage } from '../pagination';
import {
  createSegmentSchema, listQuerySchema, membersSchema, patchSegmentSchema, previewSchema,
  type CreateSegmentBody, type ListQuery, type MembersBody, type PatchSegmentBody, type PreviewBody,
} from '../schemas/segments';
import { validateBody, validateQuery } from '../validate';
import { contactJson } from './contacts';

/** `memberCount` is null, and `error` says why, for a segment whose stored condition cannot be evaluated. */
function segmentJson(s: Segment) {
  return {
    id: s.id, name: s.name, description: s.description, type: s.type, condition: s.condition,
    memberCount: s.members ? s.members.memberCount : 0, error: s.members?.error ?? null,
    createdAt: s.created_at.toISOString(), updatedAt: s.updated_at.toISOString(),
  };
}

/** Spec 4.4 (audience/segments.ts). */
export function segmentRoutes(router: Router, knex: Knex): void {
  router.get('/segments', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const q = validateQuery<ListQuery>(ctx, listQuerySchema);
    const { rows, total } = await listSegments(knex, projectId, { limit: q.limit, afterId: decodeCursor(q.cursor) });
    ctx.body = { success: true, data: toPage(rows, q.limit, total, segmentJson) };
  });

  router.post('/segments', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const segment = await createSegment(knex, projectId, validateBody<CreateSegmentBody>(ctx, createSegmentSchema));
    ctx.status = 201;
    ctx.body = { success: true, data: segmentJson(segment) };
  });

  router.post('/segments/preview', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const body = validateBody<PreviewBody>(ctx, previewSchema);
    const { count, contacts } = await previewSegment(knex, projectId, body.condition);
    ctx.body = { success: true, data: { count, contacts: contacts.map(contactJson) } };
  });

  router.get('/segments/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    ctx.body = { success: true, data: segmentJson(await getSegment(knex, projectId, ctx.params.id!)) };
  });

  router.patch('/segments/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    await getSegment(knex, projectId, ctx.params.id!); // another project's segment is a 404 whatever the body says
    const body = validateBody<PatchSegmentBody>(ctx, patchSegmentSchema);
    ctx.body = { success: true, data: segmentJson(await updateSegment(knex, projectId, ctx.params.id!, body)) };
  });

  router.delete('/segments/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    await deleteSegment(knex, projectId, ctx.params.id!);
    ctx.status = 204;
  });

  router.get('/segments/:id/contacts', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    await getSegment(knex, projectId, ctx.params.id!); // 404 before the query is looked at
    const q = validateQuery<ListQuery>(ctx, listQuerySchema);
    const { rows, total } = await segmentMembers(knex, projectId, ctx.params.id!, { limit: q.limit, afterId: decodeCursor(q.cursor) });
    ctx.body = { success: true, data: toPage(rows, q.limit, total, contactJson) };
  });

  router.post('/segments/:id/members', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    await staticSegment(knex, projectId, ctx.params.id!); // 404, then 409 for a DYNAMIC one, before the body
    const { emails } = validateBody<MembersBody>(ctx, membersSchema);
    ctx.body = { success: true, data: await addMembers(knex, projectId, ctx.params.id!, emails) };
  });

  router.delete('/segments/:id/members', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    await staticSegment(knex, projectId, ctx.params.id!);
    const { emails } = validateBody<MembersBody>(ctx, membersSchema);
    ctx.body = { success: true, data: await removeMembers(knex, projectId, ctx.params.id!, emails) };
  });
}
