import type { Knex } from 'knex';
import { emailByKey } from '../db/partitions';
import { deleteInBatches } from '../db/prune';
import { eventEffects } from '../db/queries/events';
import { campaignTally } from '../db/queries/campaignTally';
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

/**
 * recordHits' one statement (exported for EXPLAIN). Bindings: per email (project ids, email ids, opens, human open,
 * clicks, human click), whether to look for the emails in every partition (`wide`), then per hit in order (project ids,
 * email ids, event names, event data as JSON, window keys: windowKey), then the event window in milliseconds.
 * Each email is looked for in the partitions its id's time says (db/partitions.ts herald_email_lo/hi: one, near a
 * month's start two), or, `wide`, in all of them.
 */
export const HITS_SQL = `WITH h AS (
       SELECT * FROM unnest(?::uuid[], ?::uuid[], ?::int[], ?::bool[], ?::int[], ?::bool[])
         AS h(project_id, id, opens, human_open, clicks, human_click)),
     counted AS (
       UPDATE emails e SET
         opens = e.opens + h.opens,
         first_opened_at = CASE WHEN h.human_open THEN coalesce(e.first_opened_at, now()) ELSE e.first_opened_at END,
         clicks = e.clicks + h.clicks,
         first_clicked_at = CASE WHEN h.human_click THEN coalesce(e.first_clicked_at, now()) ELSE e.first_clicked_at END
       FROM h, LATERAL (SELECT CASE WHEN ?::bool THEN '-infinity'::timestamptz ELSE herald_email_lo(h.id) END AS lo,
                               CASE WHEN ?::bool THEN 'infinity'::timestamptz ELSE herald_email_hi(h.id) END AS hi) b
       -- Each email by its primary key and by nothing else (db/partitions.ts emailByKey): this named statement may run
       -- with its generic plan.
       WHERE ${emailByKey('h', 'b.lo', 'b.hi')}
       -- first_opened_at / first_clicked_at = now(): set by this statement (now() is its transaction's start, and it
       -- runs alone in autocommit), so the email counts once more among its campaign's unique opens / clicks. A
       -- concurrent batch that set it first committed another transaction's now(): this one waited and keeps it.
       RETURNING e.project_id, e.id, e.contact_id, e.campaign_id, e.variant, e.is_test, e.to_email, e.subject, h.opens, h.clicks,
                 (h.human_open AND e.first_opened_at = now())::int AS unique_opens,
                 (h.human_click AND e.first_clicked_at = now())::int AS unique_clicks),
     ${campaignTally('(SELECT * FROM counted WHERE NOT is_test)', ['opens', 'unique_opens', 'clicks', 'unique_clicks'])},
     hit AS (
       SELECT x.*, md5(x.window_key)::uuid AS link
       FROM unnest(?::uuid[], ?::uuid[], ?::text[], ?::text[], ?::text[]) WITH ORDINALITY AS x(project_id, email_id, name, data, window_key, ord)),
     -- The first hit of each email and window key (open; click per link; each for people and for bots) of the batch,
     -- of an email that exists.
     firsts AS (
       SELECT DISTINCT ON (hit.project_id, hit.email_id, hit.link) hit.*, c.contact_id
       FROM hit JOIN counted c ON c.project_id = hit.project_id AND c.id = hit.email_id
       ORDER BY hit.project_id, hit.email_id, hit.link, hit.ord),
     -- Its window: a new row, or one whose last event is older than the window, is (re)stamped and gets its event. The
     -- rows of an email are only written with the email's row locked (counted), so concurrent batches take turns.
     windowed AS (
       INSERT INTO tracking_event_windows AS w (project_id, email_id, link, last_event_at)
       SELECT project_id, email_id, link, now() FROM firsts ORDER BY project_id, email_id, link
       ON CONFLICT (project_id, email_id, link) DO UPDATE SET last_event_at = excluded.last_event_at
         WHERE w.last_event_at <= now() - ?::int * interval '1 millisecond'
       RETURNING w.project_id, w.email_id, w.link),
     new_events AS (
       SELECT NULL::uuid AS id, f.project_id, f.name, f.contact_id, f.email_id, f.data::jsonb AS data
       FROM firsts f JOIN windowed w ON w.project_id = f.project_id AND w.email_id = f.email_id AND w.link = f.link
       ORDER BY f.ord),
     -- The events' emails are the rows counted above (address and subject unchanged by it): no second read of emails.
     ${eventEffects('counted')}
     SELECT project_id, id FROM counted`;

