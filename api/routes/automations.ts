import { actorOf } from '../../audit/log';
import type { AutomationRow, ExecutionRow } from '../../automations/automations';
import { crud, created, first, noContent, ok, uuidParam } from '../openapi/operations';
import { decodeCursor, toPage } from '../pagination';
import { deleted, reply, route, type Lookup } from '../route';
import * as A from '../schemas/answers';
import { createWorkflowSchema, listExecutionsQuerySchema, listWorkflowsQuerySchema, patchWorkflowSchema } from '../schemas/workflows';

export function workflowJson(w: AutomationRow) {
  return {
    id: w.id, name: w.name, description: w.description, enabled: w.enabled,
    trigger: { type: 'EVENT', event: w.trigger_event }, steps: w.steps, allowReentry: w.allow_reentry,
    createdAt: w.created_at.toISOString(), updatedAt: w.updated_at.toISOString(),
  };
}

export function executionJson(x: ExecutionRow) {
  return {
    id: x.id, workflowId: x.automation_id, contactId: x.contact_id, status: x.status, currentStepId: x.current_step_id,
    // While WAITING: what for, and until when (null: no timeout).
    ...(x.status === 'WAITING' ? { waitingFor: x.wait_event, waitingUntil: x.wait_until?.toISOString() ?? null } : {}),
    startedAt: x.started_at.toISOString(), completedAt: x.completed_at?.toISOString() ?? null, error: x.error,
  };
}

// Another project's workflow is a 404 whatever the body or query says.
const owned = ({ auth, params, services }: Lookup<'/workflows/:id'>) => services.automations.get(auth.projectId, params.id);

/** Spec 4.7: automations, which the API calls workflows (automations/automations.ts). */
export const automationRoutes = [
  route({ operationId: 'listWorkflows', method: 'get', path: '/workflows', summary: 'List workflows', tag: 'Workflows', access: 'secret', permission: 'read', query: listWorkflowsQuerySchema, answers: ok('A page of workflows.', A.pageOf(A.workflowAnswer)),
    async handle({ auth, query: q, services }) {
      const { rows, total } = await services.automations.list(auth.projectId, { enabled: q.enabled }, { limit: q.limit, afterId: decodeCursor(q.cursor) });
      return reply(toPage(rows, q.limit, total, workflowJson));
    } }),

  route({ operationId: 'createWorkflow', method: 'post', path: '/workflows', summary: 'Create a workflow', tag: 'Workflows', access: 'secret', permission: 'write', body: createWorkflowSchema,
    description: "A step's `config` depends on its `type` (docs/api.md, Workflows); `next` is refused on EXIT and CONDITION steps, `branches` required on CONDITION and refused elsewhere.",
    answers: created('Created.', A.workflowAnswer),
    links: crud('Workflow', undefined, undefined, ['get', 'update', 'delete', 'listWorkflowExecutions:']),
    handle: async ({ auth, body, services }) => reply(workflowJson(await services.automations.create(auth.projectId, body)), 201) }),

  route({ operationId: 'getWorkflow', method: 'get', path: '/workflows/:id', summary: 'Get a workflow', tag: 'Workflows', access: 'secret', permission: 'read', answers: ok('The workflow.', A.workflowAnswer),
    handle: async (call) => reply(workflowJson(await owned(call))) }),

  route({ operationId: 'updateWorkflow', method: 'patch', path: '/workflows/:id', summary: 'Update a workflow', tag: 'Workflows', access: 'secret', permission: 'write', body: patchWorkflowSchema, answers: ok('The workflow.', A.workflowAnswer),
    before: owned,
    handle: async ({ auth, params, body, services }) => reply(workflowJson(await services.automations.update(auth.projectId, params.id, body))) }),

  route({ operationId: 'deleteWorkflow', method: 'delete', path: '/workflows/:id', summary: 'Delete a workflow', tag: 'Workflows', access: 'secret', permission: 'write', answers: noContent('Deleted.'),
    async handle({ auth, params, services }) {
      await services.automations.remove(auth.projectId, params.id, actorOf(auth));
      return deleted;
    } }),

  route({ operationId: 'listWorkflowExecutions', method: 'get', path: '/workflows/:id/executions', summary: "List a workflow's executions", tag: 'Workflows', access: 'secret', permission: 'read', query: listExecutionsQuerySchema,
    answers: ok('A page of executions.', A.pageOf(A.executionAnswer)), links: first('getWorkflowExecution', 'executionId', 'id'),
    before: owned,
    async handle({ auth, params, query: q, services }) {
      const { rows, total } = await services.automations.executions(auth.projectId, params.id, { status: q.status, contactId: q.contactId }, { limit: q.limit, afterId: decodeCursor(q.cursor) });
      return reply(toPage(rows, q.limit, total, executionJson));
    } }),

  route({ operationId: 'getWorkflowExecution', method: 'get', path: '/workflows/:id/executions/:executionId', summary: 'Get an execution', tag: 'Workflows', access: 'secret', permission: 'read',
    params: { executionId: uuidParam }, answers: ok('The execution.', A.executionAnswer),
    handle: async ({ auth, params, services }) => reply(executionJson(await services.automations.execution(auth.projectId, params.id, params.executionId))) }),
];
