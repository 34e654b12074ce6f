import type { Knex } from 'knex';
import { durationMs, type Step } from './steps';
import { DomainError } from '../core/errors';
import { prepareSend, storeSends, storedEmails } from '../sending/sends';
import { renderInline } from '../mail/render';
import { compileCondition, loadSegments } from '../audience/compile';
import { createWebhookClient, WebhookError, type WebhookOptions } from '../outbound/http';
import { patchContact } from '../db/queries/contacts';
import { ACTIVE_STATUSES, endedColumns, endExecution, recordExecutionFailed } from '../db/queries/executions';
import type { Logger } from '../logging/logger';
import { asPermanent, PermanentError } from '../engine/permanent';
import type { ExecutionRef, ExecutionStatus, ParkedState, StepOutcome, StepRef, WaitClock, WaitState } from '../workflows/types';
import { emailsQueued } from '../metrics/queued';

export interface AutomationDeps {
  knex: Knex;
  log: Logger;
  secret: Buffer;
  publicUrl: string;
  /** WEBHOOK steps: timeout, response cap, and the private addresses they may reach (none by default). */
  webhooks?: Partial<WebhookOptions>;
}

interface ExecutionRow {
  status: ExecutionStatus;
  contact_id: string;
  woken_by_event_id: string | null;
  /** Until the wait's deadline (negative once passed); null without one. */
  remaining_ms: number | null;
}

/**
 * The time a wait counts from and against: the database's now(), or the workflow's clock where the engine passed one
 * and it is later (WaitClock: Temporal's time-skipping test server moves the workflow's clock days ahead).
 */
function waitNow(trx: Knex.Transaction, clock: WaitClock): Knex.Raw {
  return clock.now === undefined ? trx.raw('now()') : trx.raw('GREATEST(now(), to_timestamp(?::float8 / 1000))', [clock.now]);
}

/** The execution's row, locked for the rest of the transaction (a cancel or a wake-up waits for the step). */
async function lockExecution(trx: Knex.Transaction, ref: ExecutionRef, clock: WaitClock = {}): Promise<ExecutionRow | undefined> {
  return trx('automation_executions').where({ project_id: ref.projectId, id: ref.executionId }).forUpdate().first(
    'status', 'contact_id', 'woken_by_event_id',
    trx.raw('(extract(epoch FROM wait_until - ?) * 1000)::float8 AS remaining_ms', [waitNow(trx, clock)]),
  );
}

/** The outcome recorded for this step run by an earlier attempt of the same activity, if it committed. */
async function recordedOutcome(db: Knex | Knex.Transaction, ref: StepRef): Promise<StepOutcome | undefined> {
  const row = await db('automation_step_runs').where({ project_id: ref.projectId, execution_id: ref.executionId, seq: ref.seq }).first('outcome');
  return row?.outcome as StepOutcome | undefined;
}

async function recordStep(trx: Knex.Transaction, ref: StepRef, outcome: StepOutcome | { waiting: true }, status: 'RUNNING' | 'WAITING' = 'RUNNING', wait: Record<string, unknown> = {}): Promise<void> {
  await trx('automation_step_runs').insert({ project_id: ref.projectId, execution_id: ref.executionId, seq: ref.seq, step_id: ref.step.id, outcome: JSON.stringify(outcome) })
    .onConflict(['project_id', 'execution_id', 'seq']).ignore();
  await trx('automation_executions').where({ project_id: ref.projectId, id: ref.executionId })
    .update({ status, current_step_id: ref.step.id, updated_at: trx.fn.now(), ...wait });
}

/**
 * Records a step run, and ends the execution in the same transaction when the step was its last (no next step) or
 * failed for good: one engine step fewer per execution than a separate finishExecution (each costs ~8 statements of
 * DBOS bookkeeping). The stored outcome says so, so a retried activity answers the same.
 */
async function recordOutcome(trx: Knex.Transaction, ref: StepRef, result: StepOutcome): Promise<StepOutcome> {
  const ending = ('next' in result && result.next === null) || 'failed' in result;
  const outcome: StepOutcome = ending ? { ...result, ended: true } as StepOutcome : result;
  await recordStep(trx, ref, outcome);
  if (ending) {
    const [row] = await trx('automation_executions').where({ project_id: ref.projectId, id: ref.executionId })
      .update({ status: 'failed' in result ? 'FAILED' : 'COMPLETED', error: 'failed' in result ? result.failed : null, ...endedColumns(trx) })
      .returning(['automation_id', 'contact_id']);
    if ('failed' in result && row) {
      await recordExecutionFailed(trx, ref.projectId, { executionId: ref.executionId, workflowId: row.automation_id, contactId: row.contact_id, stepId: ref.step.id, error: result.failed });
    }
  }
  return outcome;
}

