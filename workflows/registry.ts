import { checkDomains } from './checkDomains';
import type { WorkflowContext } from './context';
import { deliverEmail } from './deliverEmail';
import { sendCampaign, type CampaignInput } from './sendCampaign';
import type { DomainChecksInput, EmailRef } from './types';

/**
 * Every workflow, with its input type and where it runs. `queue: 'delivery'` marks workflows whose whole job is
 * one rate-limited delivery: DBOS runs them on the rate-limited queue; Temporal runs them on the workflow task
 * queue and their delivery activity on the rate-limited task queue.
 */
export const workflows = {
  deliverEmail: { run: deliverEmail, queue: 'delivery' },
  sendCampaign: { run: sendCampaign, queue: 'default' },
  checkDomains: { run: checkDomains, queue: 'default' },
} as const satisfies Record<string, { run: (ctx: WorkflowContext, input: never) => Promise<unknown>; queue: 'delivery' | 'default' }>;

export type WorkflowName = keyof typeof workflows;

export interface WorkflowInputs {
  deliverEmail: EmailRef;
  sendCampaign: CampaignInput;
  checkDomains: DomainChecksInput;
}

/** Business ids of workflows: a repeated start with the same id is harmless in both engines. */
export const workflowId = {
  deliverEmail: (ref: EmailRef) => `email-${ref.emailId}`,
  sendCampaign: (ref: { campaignId: string }) => `campaign-${ref.campaignId}`,
  /** One run per slot of the re-check schedule. */
  checkDomains: (ref: { slot: number }) => `domain-checks-${new Date(ref.slot).toISOString()}`,
};
