import type Router from '@koa/router';
import type { Knex } from 'knex';
import { Template } from '../../db/models/Template';
import { getTemplate, templateListQueries } from '../../db/queries/templates';
import { checkTemplate, type Renderer } from '../../mail/render';
import { conflict, notFound, validationFailed } from '../errors';
import type { AuthState } from '../middleware/auth';
import { isUuid } from '../../core/values';
import { decodeCursor, toPage } from '../pagination';
import {
  createTemplateSchema, listTemplatesQuerySchema, patchTemplateSchema,
  type ListTemplatesQuery, type PatchTemplateBody, type TemplateBody,
} from '../schemas/templates';
import { validateBody, validateQuery } from '../validate';

export interface TemplateJson {
  id: string;
  name: string;
  description: string | null;
  subject: string;
  body: string;
  from: string | null;
  fromName: string | null;
  replyTo: string | null;
  type: string;
  bodyType: string;
  createdAt: string;
  updatedAt: string;
}

export function templateJson(t: Template): TemplateJson {
  return {
    id: t.id, name: t.name, description: t.description, subject: t.subject, body: t.body,
    from: t.fromEmail, fromName: t.fromName, replyTo: t.replyTo, type: t.type, bodyType: t.bodyType,
    createdAt: t.createdAt.toISOString(), updatedAt: t.updatedAt.toISOString(),
  };
}

/**
 * A template that does not parse, or that passes the render budgets by itself (with no data), is refused at write
 * time, not discovered at send time.
 */
async function checkContent(render: Renderer, subject: string, body: string, bodyType: string): Promise<void> {
  const problem = await checkTemplate(render, subject, body, undefined, bodyType === 'markdown');
  if (problem) throw validationFailed([{ field: problem.part, message: problem.message, code: problem.code }]);
}

function columns(b: PatchTemplateBody) {
  return {
    ...(b.name !== undefined ? { name: b.name } : {}),
    ...(b.description !== undefined ? { description: b.description || null } : {}),
    ...(b.subject !== undefined ? { subject: b.subject } : {}),
    ...(b.body !== undefined ? { body: b.body } : {}),
    ...(b.from !== undefined ? { fromEmail: b.from } : {}),
    ...(b.fromName !== undefined ? { fromName: b.fromName || null } : {}),
    ...(b.replyTo !== undefined ? { replyTo: b.replyTo } : {}),
    ...(b.type !== undefined ? { type: b.type } : {}),
    ...(b.bodyType !== undefined ? { bodyType: b.bodyType } : {}),
  };
}

export function templateRoutes(router: Router, { knex, render }: { knex: Knex; render: Renderer }): void {
  router.get('/templates', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const q = validateQuery<ListTemplatesQuery>(ctx, listTemplatesQuerySchema);
    const { page, count } = templateListQueries(knex, projectId, q, q.limit, decodeCursor(q.cursor));
    const [rows, total] = await Promise.all([page, count]);
    ctx.body = { success: true, data: toPage(rows, q.limit, total, templateJson) };
  });

  router.post('/templates', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const body = validateBody<TemplateBody>(ctx, createTemplateSchema);
    await checkContent(render, body.subject, body.body, body.bodyType ?? 'html');
    const row = await Template.query(knex).insert({ projectId, type: 'TRANSACTIONAL', bodyType: 'html', ...columns(body) }).returning('*');
    ctx.status = 201;
    ctx.body = { success: true, data: templateJson(row as unknown as Template) };
  });

  router.get('/templates/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const id = ctx.params.id!;
    const t = isUuid(id) ? await getTemplate(knex, projectId, id) : undefined;
    if (!t) throw notFound('Template');
    ctx.body = { success: true, data: templateJson(t) };
  });

  router.patch('/templates/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const id = ctx.params.id!;
    if (!isUuid(id)) throw notFound('Template');
    const body = validateBody<PatchTemplateBody>(ctx, patchTemplateSchema);
    const updated = await knex.transaction(async (trx) => {
      const current = await Template.query(trx).findOne({ project_id: projectId, id }).forUpdate();
      if (!current) return undefined;
      await checkContent(render, body.subject ?? current.subject, body.body ?? current.body, body.bodyType ?? current.bodyType);
      const [row] = await trx('templates').where({ project_id: projectId, id })
        .update(Template.fromJson({ ...columns(body), updatedAt: new Date() }, { patch: true, skipValidation: true }).$toDatabaseJson())
        .returning('*');
      return Template.fromDatabaseJson(row);
    });
    if (!updated) throw notFound('Template');
    ctx.body = { success: true, data: templateJson(updated) };
  });

  router.delete('/templates/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const id = ctx.params.id!;
    if (!isUuid(id)) throw notFound('Template');
    // A template an enabled workflow sends is in use (decisions.md: 409). Sent and queued emails keep their own copy.
    const users: { name: string }[] = await knex('automations').where({ project_id: projectId, enabled: true })
      .whereRaw('template_ids @> ARRAY[?]::uuid[]', [id]).select('name');
    if (users.length) {
      throw conflict(`Template is used by enabled workflows: ${users.map((u) => u.name).join(', ')}`, 'Disable those workflows or change their SEND_EMAIL steps first.');
    }
    const deleted = await Template.query(knex).delete().where({ project_id: projectId, id });
    if (!deleted) throw notFound('Template');
    ctx.status = 204;
  });
}
