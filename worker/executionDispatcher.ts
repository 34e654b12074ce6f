import type { Knex } from 'knex';
import type { Logger } from '../logging/logger';
import { AUTOMATION_MAX_RUNNING } from '../config';
import { WAKE_TOPIC } from '../workflows/policy';
import { workflowId } from '../workflows/registry';
import type { ParkedState } from '../workflows/types';
import type { Engine } from '../engine/types';

export interface ExecutionDispatcherOptions {
  engine: Engine;
  knex: Knex;
  log: Logger;
  /** How often an empty outbox is looked at again. */
  pollMs?: number;
  /** Rows per claim. */
  batch?: number;
  /** Admission control: executions running at once (AUTOMATION_MAX_RUNNING), across all workers. */
  maxRunning?: number;
}

interface OutboxRow {
  project_id: string;
  id: string;
  automation_id: string;
  /** START, WAKE, or null for a parked execution whose deadline has come. */
  outbox: 'START' | 'WAKE' | null;
  parked: boolean;
  run: number;
  resume: ParkedState | null;
}

/**
 * Tells the engine what the automation outbox holds (see the automation_executions migration): START an execution's
 * workflow, or WAKE one from its wait. The rows are claimed with FOR UPDATE SKIP LOCKED, so several workers share the
 * work, and cleared in the same transaction once the engine has accepted them: a crash in between leaves them for
 * the next claim, and a repeated start or nudge is harmless (starts are idempotent on the execution's id; a nudge
 * only makes the execution look at its row again).
 *
 * Parked executions (embedded engine: a long wait ended the run, see workflows/runAutomation.ts) get a new run when
 * their wait ends: a WAKE (an event was recorded for them) or their deadline.
 *
 * Admission control: new runs start only while fewer than `maxRunning` executions are live (embedded: running or in a
 * short wait; Temporal: running). Without it a burst (20,000 contacts imported at once) would start every workflow at
 * once, and the embedded engine runs its workflows in the workers' memory: measured, the worker ran out of heap, and
 * again at every restart. Wake-ups of live workflows are always delivered: they let executions finish. The count is
 * read without a lock, so concurrent dispatchers may overshoot the limit by one batch each.
 */
export async function dispatchExecutions(engine: Engine, knex: Knex, log: Logger, batch = 200, maxRunning = AUTOMATION_MAX_RUNNING): Promise<number> {
  // An idle worker asks this several times a second: one cheap statement (two partial indexes) when there is nothing to do.
  const { rows: [work] } = await knex.raw(`SELECT EXISTS (SELECT 1 FROM automation_executions WHERE outbox IS NOT NULL)
    OR EXISTS (SELECT 1 FROM automation_executions WHERE parked AND status = 'WAITING' AND wait_until <= now()) AS any`);
  if (!(work as { any: boolean }).any) return 0;
  return knex.transaction(async (trx) => {
    const columns = ['project_id', 'id', 'automation_id', 'outbox', 'parked', 'run', 'resume'];
    const claim = (q: Knex.QueryBuilder, limit: number): Promise<OutboxRow[]> => (limit <= 0 ? Promise.resolve([])
      : q.orderBy('id').limit(limit).forUpdate().skipLocked().select(columns));
    // Wake-ups of live workflows cost no memory and let executions finish: always delivered.
    const wakes = await claim(trx('automation_executions').where({ outbox: 'WAKE', parked: false }), batch);
    const { n: running } = (await trx.raw(engine.waits === 'parked'
      // Embedded: every live workflow holds worker memory, running or in a short wait.
      ? "SELECT count(*)::int AS n FROM automation_executions WHERE status IN ('RUNNING', 'WAITING') AND NOT parked AND outbox IS DISTINCT FROM 'START'"
      : "SELECT count(*)::int AS n FROM automation_executions WHERE status = 'RUNNING' AND outbox IS NULL")).rows[0] as { n: number };
    let room = Math.min(batch - wakes.length, maxRunning - running);
    // New runs, within the room: parked executions whose wait has ended (an event, or the deadline), then new ones.
    const woken = await claim(trx('automation_executions').where({ outbox: 'WAKE', parked: true }), room);
    room -= woken.length;
    const due = await claim(trx('automation_executions').where({ parked: true, status: 'WAITING' }).whereNull('outbox').where('wait_until', '<=', trx.fn.now()), room);
    room -= due.length;
    const starts = await claim(trx('automation_executions').where('outbox', 'START'), room);
    const rows = [...wakes, ...woken, ...due, ...starts];
    if (rows.length === 0) return 0;
    const told: OutboxRow[] = [];
    await Promise.all(rows.map(async (r) => {
      const ref = { projectId: r.project_id, executionId: r.id };
      const tags = { automationId: r.automation_id }; // HeraldAutomationId on Temporal: all executions of one workflow
      try {
        if (r.parked) {
          await engine.start('runAutomation', { ...ref, ...r.resume!, resume: true }, { id: workflowId.runAutomation({ ...ref, run: r.run + 1 }), tags });
        } else if (r.outbox === 'START') {
          await engine.start('runAutomation', ref, { id: workflowId.runAutomation(ref), tags });
        } else {
          await engine.signal(workflowId.runAutomation({ ...ref, run: r.run }), WAKE_TOPIC, true);
        }
        told.push(r);
      } catch (err) {
        log.warn({ err, executionId: r.id, outbox: r.outbox }, 'could not reach the engine for an automation execution; will retry');
      }
    }));
    if (told.length) {
      // A resumed execution is live again under its next run.
      await trx.raw(
        `UPDATE automation_executions x SET outbox = NULL,
           run = x.run + CASE WHEN x.parked THEN 1 ELSE 0 END, parked = false, resume = NULL
         FROM unnest(?::uuid[], ?::uuid[]) AS t(project_id, id)
         WHERE x.project_id = t.project_id AND x.id = t.id`,
        [told.map((r) => r.project_id), told.map((r) => r.id)],
      );
    }
    // What the engine accepted: while it refuses everything, the loop below waits instead of claiming again at once.
    return told.length;
  });
}

/** Runs dispatchExecutions until stopped: at once again after a full batch, after `pollMs` otherwise. */
export function startExecutionDispatcher(opts: ExecutionDispatcherOptions): { stop(): Promise<void> } {
  const { engine, knex, log } = opts;
  const pollMs = opts.pollMs ?? 200;
  const batch = opts.batch ?? 200;
  const maxRunning = opts.maxRunning ?? AUTOMATION_MAX_RUNNING;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let wakeSleep: (() => void) | undefined;
  const loop = (async () => {
    while (!stopped) {
      let n = 0;
      try {
        n = await dispatchExecutions(engine, knex, log, batch, maxRunning);
      } catch (err) {
        log.error({ err }, 'execution dispatcher failed');
      }
      if (n < batch && !stopped) {
        await new Promise<void>((resolve) => {
          wakeSleep = resolve;
          timer = setTimeout(resolve, pollMs);
        });
      }
    }
  })();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      wakeSleep?.();
      await loop;
    },
  };
}
