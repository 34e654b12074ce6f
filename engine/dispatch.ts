import type { Knex } from 'knex';
import type { Logger } from '../logging/logger';
import { workflowId } from '../workflows/registry';
import type { EmailRef } from '../workflows/types';
import type { Engine, Priority } from './types';

/**
 * True when inserting a QUEUED email row is all its dispatch takes (the embedded engine: the emails table is the
 * delivery queue); such rows are inserted with `dispatched_at = now()`.
 */
export function dispatchedOnInsert(engine: Engine): boolean {
  return engine.delivery === 'rows';
}

/**
 * Starts the deliveries of committed QUEUED emails, where the engine needs a workflow per email (Temporal).
 * Emails are committed first and their delivery workflows started after the commit, so a crash in between could
 * strand them. `dispatched_at` records that the engine accepted the start; the dispatcher (re)starts whatever
 * stayed undispatched. Starts are idempotent on the email's id, so a double start is harmless.
 */
export async function dispatchEmails(engine: Engine, knex: Knex, refs: EmailRef[], log: Logger, priority: Priority = 'transactional'): Promise<number> {
  if (dispatchedOnInsert(engine)) return refs.length;
  const started: EmailRef[] = [];
  await Promise.all(refs.map(async (ref) => {
    try {
      await engine.start('deliverEmail', ref, { id: workflowId.deliverEmail(ref), priority });
      started.push(ref);
    } catch (err) {
      log.warn({ err, emailId: ref.emailId }, 'could not start delivery; the dispatcher will retry');
    }
  }));
  if (started.length) {
    await knex.raw(
      `UPDATE emails SET dispatched_at = now()
       FROM unnest(?::uuid[], ?::uuid[]) AS s(project_id, id)
       WHERE emails.project_id = s.project_id AND emails.id = s.id`,
      [started.map((r) => r.projectId), started.map((r) => r.emailId)],
    );
  }
  return started.length;
}

/** Starts (or schedules) a campaign's workflow and records that the engine accepted it; the dispatcher retries otherwise. */
export async function dispatchCampaign(engine: Engine, knex: Knex, c: { project_id: string; id: string; scheduled_at: Date | null }, log: Logger): Promise<boolean> {
  const ref = { projectId: c.project_id, campaignId: c.id };
  try {
    await engine.start('sendCampaign', ref, { id: workflowId.sendCampaign(ref), ...(c.scheduled_at ? { startAt: c.scheduled_at } : {}) });
  } catch (err) {
    log.warn({ err, campaignId: c.id }, 'could not start the campaign workflow; the dispatcher will retry');
    return false;
  }
  await knex('campaigns').where({ project_id: c.project_id, id: c.id }).update({ dispatched_at: knex.fn.now() });
  return true;
}

/** Starts the deliveries of queued emails, and the workflows of scheduled campaigns, that have waited `graceMs` without a confirmed start. */
export async function dispatchPending(engine: Engine, knex: Knex, log: Logger, graceMs = 10_000, batch = 1000): Promise<number> {
  const campaigns: { project_id: string; id: string; scheduled_at: Date | null }[] = await knex('campaigns')
    .where('status', 'SCHEDULED').whereNull('dispatched_at').where('updated_at', '<', new Date(Date.now() - graceMs))
    .limit(100).select('project_id', 'id', 'scheduled_at');
  for (const c of campaigns) await dispatchCampaign(engine, knex, c, log);
  if (dispatchedOnInsert(engine)) return 0; // the rows are the queue: nothing to restart
  const rows: { project_id: string; id: string }[] = await knex('emails')
    .where('status', 'QUEUED').whereNull('dispatched_at')
    .where('created_at', '<', new Date(Date.now() - graceMs))
    .orderBy('created_at').limit(batch).select('project_id', 'id');
  if (rows.length === 0) return 0;
  log.info({ count: rows.length }, 'dispatching stranded deliveries');
  return dispatchEmails(engine, knex, rows.map((r) => ({ projectId: r.project_id, emailId: r.id })), log);
}

/** Runs dispatchPending every `intervalMs` until stopped. */
export function startDispatcher(engine: Engine, knex: Knex, log: Logger, intervalMs = 15_000): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    running = dispatchPending(engine, knex, log).catch((err) => log.error({ err }, 'dispatcher failed'));
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
