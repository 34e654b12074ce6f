import type { Knex } from 'knex';
import { conflict, invalid, notFound } from '../core/errors';
import { isUuid } from '../core/values';
import type { Listed, PageRequest } from '../db/pages';
import { Template, type BodyType, type TemplateType } from '../db/models/Template';
import { getTemplate as findTemplate, listTemplates as listTemplateRows } from '../db/queries/templates';
import { checkTemplate, type Renderer } from '../mail/render';
import { audited, type Actor } from '../audit/log';

/** A template as written through any way in (POST /templates; PATCH takes any part of it). */
export interface TemplateInput {
  name: string;
  description?: string | null;
  subject: string;
  body: string;
  from?: string | null;
  fromName?: string | null;
  replyTo?: string | null;
  type?: TemplateType;
  /** How `body` is written (`type` is TRANSACTIONAL or MARKETING). */
  bodyType?: BodyType;
}

/**
 * A template that does not parse, or that passes the render budgets by itself (with no data), is refused at write
 * time, not discovered at send time.
 */
async function checkContent(render: Renderer, subject: string, body: string, bodyType: BodyType): Promise<void> {
  const problem = await checkTemplate(render, subject, body, undefined, bodyType === 'markdown');
  if (problem) throw invalid([{ field: problem.part, message: problem.message, code: problem.code }]);
}

function columns(b: Partial<TemplateInput>) {
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

export function listTemplates(db: Knex, projectId: string, filter: { type?: TemplateType }, page: PageRequest): Promise<Listed<Template>> {
  return listTemplateRows(db, projectId, filter, page);
}

export async function getTemplate(db: Knex, projectId: string, id: string): Promise<Template> {
  const t = isUuid(id) ? await findTemplate(db, projectId, id) : undefined;
  if (!t) throw notFound('Template');
  return t;
}

export async function createTemplate(db: Knex, render: Renderer, projectId: string, input: TemplateInput): Promise<Template> {
  await checkContent(render, input.subject, input.body, input.bodyType ?? 'html');
  const row = await Template.query(db).insert({ projectId, type: 'TRANSACTIONAL', bodyType: 'html', ...columns(input) }).returning('*');
  return row as unknown as Template;
}

/** Changes what the patch names; the merged content is checked as a whole, under the row's lock. */
export async function updateTemplate(db: Knex, render: Renderer, projectId: string, id: string, patch: Partial<TemplateInput>): Promise<Template> {
  if (!isUuid(id)) throw notFound('Template');
  const updated = await db.transaction(async (trx) => {
    const current = await Template.query(trx).findOne({ project_id: projectId, id }).forUpdate();
    if (!current) return undefined;
    await checkContent(render, patch.subject ?? current.subject, patch.body ?? current.body, patch.bodyType ?? current.bodyType);
    const [row] = await trx('templates').where({ project_id: projectId, id })
      .update(Template.fromJson({ ...columns(patch), updatedAt: new Date() }, { patch: true, skipValidation: true }).$toDatabaseJson())
      .returning('*');
    return Template.fromDatabaseJson(row);
  });
  if (!updated) throw notFound('Template');
  return updated;
}

/** A template an enabled workflow sends is in use (decisions.md: 409). Sent and queued emails keep their own copy. */
export async function deleteTemplate(db: Knex, projectId: string, id: string): Promise<void> {
  if (!isUuid(id)) throw notFound('Template');
  const users: { name: string }[] = await db('automations').where({ project_id: projectId, enabled: true })
    .whereRaw('template_ids @> ARRAY[?]::uuid[]', [id]).select('name');
  if (users.length) {
    throw conflict(`Template is used by enabled workflows: ${users.map((u) => u.name).join(', ')}`, 'Disable those workflows or change their SEND_EMAIL steps first.');
  }
  const deleted = await Template.query(db).delete().where({ project_id: projectId, id });
  if (!deleted) throw notFound('Template');
}

/** The functions above as one object over the app's database and render pool, the API's way in (like campaignService). */
export function templateService({ knex, render }: { knex: Knex; render: Renderer }) {
  return {
    list: (projectId: string, filter: { type?: TemplateType }, page: PageRequest) => listTemplates(knex, projectId, filter, page),
    get: (projectId: string, id: string) => getTemplate(knex, projectId, id),
    create: (projectId: string, input: TemplateInput) => createTemplate(knex, render, projectId, input),
    update: (projectId: string, id: string, patch: Partial<TemplateInput>) => updateTemplate(knex, render, projectId, id, patch),
    /** Audited in the transaction of the delete (audit/log.ts). */
    remove: (projectId: string, id: string, actor: Actor) =>
      audited(knex, projectId, actor, { operation: 'deleteTemplate', resourceType: 'template', resourceId: id }, (trx) => deleteTemplate(trx, projectId, id)),
  };
}

export type Templates = ReturnType<typeof templateService>;
