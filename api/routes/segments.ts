import type Router from '@koa/router';
import type { Knex } from 'knex';
import { checkCondition } from '../../audience/check';
import { loadSegments, resolveSegments, type SegmentDef } from '../../audience/compile';
import { normaliseCondition, type AudienceCondition } from '../../audience/condition';
import { Contact } from '../../db/models/Contact';
import { upsertContacts } from '../../db/queries/contacts';
import { isUnusableCondition, memberCounts, segmentContacts, segmentsReferencing, unusableCondition, type MemberCount } from '../../db/queries/segments';
import { ApiError, conflict, notFound, validationFailed } from '../errors';
import type { AuthState } from '../middleware/auth';
import { isUuid } from '../../core/values';
import { decodeCursor, toPage } from '../pagination';
import {
  createSegmentSchema, listQuerySchema, membersSchema, patchSegmentSchema, previewSchema,
  type CreateSegmentBody, type ListQuery, type MembersBody, type PatchSegmentBody, type PreviewBody,
} from '../schemas/segments';
import { validateBody, validateQuery } from '../validate';
import { contactJson } from './contacts';

interface SegmentRow extends SegmentDef {
  name: string;
  description: string | null;
  created_at: Date;
  updated_at: Date;
}

/**
 * `memberCount` is null, and `error` says why, for a segment whose stored condition cannot be evaluated (stored under
 * older rules, or a value PostgreSQL cannot hold): the segment is still listed, and can be fixed with PATCH or deleted.
 */
function segmentJson(s: SegmentRow, count: MemberCount | undefined) {
  return {
    id: s.id, name: s.name, description: s.description, type: s.type, condition: s.condition,
    memberCount: count ? count.memberCount : 0, error: count?.error ?? null,
    createdAt: s.created_at.toISOString(), updatedAt: s.updated_at.toISOString(),
  };
}

/**
 * Runs queries over a segment's contacts (or a previewed condition's): a condition that cannot be evaluated is a 422
 * that says why and names the condition, not a 500.
 */
async function evaluating<T>(run: () => Promise<T>, suggestion?: string): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (!isUnusableCondition(err)) throw err;
    throw validationFailed([{ field: 'condition', message: unusableCondition(err), code: 'invalid_condition' }], suggestion);
  }
}

/** Validates a condition fully (shape is Joi's; fields, operators, values and segment references here): 422 at the path. */
async function checked(db: Knex, projectId: string, condition: AudienceCondition, prefix: string, selfId?: string): Promise<AudienceCondition> {
  const normalised = normaliseCondition(condition);
  const errors = checkCondition(normalised, prefix);
  if (errors.length) throw validationFailed(errors);
  const resolved = await resolveSegments(db, projectId, normalised, prefix, selfId);
  if (resolved.errors.length) throw validationFailed(resolved.errors);
  return normalised;
}

async function findSegment(db: Knex, projectId: string, id: string): Promise<SegmentRow> {
  const row = isUuid(id) ? await db('segments').where({ project_id: projectId, id }).first() : undefined;
  if (!row) throw notFound('Segment');
  return row;
}

