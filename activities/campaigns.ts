import { campaignBatches, type CampaignDeps } from '../campaigns/batches';

export type { CampaignDeps };

/** A campaign's delivery in batches, its progress and its ends (campaigns/batches.ts), as the engines run them. */
export function campaignActivities(deps: CampaignDeps) {
  return campaignBatches(deps);
}
