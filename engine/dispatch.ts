import type { Knex } from 'knex';
import type { Logger } from '../logging/logger';
import { workflowId } from '../workflows/registry';
import type { EmailRef } from '../workflows/types';
import type { Engine } from './types';

/**
 * Emails are committed QUEUED first and their delivery workflows started after the commit, so a crash in
 * between could strand them. `dispatched_at` records that the engine accepted the start; the dispatcher
 * (re)starts whatever stayed undispatched. Starts are idempotent on the email's id, so a double start is harmless.
 */
export async function dispatchEmails(engine: Engine, knex: Knex, refs: EmailRef[], log: Logger): Promise<number> {
  const started: EmailRef[] = [];
  await Promise.all(refs.map(async (ref) => {
    try {
      await engine.start('deliverEmail', ref, { id: workflowId.deliverEmail(ref) });
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

/** Starts the deliveries of queued emails that have waited `graceMs` without a confirmed start. */
export async function dispatchPending(engine: Engine, knex: Knex, log: Logger, graceMs = 10_000, batch = 1000): Promise<number> {
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