export function segmentRoutes(router: Router, knex: Knex): void {
  router.get('/segments', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const q = validateQuery<ListQuery>(ctx, listQuerySchema);
    const afterId = decodeCursor(q.cursor);
    const page = knex('segments').where('project_id', projectId).orderBy('id', 'desc').limit(q.limit + 1);
    if (afterId) page.where('id', '<', afterId);
    const [rows, total] = await Promise.all([page as Promise<SegmentRow[]>, knex('segments').where('project_id', projectId).count('* as n').first()]);
    const counts = await memberCounts(knex, projectId, rows.slice(0, q.limit));
    ctx.body = { success: true, data: toPage(rows, q.limit, Number(total?.n ?? 0), (s) => segmentJson(s, counts.get(s.id))) };
  });

  router.post('/segments', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const body = validateBody<CreateSegmentBody>(ctx, createSegmentSchema);
    const condition = body.condition ? await checked(knex, projectId, body.condition, 'condition') : null;
    const [row] = await knex('segments').insert({
      project_id: projectId, name: body.name, description: body.description || null, type: body.type,
      condition: condition ? JSON.stringify(condition) : null,
    }).returning('*');
    const counts = await memberCounts(knex, projectId, [row]);
    ctx.status = 201;
    ctx.body = { success: true, data: segmentJson(row, counts.get(row.id)) };
  });

  router.post('/segments/preview', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const body = validateBody<PreviewBody>(ctx, previewSchema);
    const condition = await checked(knex, projectId, body.condition, 'condition');
    const all = await loadSegments(knex, projectId);
    const segment: SegmentDef = { id: '00000000-0000-0000-0000-000000000000', type: 'DYNAMIC', condition };
    const [count, sample] = await evaluating(() => Promise.all([
      segmentContacts(knex, projectId, segment, all).count('* as n').first(),
      segmentContacts(knex, projectId, segment, all).orderBy('c.id', 'desc').limit(10).select('c.*'),
    ]));
    ctx.body = { success: true, data: { count: Number(count?.n ?? 0), contacts: sample.map((r: Record<string, unknown>) => contactJson(Contact.fromDatabaseJson(r))) } };
  });

  router.get('/segments/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const row = await findSegment(knex, projectId, ctx.params.id!);
    const counts = await memberCounts(knex, projectId, [row]);
    ctx.body = { success: true, data: segmentJson(row, counts.get(row.id)) };
  });

  router.patch('/segments/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const current = await findSegment(knex, projectId, ctx.params.id!);
    const body = validateBody<PatchSegmentBody>(ctx, patchSegmentSchema);
    if (body.condition && current.type === 'STATIC') {
      throw validationFailed([{ field: 'condition', message: 'condition applies only to DYNAMIC segments', code: 'unrecognized_key' }]);
    }
    const condition = body.condition ? await checked(knex, projectId, body.condition, 'condition', current.id) : undefined;
    const [row] = await knex('segments').where({ project_id: projectId, id: current.id }).update({
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.description !== undefined ? { description: body.description || null } : {}),
      ...(condition ? { condition: JSON.stringify(condition) } : {}),
      updated_at: knex.fn.now(),
    }).returning('*');
    if (!row) throw notFound('Segment'); // deleted meanwhile
    const counts = await memberCounts(knex, projectId, [row]);
    ctx.body = { success: true, data: segmentJson(row, counts.get(row.id)) };
  });

  router.delete('/segments/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const current = await findSegment(knex, projectId, ctx.params.id!);
    const [users, campaigns] = await Promise.all([
      segmentsReferencing(knex, projectId, current.id),
      knex('campaigns').where({ project_id: projectId, segment_id: current.id }).whereIn('status', ['DRAFT', 'SCHEDULED', 'SENDING']).select('name'),
    ]);
    if (users.length) {
      throw conflict(`Segment is used by other segments: ${users.map((u) => u.name).join(', ')}`, 'Remove the segment from their conditions first.');
    }
    if (campaigns.length) {
      throw conflict(`Segment is the audience of campaigns not yet sent: ${campaigns.map((c: { name: string }) => c.name).join(', ')}`, 'Change their audience or cancel them first.');
    }
    await knex('segments').where({ project_id: projectId, id: current.id }).delete();
    ctx.status = 204;
  });

  router.get('/segments/:id/contacts', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const segment = await findSegment(knex, projectId, ctx.params.id!);
    const q = validateQuery<ListQuery>(ctx, listQuerySchema);
    const afterId = decodeCursor(q.cursor);
    const all = await loadSegments(knex, projectId);
    const [rows, total] = await evaluating(() => {
      const page = segmentContacts(knex, projectId, segment, all).orderBy('c.id', 'desc').limit(q.limit + 1).select('c.*');
      if (afterId) page.where('c.id', '<', afterId);
      return Promise.all([page, segmentContacts(knex, projectId, segment, all).count('* as n').first()]);
    }, 'Fix the segment\'s condition (PATCH /segments/:id), or the segments it names.');
    ctx.body = { success: true, data: toPage(rows as { id: string }[], q.limit, Number(total?.n ?? 0), (r) => contactJson(Contact.fromDatabaseJson(r))) };
  });

  const staticOnly = (s: SegmentRow) => {
    if (s.type !== 'STATIC') throw new ApiError(409, 'CONFLICT', 'Members are added and removed only on STATIC segments; a DYNAMIC segment is its condition', {});
  };

  router.post('/segments/:id/members', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const segment = await findSegment(knex, projectId, ctx.params.id!);
    staticOnly(segment);
    const { emails } = validateBody<MembersBody>(ctx, membersSchema);
    const result = await knex.transaction(async (trx) => {
      // The segment stays until this commits (a concurrent delete waits); one deleted meanwhile is gone: 404.
      if (!(await trx('segments').where({ project_id: projectId, id: segment.id }).forKeyShare().first('id'))) throw notFound('Segment');
      // Unknown emails become contacts, subscribed (decisions.md).
      const contacts = await upsertContacts(trx, projectId, emails.map((email) => ({ email })), true);
      const added = await trx.raw(
        `INSERT INTO segment_members (project_id, segment_id, contact_id)
         SELECT ?::uuid, ?::uuid, unnest(?::uuid[]) ON CONFLICT DO NOTHING RETURNING contact_id`,
        [projectId, segment.id, contacts.map((c) => c.contact.id)],
      );
      return { added: added.rows.length, created: contacts.filter((c) => c.isNew).length };
    });
    const counts = await memberCounts(knex, projectId, [segment]);
    ctx.body = { success: true, data: { ...result, memberCount: counts.get(segment.id)?.memberCount ?? 0 } };
  });

  router.delete('/segments/:id/members', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const segment = await findSegment(knex, projectId, ctx.params.id!);
    staticOnly(segment);
    const { emails } = validateBody<MembersBody>(ctx, membersSchema);
    const removed = await knex.raw(
      `DELETE FROM segment_members m USING contacts c
       WHERE m.project_id = ?::uuid AND m.segment_id = ?::uuid AND c.project_id = m.project_id AND c.id = m.contact_id AND c.email = ANY(?::text[])`,
      [projectId, segment.id, emails],
    );
    const counts = await memberCounts(knex, projectId, [segment]);
    ctx.body = { success: true, data: { removed: removed.rowCount ?? 0, memberCount: counts.get(segment.id)?.memberCount ?? 0 } };
  });
}
