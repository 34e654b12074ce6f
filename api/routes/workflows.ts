import type Router from '@koa/router';
import type { Knex } from 'knex';
import { checkReferences, checkSteps, normaliseSteps } from '../../automations/definition';
import { cancelExecutions, liveRuns } from '../../db/queries/executions';
import { cancelEngineExecutions } from '../../engine/cancelExecutions';
import type { Engine } from '../../engine/types';
import type { Logger } from '../../logging/logger';
import { notFound, validationFailed } from '../errors';
import type { AuthState } from '../middleware/auth';
import { isUuid } from '../../core/values';
import { decodeCursor, toPage } from '../pagination';
import { templateIdsOf, type Step } from '../../automations/steps';
import {
  createWorkflowSchema, listExecutionsQuerySchema, listWorkflowsQuerySchema, patchWorkflowSchema,
  type CreateWorkflowBody, type ListExecutionsQuery, type ListWorkflowsQuery, type PatchWorkflowBody,
} from '../schemas/workflows';
import { validateBody, validateQuery } from '../validate';

interface AutomationRow {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  enabled: boolean;
  trigger_event: string;
  steps: Step[];
  allow_reentry: boolean;
  created_at: Date;
  updated_at: Date;
}

interface ExecutionRow {
  id: string;
  automation_id: string;
  contact_id: string;
  status: string;
  current_step_id: string | null;
  wait_event: string | null;
  wait_until: Date | null;
  error: string | null;
  started_at: Date;
  completed_at: Date | null;
}

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

/** The definition's graph, and its templates and segments in this project: 422 naming the step. */
async function checkDefinition(db: Knex, projectId: string, steps: Step[]): Promise<void> {
  const errors = checkSteps(steps);
  if (errors.length) throw validationFailed(errors);
  const refs = await checkReferences(db, projectId, steps);
  if (refs.length) throw validationFailed(refs);
}

async function findWorkflow(db: Knex, projectId: string, id: string): Promise<AutomationRow> {
  const row = isUuid(id) ? await db('automations').where({ project_id: projectId, id }).first() : undefined;
  if (!row) throw notFound('Workflow');
  return row;
}


export function workflowRoutes(router: Router, knex: Knex, engine: Engine, log: Logger): void {
  router.get('/workflows', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const q = validateQuery<ListWorkflowsQuery>(ctx, listWorkflowsQuerySchema);
    const afterId = decodeCursor(q.cursor);
    const where = (b: Knex.QueryBuilder) => {
      b.where('project_id', projectId);
      if (q.enabled !== undefined) b.where('enabled', q.enabled);
      return b;
    };
    const page = where(knex('automations')).orderBy('id', 'desc').limit(q.limit + 1);
    if (afterId) page.where('id', '<', afterId);
    const [rows, total] = await Promise.all([page as Promise<AutomationRow[]>, where(knex('automations')).count('* as n').first()]);
    ctx.body = { success: true, data: toPage(rows, q.limit, Number(total?.n ?? 0), workflowJson) };
  });

  router.post('/workflows', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const body = validateBody<CreateWorkflowBody>(ctx, createWorkflowSchema);
    body.steps = normaliseSteps(body.steps);
    await checkDefinition(knex, projectId, body.steps);
    const [row] = await knex('automations').insert({
      project_id: projectId, name: body.name, description: body.description || null, enabled: body.enabled ?? false,
      trigger_event: body.trigger.event, steps: JSON.stringify(body.steps), allow_reentry: body.allowReentry ?? false,
      template_ids: templateIdsOf(body.steps),
    }).returning('*');
    ctx.status = 201;
    ctx.body = { success: true, data: workflowJson(row) };
  });

  router.get('/workflows/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    ctx.body = { success: true, data: workflowJson(await findWorkflow(knex, projectId, ctx.params.id!)) };
  });

  router.patch('/workflows/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const current = await findWorkflow(knex, projectId, ctx.params.id!);
    const body = validateBody<PatchWorkflowBody>(ctx, patchWorkflowSchema);
    if (body.steps) {
      body.steps = normaliseSteps(body.steps);
      await checkDefinition(knex, projectId, body.steps);
    } else if (body.enabled && !current.enabled) {
      // While it was disabled, its templates or segments may have been deleted: enable only what can run.
      await checkDefinition(knex, projectId, current.steps);
    }
    const { row, cancelled } = await knex.transaction(async (trx) => {
      const [updated]: AutomationRow[] = await trx('automations').where({ project_id: projectId, id: current.id }).update({
        ...(body.name !== undefined ? { name: body.name } : {}),
        ...(body.description !== undefined ? { description: body.description || null } : {}),
        ...(body.enabled !== undefined ? { enabled: body.enabled } : {}),
        ...(body.trigger ? { trigger_event: body.trigger.event } : {}),
        ...(body.steps ? { steps: JSON.stringify(body.steps), template_ids: templateIdsOf(body.steps) } : {}),
        ...(body.allowReentry !== undefined ? { allow_reentry: body.allowReentry } : {}),
        updated_at: trx.fn.now(),
      }).returning('*');
      if (!updated) throw notFound('Workflow'); // deleted meanwhile
      // Disabling stops the journeys under way; editing the steps does not (each execution keeps the steps it started with).
      const ids = updated.enabled ? [] : await cancelExecutions(trx, projectId, current.id);
      return { row: updated, cancelled: ids };
    });
    cancelEngineExecutions(engine, cancelled, log);
    ctx.body = { success: true, data: workflowJson(row) };
  });

  router.delete('/workflows/:id', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const current = await findWorkflow(knex, projectId, ctx.params.id!);
    const cancelled = await knex.transaction(async (trx) => {
      const live = await liveRuns(trx, projectId, current.id);
      await trx('automations').where({ project_id: projectId, id: current.id }).delete(); // its executions with it
      return live;
    });
    cancelEngineExecutions(engine, cancelled, log);
    ctx.status = 204;
  });

  router.get('/workflows/:id/executions', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const workflow = await findWorkflow(knex, projectId, ctx.params.id!);
    const q = validateQuery<ListExecutionsQuery>(ctx, listExecutionsQuerySchema);
    const afterId = decodeCursor(q.cursor);
    const where = (b: Knex.QueryBuilder) => {
      b.where({ project_id: projectId, automation_id: workflow.id });
      if (q.status) b.where('status', q.status);
      if (q.contactId) b.where('contact_id', q.contactId);
      return b;
    };
    const page = where(knex('automation_executions')).orderBy('id', 'desc').limit(q.limit + 1);
    if (afterId) page.where('id', '<', afterId);
    const [rows, total] = await Promise.all([page as Promise<ExecutionRow[]>, where(knex('automation_executions')).count('* as n').first()]);
    ctx.body = { success: true, data: toPage(rows, q.limit, Number(total?.n ?? 0), executionJson) };
  });

  router.get('/workflows/:id/executions/:executionId', async (ctx) => {
    const { projectId } = ctx.state.auth as AuthState;
    const workflow = await findWorkflow(knex, projectId, ctx.params.id!);
    const id = ctx.params.executionId!;
    const row = isUuid(id) ? await knex('automation_executions').where({ project_id: projectId, automation_id: workflow.id, id }).first() : undefined;
    if (!row) throw notFound('Execution');
    ctx.body = { success: true, data: executionJson(row) };
  });
}
