import type { Knex } from 'knex';
import { conflict, invalid, notFound } from '../core/errors';
import { isUuid } from '../core/values';
import type { Listed, PageRequest } from '../db/pages';
import { Template, type BodyType, type TemplateType } from '../db/models/Template';
import { getTemplate as findTemplate, listTemplates as listTemplateRows } from '../db/queries/templates';
import { getContact as findContact } from '../db/queries/contacts';
import { isVerifiedSender } from '../db/queries/domains';
import { queueTestEmails } from '../db/queries/testEmails';
import { checkTemplate, INERT_UNSUBSCRIBE_URL, messageScope, RENDER_LIMITS_HINT, sampleRecipient, type Renderer, type RenderScope } from '../mail/render';
import { testSubject } from '../mail/message';
import { dataValues, type RequestData } from '../core/requestData';
import { emailOfUser } from '../people/users';
import { mayUseFrom } from '../projects/keys';
import type { Principal } from '../projects/roles';
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

/**
 * A template an enabled workflow sends, or that a campaign not yet sent is written from (DRAFT, SCHEDULED, SENDING), is
 * in use (decisions.md: 409). Sent and queued emails keep their own copy, and a campaign took the template's parts when
 * it started sending. Called in a transaction (templateService.remove): the delete takes the template's row first, so a
 * campaign being written from it (which reads it under a share lock: campaigns/content.ts) either commits first and is
 * seen here, or waits and then finds the template gone.
 */
export async function deleteTemplate(db: Knex.Transaction, projectId: string, id: string): Promise<void> {
  if (!isUuid(id)) throw notFound('Template');
  const deleted = await Template.query(db).delete().where({ project_id: projectId, id });
  if (!deleted) throw notFound('Template');
  const [workflows, campaigns]: [{ name: string }[], { name: string }[]] = await Promise.all([
    db('automations').where({ project_id: projectId, enabled: true }).whereRaw('template_ids @> ARRAY[?]::uuid[]', [id]).select('name'),
    // Written from it, or one of its A/B variants is.
    db('campaigns as k').where('k.project_id', projectId).whereIn('k.status', ['DRAFT', 'SCHEDULED', 'SENDING'])
      .where((q) => q.where('k.template_id', id).orWhereExists(db('campaign_variants as v').whereRaw('v.project_id = k.project_id AND v.campaign_id = k.id').where('v.template_id', id)))
      .orderBy('k.name').select('k.name'),
  ]);
  if (workflows.length) {
    throw conflict(`Template is used by enabled workflows: ${workflows.map((u) => u.name).join(', ')}`, 'Disable those workflows or change their SEND_EMAIL steps first.');
  }
  if (campaigns.length) {
    throw conflict(`Template is used by campaigns not sent yet: ${campaigns.map((c) => c.name).join(', ')}`,
      'Let them finish sending, cancel them, or choose other content for the drafts (PATCH /campaigns/:id with templateId null) first.');
  }
}

/**
 * What a preview or a test is rendered for, as POST /v1/send renders a template: the request's `data` (top-level
 * variables), and a contact of the project for its own fields (`email`, `data.*`, `contact.*`), or none.
 */
export interface RenderFor {
  contactId?: string;
  data?: RequestData;
}

/** A template's content as the editor holds it, saved or not. */
export interface PreviewInput extends RenderFor {
  subject: string;
  body: string;
  bodyType?: BodyType;
}

export interface RenderedMessage {
  subject: string;
  html: string;
}

/** The contact a preview or a test is rendered for: one of the project's, named in the body (so a 422, not a 404). */
async function chosenContact(db: Knex, projectId: string, contactId: string | undefined) {
  if (contactId === undefined) return undefined;
  const contact = isUuid(contactId) ? await findContact(db, projectId, contactId) : undefined;
  if (!contact) throw invalid([{ field: 'contactId', message: 'contact not found in this project', code: 'not_found' }], 'GET /contacts lists the project\'s contacts and their ids.');
  return { id: contact.id, email: contact.email, subscribed: contact.subscribed, data: contact.data };
}

