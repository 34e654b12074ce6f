import { checkDomains } from './checkDomains';
import { applyRetention } from './retention';
import { importContacts } from './importContacts';
import type { WorkflowContext } from './context';
import { runAutomation } from './runAutomation';
import { sendCampaign } from './sendCampaign';
import type { WorkflowInputs, WorkflowName } from './types';

/**
 * Every workflow, with its input type and where it runs. `queue: 'automation'` marks executions that spend most of
 * their life waiting: DBOS runs them on a queue without a concurrency limit (a waiting workflow holds a slot of its
 * queue); Temporal on the workflow task queue like the others. An A/B campaign waits hours or days for its winner, so it
 * goes there too (queueOf). Emails are not workflows: the emails table is the
 * rate-limited delivery queue on both engines (worker/deliveryQueue.ts).
 */
export const workflows = {
  sendCampaign: { run: sendCampaign, queue: 'default' },
  checkDomains: { run: checkDomains, queue: 'default' },
  runAutomation: { run: runAutomation, queue: 'automation' },
  importContacts: { run: importContacts, queue: 'default' },
  applyRetention: { run: applyRetention, queue: 'default' },
} as const satisfies Record<WorkflowName, { run: (ctx: WorkflowContext, input: never) => Promise<unknown>; queue: 'default' | 'automation' }>;

/** The queue a workflow's run goes to (see `workflows`): an A/B campaign's, which waits for its winner, is 'automation'. */
export function queueOf<N extends WorkflowName>(workflow: N, input: WorkflowInputs[N]): 'default' | 'automation' {
  if (workflow === 'sendCampaign' && (input as WorkflowInputs['sendCampaign']).test) return 'automation';
  return workflows[workflow].queue;
}

/** Business ids of workflows: a repeated start with the same id is harmless in both engines. */
export const workflowId = {
  sendCampaign: (ref: { campaignId: string }) => `campaign-${ref.campaignId}`,
  /** One run per slot of the re-check schedule. */
  checkDomains: (ref: { slot: number }) => `domain-checks-${new Date(ref.slot).toISOString()}`,
  /**
   * The execution's own id (the Temporal UI shows `execution-<id>` beside GET /workflows/:id/executions); run n > 0
   * of a parked execution (embedded engine) is `execution-<id>-<n>`.
   */
  runAutomation: (ref: { executionId: string; run?: number }) => (ref.run ? `execution-${ref.executionId}-${ref.run}` : `execution-${ref.executionId}`),
  importContacts: (ref: { importId: string }) => `contact-import-${ref.importId}`,
  /** One run per slot of the retention schedule (DBOS). */
  applyRetention: (ref: { slot: number }) => `retention-${new Date(ref.slot).toISOString()}`,
};
