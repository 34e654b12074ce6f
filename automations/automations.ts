import type { Knex } from 'knex';
import { conflict, invalid, notFound } from '../core/errors';
import { isUuid } from '../core/values';
import { ownedRow } from '../db/owned';
import { cappedCount, cappedTotal, listPage, pageQueries, pageWithTotal, shapedPageCache, wholeOf, type CappedList, type ListRows, type Listed, type PageRequest, type PageStatementOptions } from '../db/pages';
import { ACTIVE_STATUSES, cancelExecutions, endedColumns, liveRuns } from '../db/queries/executions';
import { cancelEngineExecutions } from './cancelExecutions';
import type { Engine } from '../engine/types';
import type { Logger } from '../logging/logger';
import { checkReferences, checkSteps, normaliseSteps } from './definition';
import { templateIdsOf, type ExecutionStatus, type Step } from './steps';
import { audited, type Actor } from '../audit/log';
import { traceOf, type Trace } from './trace';

/**
 * Automations (spec 4.7, decisions.md; the API's /workflows): a trigger event and steps, run per contact as
 * executions by the runAutomation engine workflow (workflows/runAutomation.ts). An automation is the user's
 * definition; the engine workflows of workflows/ are Herald's durable code. Every call is scoped to the project;
 * another project's automation is not found (its error names it a Workflow, as the API does).
 */

export interface AutomationTrigger {
  type: 'EVENT';
  event: string;
}

/** An automation as written through any way in (create; an update takes any part of it). */
export interface AutomationInput {
  name: string;
  description?: string | null;
  enabled?: boolean;
  trigger: AutomationTrigger;
  steps: Step[];
  allowReentry?: boolean;
}