/**
 * Renders a template's subject and body for `scopes` on the render pool, within the budgets of one send request (the
 * same render job as POST /v1/send's, mail/render.ts): a syntax error or a passed budget is the API's 422 naming the
 * part at fault.
 */
async function renderFor(render: Renderer, projectId: string, content: { subject: string; body: string; bodyType: BodyType }, scopes: RenderScope[]): Promise<RenderedMessage[]> {
  const outcome = (await render([{ subject: content.subject, body: content.body, scopes, ...(content.bodyType === 'markdown' ? { markdown: true } : {}) }], projectId))[0]!;
  if ('failed' in outcome) {
    const { part, message, code } = outcome.failed;
    throw invalid([{ field: part, message, code }], code === 'invalid_template' ? undefined : RENDER_LIMITS_HINT);
  }
  return outcome.rendered;
}

/**
 * A template as it would be sent (POST /templates/preview): its content as given (saved or not), for a contact or a
 * recipient with no data. Nothing is stored; the unsubscribe link is inert.
 */
export async function previewTemplate(db: Knex, render: Renderer, projectId: string, input: PreviewInput): Promise<RenderedMessage> {
  const contact = await chosenContact(db, projectId, input.contactId);
  const scope = messageScope(dataValues(input.data), contact ?? sampleRecipient(), INERT_UNSUBSCRIBE_URL);
  const [message] = await renderFor(render, projectId, { subject: input.subject, body: input.body, bodyType: input.bodyType ?? 'html' }, [scope]);
  return message!;
}

export interface TestInput extends RenderFor {
  /** Up to 10 addresses; by default the address of the person signed in (a key must name them). */
  to?: string[];
}

/**
 * `[TEST]` copies of a saved template (POST /templates/:id/test), rendered now as its preview is (for a chosen contact,
 * else for each address as a recipient with no data) and queued for delivery as the tests of a campaign are
 * (db/queries/testEmails.ts): from the template's sender, which must be at a verified domain the caller may send from.
 * Nothing else changes: no contact is created, the unsubscribe link is inert.
 */
export async function testTemplate(db: Knex, render: Renderer, projectId: string, id: string, input: TestInput, caller: Principal): Promise<{ email: string; id: string }[]> {
  const template = await getTemplate(db, projectId, id);
  let to = [...new Set(input.to ?? [])];
  if (!to.length) {
    const own = caller.kind === 'user' ? await emailOfUser(db, caller.userId) : undefined;
    if (!own) throw invalid([{ field: 'to', message: 'to is required when calling with an API key (a person signed in gets the test at their own address)', code: 'required' }]);
    to = [own];
  }
  const from = template.fromEmail;
  if (!from) {
    throw invalid([{ field: 'from', message: 'the template has no sender (from) to send the test from', code: 'required' }],
      'Set the template\'s from address (PATCH /templates/:id), at a verified domain of the project.');
  }
  if (caller.kind === 'key' && !mayUseFrom(caller.domains, from)) {
    throw invalid([{ field: 'from', message: `From ${from} is not at a domain this API key may send from (${caller.domains!.join(', ')})`, code: 'domain_not_allowed' }]);
  }
  if (!(await isVerifiedSender(db, projectId, from))) {
    throw invalid([{ field: 'from', message: `${from} is not at a verified domain of this project`, code: 'unverified_domain' }], `Verify ${from.split('@')[1]} first (POST /domains).`);
  }
  const contact = await chosenContact(db, projectId, input.contactId);
  const data = dataValues(input.data);
  const rendered = await renderFor(render, projectId, template, to.map((email) => messageScope(data, contact ?? sampleRecipient(email), INERT_UNSUBSCRIBE_URL)));
  return queueTestEmails(db, {
    projectId, to, templateId: template.id, from, fromName: template.fromName, replyTo: template.replyTo,
    messages: rendered.map((m) => ({ subject: testSubject(m.subject), html: m.html })),
  });
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
    preview: (projectId: string, input: PreviewInput) => previewTemplate(knex, render, projectId, input),
    test: (projectId: string, id: string, input: TestInput, caller: Principal) => testTemplate(knex, render, projectId, id, input, caller),
  };
}

export type Templates = ReturnType<typeof templateService>;