const nextOf = (step: Step): string | null => ('next' in step ? step.next ?? null : null);

/** The state of a wait as the row says it (the row is locked by the caller). */
function waitState(row: ExecutionRow): WaitState {
  if (row.woken_by_event_id) return { state: 'DONE', by: 'event' };
  if (row.remaining_ms !== null && row.remaining_ms <= 0) return { state: 'DONE', by: 'timeout' };
  return { state: 'WAITING', remainingMs: row.remaining_ms === null ? null : Math.ceil(row.remaining_ms) };
}

/**
 * The activities of the automation interpreter (workflows/runAutomation.ts). Each locks the execution's row, so a
 * step and a cancel (disable, delete, Temporal UI) never interleave, and records its step run under the step's
 * `seq`, so a retried activity answers what the first attempt did instead of doing it twice.
 */
export function executionSteps(deps: AutomationDeps) {
  const { knex, log } = deps;
  const webhook = createWebhookClient(deps.webhooks ?? {});

  /** SEND_EMAIL: the template rendered for the contact and queued like POST /v1/send queues it (same checks, same row). */
  async function sendEmail(trx: Knex.Transaction, ref: StepRef & { step: Extract<Step, { type: 'SEND_EMAIL' }> }, contactId: string): Promise<StepOutcome> {
    const next = nextOf(ref.step);
    const [template, contact] = await Promise.all([
      trx('templates').where({ project_id: ref.projectId, id: ref.step.config.template }).first('id'),
      trx('contacts').where({ project_id: ref.projectId, id: contactId }).first('email'),
    ]);
    if (!template) return { failed: `step "${ref.step.id}": template ${ref.step.config.template} no longer exists` };
    // A MARKETING template goes only to a subscribed contact, with the bulk-mail headers campaigns carry: the rules of
    // every send (sending/sends.ts, audience/subscription.ts); an unsubscribed contact's step is skipped, not failed.
    // Inline rendering: a worker's loop serves no requests.
    const store = { publicUrl: deps.publicUrl, secret: deps.secret, render: renderInline };
    const prepared = await prepareSend(trx, {
      projectId: ref.projectId,
      body: { to: { email: contact.email }, template: ref.step.config.template },
      recipients: [{ email: contact.email }],
      attachments: [],
    }, store);
    const [stored] = prepared instanceof DomainError ? [prepared] : await storeSends(trx, [prepared], store);
    if (stored instanceof DomainError) {
      const detail = stored.details.errors?.[0]?.message ?? stored.message;
      return { failed: `step "${ref.step.id}": ${detail}` };
    }
    // Counted in the step's transaction, which commits right after it (a step retried after a failed commit counts twice).
    emailsQueued('automation', storedEmails(stored!));
    return { next }; // the committed row is in the delivery queue
  }

  /** CONDITION: the filter compiled to SQL (the audience language of campaigns and segments) against this one contact, as it is now. */
  async function matches(trx: Knex.Transaction, projectId: string, contactId: string, step: Extract<Step, { type: 'CONDITION' }>): Promise<boolean> {
    const q = trx('contacts as c').where('c.project_id', projectId).where('c.id', contactId);
    compileCondition(q, step.config.filter, await loadSegments(trx, projectId), 'config.filter');
    return (await q.first(trx.raw('1 AS hit'))) !== undefined;
  }

  /** One SEND_EMAIL, CONDITION or UPDATE_CONTACT step run, in one transaction (runStep). */
  async function runStepOnce(ref: StepRef): Promise<StepOutcome> {
    return knex.transaction(async (trx): Promise<StepOutcome> => {
      const row = await lockExecution(trx, ref);
      // A retry of a run that committed answers what it did (even if that ended the execution).
      const done = await recordedOutcome(trx, ref);
      if (done) return done;
      if (!row || !ACTIVE_STATUSES.includes(row.status)) return { cancelled: true };
      let result: StepOutcome;
      const { step } = ref;
      switch (step.type) {
        case 'SEND_EMAIL':
          result = await sendEmail(trx, { ...ref, step }, row.contact_id);
          break;
        case 'CONDITION': {
          const branch = (await matches(trx, ref.projectId, row.contact_id, step)) ? 'yes' : 'no';
          result = { next: step.branches[branch], branch };
          break;
        }
        case 'UPDATE_CONTACT':
          await patchContact(trx, ref.projectId, row.contact_id, step.config, 'automation');
          result = { next: nextOf(step) };
          break;
        default:
          throw new Error(`runStep does not run ${step.type} steps`);
      }
      return recordOutcome(trx, ref, result);
    });
  }

  return {
    async startExecution(ref: ExecutionRef): Promise<{ steps: Step[] } | null> {
      const row = await knex('automation_executions as x')
        .join('automations as a', function on() { this.on('a.project_id', 'x.project_id').andOn('a.id', 'x.automation_id'); })
        .where({ 'x.project_id': ref.projectId, 'x.id': ref.executionId }).first('x.status', 'a.steps');
      if (!row || !ACTIVE_STATUSES.includes(row.status)) return null;
      return { steps: row.steps as Step[] };
    },

    async runStep(ref: StepRef): Promise<StepOutcome> {
      try {
        return await runStepOnce(ref);
      } catch (err) {
        // A step that fails the same way on every attempt (a CONDITION whose filter cannot be compiled, or whose query
        // fails on its values) is the step's outcome: the execution FAILED, saying which step and why.
        const permanent = asPermanent(err, `step "${ref.step.id}"`);
        if (!(permanent instanceof PermanentError)) throw err;
        log.info({ executionId: ref.executionId, stepId: ref.step.id, error: permanent.message }, 'step failed permanently');
        return knex.transaction(async (trx): Promise<StepOutcome> => {
          const row = await lockExecution(trx, ref);
          const done = await recordedOutcome(trx, ref);
          if (done) return done;
          if (!row || !ACTIVE_STATUSES.includes(row.status)) return { cancelled: true };
          return recordOutcome(trx, ref, { failed: permanent.message.slice(0, 1000) });
        });
      }
    },

    async callWebhook(ref: StepRef): Promise<StepOutcome> {
      const { step } = ref;
      if (step.type !== 'WEBHOOK') throw new Error(`callWebhook does not run ${step.type} steps`);
      const done = await recordedOutcome(knex, ref);
      if (done) return done;
      const x = await knex('automation_executions as x')
        .join('contacts as c', function on() { this.on('c.project_id', 'x.project_id').andOn('c.id', 'x.contact_id'); })
        .where({ 'x.project_id': ref.projectId, 'x.id': ref.executionId })
        .first('x.status', 'x.automation_id', 'c.id', 'c.email', 'c.subscribed', 'c.data');
      if (!x || !ACTIVE_STATUSES.includes(x.status)) return { cancelled: true };
      // Without a body of its own, the call tells the receiver who and where: enough to act on without calling back.
      const body = step.config.body ?? {
        type: 'workflow.webhook',
        workflowId: x.automation_id,
        executionId: ref.executionId,
        stepId: step.id,
        contact: { id: x.id, email: x.email, subscribed: x.subscribed, data: x.data },
        timestamp: new Date().toISOString(),
      };
      let outcome: StepOutcome;
      try {
        // At least once: a call whose success could not be recorded (a crash) is made again with the same key.
        const headers = { 'Idempotency-Key': `${ref.executionId}-${ref.seq}`, ...step.config.headers };
        await webhook.call({ url: step.config.url, method: step.config.method ?? 'POST', headers, body });
        outcome = { next: nextOf(step) };
      } catch (err: unknown) {
        // Transient failures are thrown for the engine to retry (WEBHOOK_RETRY); permanent ones end the execution.
        if (!(err instanceof WebhookError) || !err.permanent) throw err;
        log.info({ executionId: ref.executionId, stepId: step.id, error: err.message }, 'webhook failed permanently');
        outcome = { failed: `step "${step.id}": ${err.message}` };
      }
      return knex.transaction(async (trx) => {
        const row = await lockExecution(trx, ref);
        if (!row || !ACTIVE_STATUSES.includes(row.status)) return { cancelled: true };
        return recordOutcome(trx, ref, outcome);
      });
    },

    async beginWait(ref: StepRef & WaitClock): Promise<WaitState> {
      const { step } = ref;
      if (step.type !== 'DELAY' && step.type !== 'WAIT_FOR_EVENT') throw new Error(`beginWait does not run ${step.type} steps`);
      return knex.transaction(async (trx) => {
        let row = await lockExecution(trx, ref, ref);
        if (!row || !ACTIVE_STATUSES.includes(row.status)) return { state: 'CANCELLED' };
        // A retried call keeps the deadline of the first (the row still holds it).
        if (!(await recordedOutcome(trx, ref))) {
          const ms = step.type === 'DELAY' ? durationMs(step.config) : step.config.timeout ? durationMs(step.config.timeout) : null;
          await recordStep(trx, ref, { waiting: true }, 'WAITING', {
            wait_until: ms === null ? null : trx.raw('? + ? * interval \'1 millisecond\'', [waitNow(trx, ref), ms]),
            wait_event: step.type === 'WAIT_FOR_EVENT' ? step.config.event : null,
            woken_by_event_id: null,
          });
          row = (await lockExecution(trx, ref, ref))!;
        }
        return settleWait(trx, ref, row);
      });
    },

    async checkWait(ref: ExecutionRef & { stepId: string } & WaitClock): Promise<WaitState> {
      return knex.transaction(async (trx) => {
        const row = await lockExecution(trx, ref, ref);
        if (!row || !ACTIVE_STATUSES.includes(row.status)) return { state: 'CANCELLED' };
        return settleWait(trx, ref, row);
      });
    },

    async parkExecution(ref: ExecutionRef & ParkedState): Promise<WaitState | { state: 'PARKED' }> {
      return knex.transaction(async (trx) => {
        const row = await lockExecution(trx, ref);
        if (!row || !ACTIVE_STATUSES.includes(row.status)) return { state: 'CANCELLED' };
        // An event or the deadline may have come since the last look: then go on instead of parking.
        const state = await settleWait(trx, ref, row);
        if (state.state !== 'WAITING') return state;
        await trx('automation_executions').where({ project_id: ref.projectId, id: ref.executionId })
          .update({ parked: true, resume: JSON.stringify({ steps: ref.steps, at: ref.at, seq: ref.seq }), updated_at: trx.fn.now() });
        return { state: 'PARKED' };
      });
    },

    async finishExecution(ref: ExecutionRef & { status: 'COMPLETED' | 'EXITED' | 'FAILED'; error?: string; exit?: { seq: number; stepId: string } }): Promise<ExecutionStatus> {
      const { exit } = ref;
      if (!exit) return endExecution(knex, ref, ref.status, ref.error ?? null);
      // The EXIT step is recorded as the run it is and as the step the execution ended at, with the ending itself.
      return knex.transaction(async (trx) => {
        const row = await lockExecution(trx, ref);
        if (!row) return 'CANCELLED';
        if (!ACTIVE_STATUSES.includes(row.status)) return row.status;
        await trx('automation_step_runs').insert({ project_id: ref.projectId, execution_id: ref.executionId, seq: exit.seq, step_id: exit.stepId, outcome: JSON.stringify({ exited: true }) })
          .onConflict(['project_id', 'execution_id', 'seq']).ignore();
        await trx('automation_executions').where({ project_id: ref.projectId, id: ref.executionId })
          .update({ status: 'EXITED', current_step_id: exit.stepId, error: null, ...endedColumns(trx) });
        return 'EXITED';
      });
    },

    async cancelExecution(ref: ExecutionRef): Promise<ExecutionStatus> {
      return endExecution(knex, ref, 'CANCELLED', null);
    },
  };
}

/**
 * The wait's state; when it has ended, the execution is RUNNING again (no further event matches it: the wake-up match
 * requires WAITING). A row already RUNNING was settled by an earlier attempt of the same call.
 */
async function settleWait(trx: Knex.Transaction, ref: ExecutionRef, row: ExecutionRow): Promise<WaitState> {
  if (row.status === 'RUNNING') return { state: 'DONE', by: row.woken_by_event_id ? 'event' : 'timeout' };
  const state = waitState(row);
  if (state.state === 'DONE') {
    await trx('automation_executions').where({ project_id: ref.projectId, id: ref.executionId })
      .update({ status: 'RUNNING', wait_event: null, parked: false, resume: null, updated_at: trx.fn.now() });
    // The wait's run (the execution's latest: nothing runs during a wait) says how it ended, for the trace.
    const runs = () => trx('automation_step_runs').where({ project_id: ref.projectId, execution_id: ref.executionId });
    await runs().where('seq', runs().max('seq')).update({ outcome: JSON.stringify({ waited: state.by }) });
  }
  return state;
}
