import type Router from '@koa/router';
import type { AutomationRow, Automations as Workflows, ExecutionRow } from '../../automations/automations';
import type { AuthState } from '../middleware/auth';
import { decodeCursor, toPage } from '../pagination';
import {
  createWorkflowSchema, listExecutionsQuerySchema, listWorkflowsQuerySchema, patchWorkflowSchema,
  type CreateWorkflowBody, type ListExecutionsQuery, type ListWorkflowsQuery, type PatchWorkflowBody,
} from '../schemas/workflows';
import { validateBody, validateQuery } from '../validate';

function workflowJson(w: AutomationRow) {
  return {
    id: w.id, name: w.name, description: w.description, enabled: w.enabled,
    trigger: { type: 'EVENT', event: w.trigger_event }, steps: w.steps, allowReentry: w.allow_reentry,
    createdAt: w.created_at.toISOString(), updatedAt: w.updated_at.toISOString(),
  };
}

function executionJson(x: ExecutionRow) {
  return {
    id: x.id, workflowId: x.automation_id, contactId: x.contact_id, status: x.status, currentStepId: x.current_step_id,
    // While WAITING: what for, and until when (null: no timeout).
    ...(x.status === 'WAITING' ? { waitingFor: x.wait_event, waitingUntil: x.wait_until?.toISOString() ?? null } : {}),
    startedAt: x.started_at.toISOString(), completedAt: x.completed_at?.toISOString() ?? null, error: x.error,
  };
}

/** Spec 4.7 (automations/automations.ts). */
export function workflowRoutes(router: Router, workflows: Workflows): void {
  router.get('/workflows', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const q = validateQuery<ListWorkflowsQuery>(ctx, listWorkflowsQuerySchema);
    const { rows, total } = await workflows.list(projectId, { enabled: q.enabled }, { limit: q.limit, afterId: decodeCursor(q.cursor) });
    ctx.body = { success: true, data: toPage(rows, q.limit, total, workflowJson) };
  });

  router.post('/workflows', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const row = await workflows.create(projectId, validateBody<CreateWorkflowBody>(ctx, createWorkflowSchema));
    ctx.status = 201;
    ctx.body = { success: true, data: workflowJson(row) };
  });

  router.get('/workflows/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    ctx.body = { success: true, data: workflowJson(await workflows.get(projectId, ctx.params.id!)) };
  });

  router.patch('/workflows/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    await workflows.get(projectId, ctx.params.id!); // another project's workflow is a 404 whatever the body says
    const body = validateBody<PatchWorkflowBody>(ctx, patchWorkflowSchema);
    ctx.body = { success: true, data: workflowJson(await workflows.update(projectId, ctx.params.id!, body)) };
  });

  router.delete('/workflows/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    await workflows.remove(projectId, ctx.params.id!);
    ctx.status = 204;
  });

  router.get('/workflows/:id/executions', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    await workflows.get(projectId, ctx.params.id!);
    const q = validateQuery<ListExecutionsQuery>(ctx, listExecutionsQuerySchema);
    const { rows, total } = await workflows.executions(projectId, ctx.params.id!, { status: q.status, contactId: q.contactId }, { limit: q.limit, afterId: decodeCursor(q.cursor) });
    ctx.body = { success: true, data: toPage(rows, q.limit, total, executionJson) };
  });

  router.get('/workflows/:id/executions/:executionId', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    ctx.body = { success: true, data: executionJson(await workflows.execution(projectId, ctx.params.id!, ctx.params.executionId!)) };
  });
}
