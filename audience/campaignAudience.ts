import type { Knex } from 'knex';
import { compileCondition, loadSegments } from './compile';
import type { AudienceCondition } from './condition';
import { notSuppressed } from './suppressions';

/** What of a campaign row decides its audience. */
export interface CampaignAudienceRow {
  audience_type: string;
  segment_id: string | null;
  audience_filter: AudienceCondition | null;
}

/**
 * The contacts a campaign goes to, as a query over `contacts AS c`: its audience (all, a segment, a filter),
 * subscribed contacts only, none whose address (or its keyed hash under `hashKey`, audience/suppressions.ts addressHashKey:
 * an erased address) is suppressed (audience/suppressions.ts notSuppressed). A query over contacts returns each contact once, however the filter is built.
 * Wrapped in an object: a query builder is thenable, and returning it bare from an async function would run it.
 */
export async function campaignAudience(db: Knex, projectId: string, c: CampaignAudienceRow, hashKey: Buffer): Promise<{ query: Knex.QueryBuilder }> {
  const query = db('contacts as c').where('c.project_id', projectId).where('c.subscribed', true).where(notSuppressed(db, projectId, hashKey));
  if (c.audience_type === 'ALL') return { query };
  const segments = await loadSegments(db, projectId);
  if (c.audience_type === 'SEGMENT') {
    const segment = segments.get(c.segment_id!);
    if (!segment) return { query: query.whereRaw('false') }; // deleted since: nobody
    compileCondition(query, { logic: 'AND', groups: [{ filters: [{ field: `segment.${segment.id}`, operator: 'memberOf' }] }] }, segments);
    return { query };
  }
  compileCondition(query, c.audience_filter!, segments, 'audienceFilter');
  return { query };
}

/** How many contacts the campaign would go to now (one COUNT query). */
export async function countCampaignAudience(db: Knex, projectId: string, c: CampaignAudienceRow, hashKey: Buffer): Promise<number> {
  const { query } = await campaignAudience(db, projectId, c, hashKey);
  const row = await query.count<{ n: string }[]>('* as n').first();
  return Number(row?.n ?? 0);
}