export interface AutomationRow {
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

export interface ExecutionRow {
  id: string;
  automation_id: string;
  contact_id: string;
  /** The contact's address (joined: a list names whom each journey is for). */
  contact_email: string;
  status: ExecutionStatus;
  current_step_id: string | null;
  wait_event: string | null;
  wait_until: Date | null;
  error: string | null;
  started_at: Date;
  completed_at: Date | null;
  updated_at: Date;
  /** A long wait ended its engine run (embedded engine): no run to stop, the row is all there is. */
  parked: boolean;
  /** Which engine run holds it (workflows/registry.ts workflowId.runAutomation). */
  run: number;
}

/** The definition's graph, and its templates and segments in this project: 422 naming the step. */
async function checkDefinition(db: Knex, projectId: string, steps: Step[]): Promise<void> {
  const errors = checkSteps(steps);
  if (errors.length) throw invalid(errors);
  const refs = await checkReferences(db, projectId, steps);
  if (refs.length) throw invalid(refs);
}

export interface Automations {
  list(projectId: string, filter: { enabled?: boolean }, page: PageRequest): Promise<Listed<AutomationRow>>;
  get(projectId: string, id: string): Promise<AutomationRow>;
  create(projectId: string, input: AutomationInput): Promise<AutomationRow>;
  /** Disabling stops the journeys under way; editing the steps does not (each execution keeps the steps it started with). */
  update(projectId: string, id: string, patch: Partial<AutomationInput>): Promise<AutomationRow>;
  /** Deletes the workflow with its executions; those under way are cancelled in the engine too. */
  remove(projectId: string, id: string, actor: Actor): Promise<void>;
  executions(projectId: string, workflowId: string, filter: ExecutionFilter, page: PageRequest): Promise<CappedList<ExecutionRow>>;
  /** One execution, with its trace (the steps it has run). */
  execution(projectId: string, workflowId: string, id: string): Promise<ExecutionRow & { trace: Trace }>;
  /** Cancels a RUNNING or WAITING execution (409 once it has ended): its row at once, then its engine run. */
  cancelExecution(projectId: string, workflowId: string, id: string, actor: Actor): Promise<ExecutionRow>;
}

/** The contact's address beside an execution's own columns (`x`): a list names whom each journey is for. */
function withContact(q: Knex.QueryBuilder): Knex.QueryBuilder {
  return q.join('contacts as c', function on() { this.on('c.project_id', 'x.project_id').andOn('c.id', 'x.contact_id'); })
    .select('x.*', 'c.email as contact_email');
}
const executionsWithContact = (db: Knex | Knex.Transaction) => withContact(db('automation_executions as x'));

export interface ExecutionFilter {
  status?: ExecutionStatus;
  contactId?: string;
}

/**
 * A page of a workflow's executions and its capped count, and how to run them (exported for the EXPLAIN tests). The
 * page joins the contacts (its rows' addresses); the count does not need to (every execution has its contact). Its
 * total is exact up to 1,000 (LIST_COUNT_CAP): a workflow's 200,000 executions counted exactly cost a sequential scan.
 * Without a contact, the generic plan is the plan (db/pages.ts `genericPlan`): the workflow and a status are the
 * leading columns of indexes ending in id (automation_executions_list_idx, _status_idx), read newest first; a
 * contact's executions are planned for the value.
 */
export function executionListStatement(db: Knex, projectId: string, automationId: string, filter: ExecutionFilter, page: PageRequest) {
  const filtered = () => {
    const q = db('automation_executions as x').where({ 'x.project_id': projectId, 'x.automation_id': automationId });
    if (filter.status) q.where('x.status', filter.status);
    if (filter.contactId) q.where('x.contact_id', filter.contactId);
    return q;
  };
  const genericPlan = filter.contactId === undefined;
  return {
    page: withContact(pageQueries(filtered, page, 'x.id').page),
    count: cappedCount(filtered, undefined, genericPlan ? 'x.id' : undefined),
    options: { column: 'x.id', whole: wholeOf(page), genericPlan } satisfies PageStatementOptions,
  };
}

/** A workflow's pages of executions without a contact (every value bound), built and compiled once per shape. */
const executionPages = shapedPageCache<{ projectId: string; workflowId: string; status: ExecutionFilter['status'] }>();

/** A page of a workflow's executions and its capped count, in one statement (executionListStatement). */
function executionPage(db: Knex, projectId: string, workflowId: string, filter: ExecutionFilter, page: PageRequest): Promise<ListRows> {
  if (filter.contactId === undefined) {
    return executionPages(db, page, { projectId, workflowId, status: filter.status }, (v, r) => executionListStatement(db, v.projectId, v.workflowId, { status: v.status }, r));
  }
  const { page: rows, count, options } = executionListStatement(db, projectId, workflowId, filter, page);
  return pageWithTotal(rows, count, options);
}

export function automationService({ knex, engine, log }: { knex: Knex; engine: Engine; log: Logger }): Automations {
  const get = (projectId: string, id: string) => ownedRow<AutomationRow>(knex, 'automations', 'Workflow', projectId, id);

  return {
    list: (projectId, filter, page) => listPage<AutomationRow>(() => {
      const q = knex('automations').where('project_id', projectId);
      if (filter.enabled !== undefined) q.where('enabled', filter.enabled);
      return q;
    }, page),

    get,

    async create(projectId, input) {
      const steps = normaliseSteps(input.steps);
      await checkDefinition(knex, projectId, steps);
      const [row] = await knex('automations').insert({
        project_id: projectId, name: input.name, description: input.description || null, enabled: input.enabled ?? false,
        trigger_event: input.trigger.event, steps: JSON.stringify(steps), allow_reentry: input.allowReentry ?? false,
        template_ids: templateIdsOf(steps),
      }).returning('*');
      return row;
    },

    async update(projectId, id, patch) {
      const current = await get(projectId, id);
      const steps = patch.steps ? normaliseSteps(patch.steps) : undefined;
      if (steps) await checkDefinition(knex, projectId, steps);
      // While it was disabled, its templates or segments may have been deleted: enable only what can run.
      else if (patch.enabled && !current.enabled) await checkDefinition(knex, projectId, current.steps);
      const { row, cancelled } = await knex.transaction(async (trx) => {
        const [updated]: AutomationRow[] = await trx('automations').where({ project_id: projectId, id: current.id }).update({
          ...(patch.name !== undefined ? { name: patch.name } : {}),
          ...(patch.description !== undefined ? { description: patch.description || null } : {}),
          ...(patch.enabled !== undefined ? { enabled: patch.enabled } : {}),
          ...(patch.trigger ? { trigger_event: patch.trigger.event } : {}),
          ...(steps ? { steps: JSON.stringify(steps), template_ids: templateIdsOf(steps) } : {}),
          ...(patch.allowReentry !== undefined ? { allow_reentry: patch.allowReentry } : {}),
          updated_at: trx.fn.now(),
        }).returning('*');
        if (!updated) throw notFound('Workflow'); // deleted meanwhile
        const ids = updated.enabled ? [] : await cancelExecutions(trx, projectId, current.id);
        return { row: updated, cancelled: ids };
      });
      void cancelEngineExecutions(engine, cancelled, log);
      return row;
    },

    async remove(projectId, id, actor) {
      const current = await get(projectId, id);
      const cancelled = await audited(knex, projectId, actor, { operation: 'deleteWorkflow', resourceType: 'workflow', resourceId: current.id, details: { name: current.name } }, async (trx) => {
        const live = await liveRuns(trx, projectId, current.id);
        await trx('automations').where({ project_id: projectId, id: current.id }).delete(); // its executions with it
        return live;
      });
      void cancelEngineExecutions(engine, cancelled, log);
    },

    async executions(projectId, workflowId, filter, page) {
      // The page alone when it has rows: an execution names a workflow of its project (automation_executions_automation_fkey),
      // so its rows say the workflow is the project's. Only an empty page asks for the workflow (get's 404 for another
      // project's): one statement for a page of executions, where the lookup beside it was a second on another connection.
      if (!isUuid(workflowId)) await get(projectId, workflowId);
      const { rows: found, total } = await executionPage(knex, projectId, workflowId, filter, page);
      if (found.length === 0) await get(projectId, workflowId);
      return { rows: found as unknown as ExecutionRow[], ...cappedTotal(total) };
    },

    async execution(projectId, workflowId, id) {
      const workflow = await get(projectId, workflowId);
      const row: ExecutionRow | undefined = isUuid(id)
        ? await executionsWithContact(knex).where({ 'x.project_id': projectId, 'x.automation_id': workflow.id, 'x.id': id }).first()
        : undefined;
      if (!row) throw notFound('Execution');
      return { ...row, trace: await traceOf(knex, projectId, row) };
    },

    async cancelExecution(projectId, workflowId, id, actor) {
      const workflow = await get(projectId, workflowId);
      const { row, live } = await audited(knex, projectId, actor, (r: { row: ExecutionRow }) => ({
        operation: 'cancelWorkflowExecution', resourceType: 'execution', resourceId: r.row.id, details: { workflowId: workflow.id },
      }), async (trx) => {
        // Locked: a step in progress finishes first (its activity holds the row), and then finds the execution cancelled.
        const current: Omit<ExecutionRow, 'contact_email'> | undefined = isUuid(id)
          ? await trx('automation_executions').where({ project_id: projectId, automation_id: workflow.id, id }).forUpdate().first()
          : undefined;
        if (!current) throw notFound('Execution');
        if (!ACTIVE_STATUSES.includes(current.status)) {
          throw conflict(`Execution is ${current.status}; only RUNNING or WAITING executions can be cancelled`);
        }
        await trx('automation_executions').where({ project_id: projectId, id: current.id }).update({ status: 'CANCELLED', ...endedColumns(trx) });
        const updated: ExecutionRow = await executionsWithContact(trx).where({ 'x.project_id': projectId, 'x.id': current.id }).first();
        // A parked execution has no engine run; the others' runs are stopped after the commit.
        return { row: updated, live: current.parked ? [] : [{ id: current.id, run: current.run }] };
      });
      // The row is final already: the engine cancel only stops the run now instead of at its next step (safe to lose).
      await cancelEngineExecutions(engine, live, log);
      return row;
    },
  };
}
