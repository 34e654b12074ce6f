import { actorOf } from '../../audit/log';
import type { Template } from '../../db/models/Template';
import { crud, created, noContent, ok } from '../openapi/operations';
import { decodeCursor, toPage } from '../pagination';
import { deleted, reply, route } from '../route';
import * as A from '../schemas/answers';
import { createTemplateSchema, listTemplatesQuerySchema, patchTemplateSchema, previewTemplateSchema, testTemplateSchema } from '../schemas/templates';

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

/** Templates (templates/templates.ts). */
export const templateRoutes = [
  route({ operationId: 'listTemplates', method: 'get', path: '/templates', summary: 'List templates', tag: 'Templates', access: 'secret', permission: 'read', query: listTemplatesQuerySchema, answers: ok('A page of templates.', A.pageOf(A.templateAnswer)),
    async handle({ auth, query: q, services }) {
      const { rows, total } = await services.templates.list(auth.projectId, { type: q.type }, { limit: q.limit, afterId: decodeCursor(q.cursor) });
      return reply(toPage(rows, q.limit, total, templateJson));
    } }),

  route({ operationId: 'createTemplate', method: 'post', path: '/templates', summary: 'Create a template', tag: 'Templates', access: 'secret', permission: 'write', body: createTemplateSchema,
    answers: created('Created.', A.templateAnswer), links: crud('Template'),
    handle: async ({ auth, body, services }) => reply(templateJson(await services.templates.create(auth.projectId, body)), 201) }),

  // `read`: a preview changes nothing and shows only what a viewer may read already (the project's contacts), and its
  // cost is bounded as a send's is (render budgets, the render pool's share per project, the rate limit).
  route({ operationId: 'previewTemplate', method: 'post', path: '/templates/preview', summary: 'Preview a template', tag: 'Templates', access: 'secret', permission: 'read', body: previewTemplateSchema,
    description: 'Renders a subject and body (saved or not) as a send would, for a contact of the project or a recipient with no data, within the same rendering limits. Stores nothing; `{{ unsubscribeUrl }}` is an inert link.',
    answers: ok('The rendered subject and HTML.', A.templatePreviewAnswer),
    handle: async ({ auth, body, services }) => reply(await services.templates.preview(auth.projectId, body)) }),

  route({ operationId: 'getTemplate', method: 'get', path: '/templates/:id', summary: 'Get a template', tag: 'Templates', access: 'secret', permission: 'read', answers: ok('The template.', A.templateAnswer),
    handle: async ({ auth, params, services }) => reply(templateJson(await services.templates.get(auth.projectId, params.id))) }),

  route({ operationId: 'updateTemplate', method: 'patch', path: '/templates/:id', summary: 'Update a template', tag: 'Templates', access: 'secret', permission: 'write', body: patchTemplateSchema, answers: ok('The template.', A.templateAnswer),
    handle: async ({ auth, params, body, services }) => reply(templateJson(await services.templates.update(auth.projectId, params.id, body))) }),

  route({ operationId: 'testTemplate', method: 'post', path: '/templates/:id/test', summary: 'Send [TEST] copies', tag: 'Templates', access: 'secret', permission: 'send', body: testTemplateSchema, bodyOptional: true,
    description: 'Renders the saved template for a contact of the project or a recipient with no data, and queues `[TEST]` copies from its sender to `to` (default: the address of the person signed in), delivered as any email. Creates no contact.',
    answers: ok('The test emails.', A.campaignTestAnswer),
    // Another project's template is a 404 whatever the body says.
    before: ({ auth, params, services }) => services.templates.get(auth.projectId, params.id),
    handle: async ({ auth, params, body, services }) => reply({ emails: await services.templates.test(auth.projectId, params.id, body, auth.principal) }) }),

  route({ operationId: 'deleteTemplate', method: 'delete', path: '/templates/:id', summary: 'Delete a template', tag: 'Templates', access: 'secret', permission: 'write', answers: noContent('Deleted.'), errors: [409],
    description: 'A template used by an enabled workflow, or by a campaign that is DRAFT, SCHEDULED or SENDING, is not deleted: 409 naming them.',
    async handle({ auth, params, services }) {
      await services.templates.remove(auth.projectId, params.id, actorOf(auth));
      return deleted;
    } }),
];
