import type { Activities } from '../workflows/types';
import { automationActivities, type AutomationDeps } from './automations';
import { campaignActivities, type CampaignDeps } from './campaigns';
import { domainActivities, type DomainDeps } from './domains';

export type ActivityDeps = CampaignDeps & DomainDeps & AutomationDeps;

/**
 * All activities, as plain async functions: Temporal workers register them, the embedded engine runs them as DBOS steps.
 * (Deliveries are not activities: every worker drains the emails table, engine/deliveryQueue.ts.)
 */
export function createActivities(deps: ActivityDeps): Activities {
  return { ...campaignActivities(deps), ...domainActivities(deps), ...automationActivities(deps) };
}
