import type { Knex } from 'knex';
import { countCampaignAudience, type CampaignAudienceRow } from '../audience/campaignAudience';
import { addressHashKey } from '../audience/suppressions';
import type { Logger } from '../logging/logger';
import { workflowId } from '../workflows/registry';
import type { Engine } from '../engine/types';

/** A campaign as the dispatcher needs it: its ids, its schedule, and what an operator sees of it in the engine. */
export interface DispatchedCampaign extends CampaignAudienceRow {
  project_id: string;
  id: string;
  scheduled_at: Date | null;
  name: string;
  /** Set for an A/B campaign: its workflow takes the test's path (workflows/sendCampaign.ts). */
  ab_metric: string | null;
}

/**
 * The operator's line about a campaign's workflow (Temporal UI's summary): its name, its project and how many contacts
 * its audience has at dispatch, never its content. Best effort: a failed look-up leaves the figures out.
 */
async function campaignSummary(knex: Knex, c: DispatchedCampaign, secret: Buffer): Promise<string> {
  try {
    const [project, recipients] = await Promise.all([
      knex('projects').where('id', c.project_id).first('name'),
      countCampaignAudience(knex, c.project_id, c, addressHashKey(secret)),
    ]);
    return `Campaign "${c.name}" · project "${project?.name ?? c.project_id}" · ${recipients} recipient(s)`;
  } catch {
    return `Campaign "${c.name}" · project ${c.project_id}`;
  }
}

/**
 * Starts (or schedules) a campaign's workflow and records that the engine accepted it; the dispatcher retries otherwise.
 * Emails need no dispatch: a committed QUEUED row is in the delivery queue (worker/deliveryQueue.ts). `secret` is the
 * installation's, for the summary's count of recipients (erased addresses left out by their keyed hash).
 */
export async function dispatchCampaign(engine: Engine, knex: Knex, c: DispatchedCampaign, log: Logger, secret: Buffer): Promise<boolean> {
  const ref = { projectId: c.project_id, campaignId: c.id };
  try {
    await engine.start('sendCampaign', { ...ref, ...(c.ab_metric ? { test: 'sample' as const } : {}) }, {
      id: workflowId.sendCampaign(ref),
      summary: await campaignSummary(knex, c, secret),
      ...(c.scheduled_at ? { startAt: c.scheduled_at } : {}),
    });
  } catch (err) {
    log.warn({ err, campaignId: c.id }, 'could not start the campaign workflow; the dispatcher will retry');
    return false;
  }
  await knex('campaigns').where({ project_id: c.project_id, id: c.id }).update({ dispatched_at: knex.fn.now() });
  return true;
}

/** Starts the workflows of scheduled campaigns that have waited `graceMs` without a confirmed start. */
export async function dispatchPending(engine: Engine, knex: Knex, log: Logger, secret: Buffer, graceMs = 10_000): Promise<number> {
  const campaigns: DispatchedCampaign[] = await knex('campaigns')
    .where('status', 'SCHEDULED').whereNull('dispatched_at').where('updated_at', '<', new Date(Date.now() - graceMs))
    .limit(100).select('project_id', 'id', 'scheduled_at', 'name', 'audience_type', 'segment_id', 'audience_filter', 'ab_metric');
  let started = 0;
  for (const c of campaigns) if (await dispatchCampaign(engine, knex, c, log, secret)) started++;
  return started;
}

/**
 * Runs dispatchPending every `intervalMs` until stopped, with the other outboxes' passes the process gives (`also`: the
 * contact imports' dispatchPendingImports), so that one timer restarts every kind of engine work whose start was lost.
 */
export function startDispatcher(engine: Engine, knex: Knex, log: Logger, secret: Buffer, also: readonly (() => Promise<unknown>)[] = [], intervalMs = 15_000): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    running = Promise.all([dispatchPending(engine, knex, log, secret), ...also.map((pass) => pass())]).catch((err) => log.error({ err }, 'dispatcher failed'));
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
