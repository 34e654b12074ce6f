import type { Activities } from '../workflows/types';
import { campaignActivities, type CampaignDeps } from './campaigns';
import { deliveryActivities, type DeliveryDeps } from './delivery';

export type ActivityDeps = DeliveryDeps & CampaignDeps;

/** All activities, as plain async functions: Temporal workers register them, the embedded engine runs them as DBOS steps. */
export function createActivities(deps: ActivityDeps): Activities {
  return { ...deliveryActivities(deps), ...campaignActivities(deps) };
}
