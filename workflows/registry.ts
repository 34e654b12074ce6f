import { checkDomains } from './checkDomains';
import type { WorkflowContext } from './context';
import { deliverEmail } from './deliverEmail';
import { runAutomation } from './runAutomation';
import { sendCampaign, type CampaignInput } from './sendCampaign';
import type { AutomationInput, DomainChecksInput, EmailRef } from './types';

/**
 * Every workflow, with its input type and where it runs. `queue: 'delivery'` marks workflows whose whole job is
 * one rate-limited delivery: DBOS runs them on the rate-limited queue; Temporal runs them on the workflow task
 * queue and their delivery activity on the rate-limited task queue. `queue: 'automation'` marks executions that
 * spend most of their life waiting: DBOS runs them on a queue without a concurrency limit (a waiting workflow
 * holds a slot of its queue); Temporal on the workflow task queue.
 */
export const workflows = {
  deliverEmail: { run: deliverEmail, queue: 'delivery' },
  sendCampaign: { run: sendCampaign, queue: 'default' },
  checkDomains: { run: checkDomains, queue: 'default' },
  runAutomation: { run: runAutomation, queue: 'automation' },
} as const satisfies Record<string, { run: (ctx: WorkflowContext, input: never) => Promise<unknown>; queue: 'delivery' | 'default' | 'automation' }>;

export type WorkflowName = keyof typeof workflows;

export interface WorkflowInputs {
  deliverEmail: EmailRef;
  sendCampaign: CampaignInput;
  checkDomains: DomainChecksInput;
  runAutomation: AutomationInput;
}

/** Business ids of workflows: a repeated start with the same id is harmless in both engines. */
export const workflowId = {
  deliverEmail: (ref: EmailRef) => `email-${ref.emailId}`,
  sendCampaign: (ref: { campaignId: string }) => `campaign-${ref.campaignId}`,
  /** One run per slot of the re-check schedule. */
  checkDomains: (ref: { slot: number }) => `domain-checks-${new Date(ref.slot).toISOString()}`,
  /**
   * The execution's own id (the Temporal UI shows `execution-<id>` beside GET /workflows/:id/executions); run n > 0
   * of a parked execution (embedded engine) is `execution-<id>-<n>`.
   */
  runAutomation: (ref: { executionId: string; run?: number }) => (ref.run ? `execution-${ref.executionId}-${ref.run}` : `execution-${ref.executionId}`),
};
