import { actorOf } from '../../audit/log';
import type { AutomationRow, ExecutionRow } from '../../automations/automations';
import type { Trace } from '../../automations/trace';
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
    id: x.id, workflowId: x.automation_id, contactId: x.contact_id, contactEmail: x.contact_email, status: x.status, currentStepId: x.current_step_id,
    // While WAITING: what for, and until when (null: no timeout).
    ...(x.status === 'WAITING' ? { waitingFor: x.wait_event, waitingUntil: x.wait_until?.toISOString() ?? null } : {}),
    startedAt: x.started_at.toISOString(), updatedAt: x.updated_at.toISOString(), completedAt: x.completed_at?.toISOString() ?? null, error: x.error,
  };
}

export function executionDetailJson(x: ExecutionRow & { trace: Trace }) {
  return {
    ...executionJson(x),
    trace: x.trace.entries.map((e) => ({
      seq: e.seq, stepId: e.stepId, outcome: e.outcome, branch: e.branch, wokenBy: e.wokenBy, error: e.error,
      startedAt: e.startedAt.toISOString(), endedAt: e.endedAt?.toISOString() ?? null,
    })),
    traceTruncated: x.trace.truncated,
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
    answers: ok('A page of executions; total exact up to 1,000 (totalExact).', A.cappedPageOf(A.executionAnswer)), links: first('getWorkflowExecution', 'executionId', 'id'),
    before: owned,
    handleLooksUp: true,
    async handle({ auth, params, query: q, services }) {
      const { rows, total, totalExact } = await services.automations.executions(auth.projectId, params.id, { status: q.status, contactId: q.contactId }, { limit: q.limit, afterId: decodeCursor(q.cursor) });
      return reply({ ...toPage(rows, q.limit, total, executionJson), totalExact });
    } }),

  route({ operationId: 'getWorkflowExecution', method: 'get', path: '/workflows/:id/executions/:executionId', summary: 'Get an execution', tag: 'Workflows', access: 'secret', permission: 'read',
    description: 'With its trace: the steps it has run, in order, with their times and outcomes (the branch a CONDITION took, how a wait ended).',
    params: { executionId: uuidParam }, answers: ok('The execution and its trace.', A.executionDetailAnswer),
    handle: async ({ auth, params, services }) => reply(executionDetailJson(await services.automations.execution(auth.projectId, params.id, params.executionId))) }),

  route({ operationId: 'cancelWorkflowExecution', method: 'post', path: '/workflows/:id/executions/:executionId/cancel', summary: 'Cancel an execution', tag: 'Workflows', access: 'secret', permission: 'write',
    description: 'A RUNNING or WAITING execution becomes CANCELLED at once and takes no further step (a step in progress finishes first). One that has ended answers 409.',
    params: { executionId: uuidParam }, answers: ok('The execution, CANCELLED.', A.executionAnswer), errors: [409],
    handle: async ({ auth, params, services }) => reply(executionJson(await services.automations.cancelExecution(auth.projectId, params.id, params.executionId, actorOf(auth)))) }),
];
