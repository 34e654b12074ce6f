import type Router from '@koa/router';
import type { Knex } from 'knex';
import type { Template } from '../../db/models/Template';
import type { Renderer } from '../../mail/render';
import { createTemplate, deleteTemplate, getTemplate, listTemplates, updateTemplate } from '../../templates/templates';
import type { AuthState } from '../middleware/auth';
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

export function templateRoutes(router: Router, { knex, render }: { knex: Knex; render: Renderer }): void {
  router.get('/templates', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const q = validateQuery<ListTemplatesQuery>(ctx, listTemplatesQuerySchema);
    const { rows, total } = await listTemplates(knex, projectId, { type: q.type }, { limit: q.limit, afterId: decodeCursor(q.cursor) });
    ctx.body = { success: true, data: toPage(rows, q.limit, total, templateJson) };
  });

  router.post('/templates', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const row = await createTemplate(knex, render, projectId, validateBody<TemplateBody>(ctx, createTemplateSchema));
    ctx.status = 201;
    ctx.body = { success: true, data: templateJson(row) };
  });

  router.get('/templates/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    ctx.body = { success: true, data: templateJson(await getTemplate(knex, projectId, ctx.params.id!)) };
  });

  router.patch('/templates/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const body = validateBody<PatchTemplateBody>(ctx, patchTemplateSchema);
    ctx.body = { success: true, data: templateJson(await updateTemplate(knex, render, projectId, ctx.params.id!, body)) };
  });

  router.delete('/templates/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    await deleteTemplate(knex, projectId, ctx.params.id!);
    ctx.status = 204;
  });
}
