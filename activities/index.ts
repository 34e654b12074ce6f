import type { Activities } from '../workflows/types';
import { automationActivities, type AutomationDeps } from './automations';
import { campaignActivities, type CampaignDeps } from './campaigns';
import { deliveryActivities, type DeliveryDeps } from './delivery';
import { domainActivities, type DomainDeps } from './domains';

export type ActivityDeps = DeliveryDeps & CampaignDeps & DomainDeps & AutomationDeps;

/** All activities, as plain async functions: Temporal workers register them, the embedded engine runs them as DBOS steps. */
export function createActivities(deps: ActivityDeps): Activities {
  return { ...deliveryActivities(deps), ...campaignActivities(deps), ...domainActivities(deps), ...automationActivities(deps) };
}
