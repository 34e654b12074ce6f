import type { Knex } from 'knex';
import { recordEvents, type NewEvent } from '../db/queries/events';
import type { Agent } from './agents';

/** One fetch of an open pixel or one click of a tracked link, its token already verified. */
export interface Hit {
  kind: 'open' | 'click';
  projectId: string;
  emailId: string;
  /** The link's target (clicks). */
  url?: string;
  agent: Agent;
}

/** The counts' update of recordHits (bindings: project ids, email ids, opens, human open, clicks, human click); exported for EXPLAIN. */
export const HITS_SQL = `WITH h AS (
       SELECT * FROM unnest(?::uuid[], ?::uuid[], ?::int[], ?::bool[], ?::int[], ?::bool[]) WITH ORDINALITY
         AS h(project_id, id, opens, human_open, clicks, human_click, ord))
     UPDATE emails e SET
       opens = e.opens + h.opens,
       first_opened_at = CASE WHEN h.human_open THEN coalesce(e.first_opened_at, now()) ELSE e.first_opened_at END,
       clicks = e.clicks + h.clicks,
       first_clicked_at = CASE WHEN h.human_click THEN coalesce(e.first_clicked_at, now()) ELSE e.first_clicked_at END
     FROM h WHERE e.project_id = h.project_id AND e.id = h.id
     RETURNING e.project_id, e.id, e.contact_id`;

/**
 * Records any number of hits in the caller's transaction (group commit, db/batch.ts): ONE update of the emails'
 * counts (every hit counts in `opens` / `clicks`; the first hit that is not a proxy or a scanner sets
 * `first_opened_at` / `first_clicked_at`, which is what makes an open or click unique), then the events
 * `email.opened` and `email.clicked` through recordEvents, one call per project, in the order of the hits. Answers,
 * by hit, whether its email exists: a hit on an email that is gone records nothing.
 */
export async function recordHits(trx: Knex.Transaction, hits: readonly Hit[]): Promise<boolean[]> {
  const perEmail = new Map<string, { projectId: string; emailId: string; opens: number; humanOpen: boolean; clicks: number; humanClick: boolean }>();
  for (const h of hits) {
    const key = `${h.projectId}/${h.emailId}`;
    const e = perEmail.get(key) ?? { projectId: h.projectId, emailId: h.emailId, opens: 0, humanOpen: false, clicks: 0, humanClick: false };
    if (h.kind === 'open') {
      e.opens++;
      e.humanOpen ||= !h.agent.bot;
    } else {
      e.clicks++;
      e.humanClick ||= !h.agent.bot;
    }
    perEmail.set(key, e);
  }
  // Sorted, so that concurrent batches lock the rows they share in the same order.
  const rows = [...perEmail.values()].sort((a, b) => (a.projectId + a.emailId < b.projectId + b.emailId ? -1 : 1));
  const { rows: found } = await trx.raw(
    HITS_SQL,
    [
      rows.map((r) => r.projectId), rows.map((r) => r.emailId), rows.map((r) => r.opens), rows.map((r) => r.humanOpen),
      rows.map((r) => r.clicks), rows.map((r) => r.humanClick),
    ] as Knex.RawBinding[],
  );
  const contactOf = new Map<string, string | null>(found.map((r: { project_id: string; id: string; contact_id: string | null }) => [`${r.project_id}/${r.id}`, r.contact_id]));
  const byProject = new Map<string, NewEvent[]>();
  for (const h of hits) {
    const key = `${h.projectId}/${h.emailId}`;
    if (!contactOf.has(key)) continue;
    const data: Record<string, unknown> = {
      ...(h.kind === 'click' ? { url: h.url } : {}),
      ...(h.agent.bot ? { bot: true } : {}),
      ...(h.agent.proxy ? { proxy: h.agent.proxy } : {}),
    };
    const list = byProject.get(h.projectId) ?? [];
    list.push({ name: h.kind === 'open' ? 'email.opened' : 'email.clicked', contactId: contactOf.get(key) ?? null, emailId: h.emailId, data });
    byProject.set(h.projectId, list);
  }
  for (const [projectId, events] of byProject) await recordEvents(trx, projectId, events);
  return hits.map((h) => contactOf.has(`${h.projectId}/${h.emailId}`));
}