/**
 * What one window covers, within an email: its opens, or its clicks of one link; those of people and those of proxies
 * and scanners apart, so that a privacy proxy's prefetch at delivery never hides the person's own open a moment later
 * (nor a link scanner's click a person's). Stored as md5 of this (tracking_event_windows.link).
 */
export const windowKey = (h: Hit) => `${h.kind}:${h.agent.bot ? 'bot' : 'person'}:${h.kind === 'click' ? h.url ?? '' : ''}`;

/** One tracking event per email and kind (open; click per link) per this window, unless configured otherwise. */
export const DEFAULT_EVENT_WINDOW_MS = 60_000;

/**
 * Records any number of hits in ONE statement, atomic on its own (group commit in autocommit, db/batch.ts
 * groupStatement): one update of the emails' counts (every hit counts in `opens` / `clicks`; the first hit that is not
 * a proxy or a scanner sets `first_opened_at` / `first_clicked_at`, which is what makes an open or click unique), and
 * the events `email.opened` and `email.clicked` through EVENT_EFFECTS (the one way events are written, and so the
 * webhooks and automations they start): at most one per email and kind (open; click per link), for people and for
 * bots each (windowKey), per `windowMs`, the first hit's, in the order of the hits. A flood of one pixel or link
 * thus makes one event (one webhook) per window, however many hits it counts. A named (prepared) statement: planned once per connection, not for every batch.
 * Answers, by hit, whether its email exists: a hit on an email that is gone records nothing. The emails are looked for in
 * the partitions their ids name; those not found there (a campaign's email written long after its first batch, or one
 * that is gone) are looked for once more in every partition, by the same statement for their hits alone.
 */
export async function recordHits(db: Knex, hits: readonly Hit[], windowMs = DEFAULT_EVENT_WINDOW_MS): Promise<boolean[]> {
  const found = await recordIn(db, hits, windowMs, false);
  const missed = hits.filter((h) => !found.has(`${h.projectId}/${h.emailId}`));
  if (missed.length > 0) for (const key of await recordIn(db, missed, windowMs, true)) found.add(key);
  return hits.map((h) => found.has(`${h.projectId}/${h.emailId}`));
}

/** One run of HITS_SQL for these hits; answers the emails it found (`project/email`). */
async function recordIn(db: Knex, hits: readonly Hit[], windowMs: number, wide: boolean): Promise<Set<string>> {
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
  const data = (h: Hit) => JSON.stringify({
    ...(h.kind === 'click' ? { url: h.url } : {}),
    ...(h.agent.bot ? { bot: true } : {}),
    ...(h.agent.proxy ? { proxy: h.agent.proxy } : {}),
  });
  const { rows: found } = await db.raw(HITS_SQL, [
    rows.map((r) => r.projectId), rows.map((r) => r.emailId), rows.map((r) => r.opens), rows.map((r) => r.humanOpen),
    rows.map((r) => r.clicks), rows.map((r) => r.humanClick), wide, wide,
    hits.map((h) => h.projectId), hits.map((h) => h.emailId), hits.map((h) => (h.kind === 'open' ? 'email.opened' : 'email.clicked')), hits.map(data),
    hits.map(windowKey), windowMs,
  ] as Knex.RawBinding[]).options({ name: 'herald_record_hits' });
  return new Set(found.map((r: { project_id: string; id: string }) => `${r.project_id}/${r.id}`));
}

/**
 * Deletes the windows that have passed (worker/housekeeping.ts): a passed window's row only lets its next hit through,
 * as no row does, so deleting it changes nothing but the table's size (at most the last window's hits between sweeps).
 */
export function pruneEventWindows(db: Knex, windowMs = DEFAULT_EVENT_WINDOW_MS): Promise<number> {
  return deleteInBatches(db, 'tracking_event_windows', `last_event_at <= now() - ?::int * interval '1 millisecond'`, [windowMs]);
}
