import type { Activities } from '../workflows/types';
import { automationActivities, type AutomationDeps } from './automations';
import { campaignActivities, type CampaignDeps } from './campaigns';
import { contactImportActivities } from './contactImports';
import { domainActivities, type DomainDeps } from './domains';
import { retentionActivities, type RetentionActivityDeps } from './retention';
import { withPermanentFailures } from '../engine/permanent';

export type ActivityDeps = CampaignDeps & DomainDeps & AutomationDeps & RetentionActivityDeps;

/**
 * All activities, as plain async functions: Temporal workers register them, the embedded engine runs them as DBOS steps.
 * (Deliveries are not activities: every worker drains the emails table, worker/deliveryQueue.ts.) Failures that no
 * retry can mend are thrown as PermanentErrors, which neither engine retries (engine/permanent.ts).
 */
export function createActivities(deps: ActivityDeps): Activities {
  return withPermanentFailures({ ...campaignActivities(deps), ...domainActivities(deps), ...automationActivities(deps), ...contactImportActivities(deps), ...retentionActivities(deps) });
}
