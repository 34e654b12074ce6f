import type { Knex } from 'knex';
import { AudienceError } from '../core/errors';
import { compileCondition, loadSegments, type SegmentDef, type SegmentMap } from './compile';
import { databaseMessage, isDataError } from '../db/errors';

/**
 * The contacts of a segment as a query over `contacts AS c` (select what you need from it). Dynamic segments are
 * their condition; static ones their members table. A condition that cannot be compiled throws an AudienceError.
 * (A page of a static segment reads its members first, from the cursor down: audience/segments.ts segmentMemberQueries.)
 */
export function segmentContacts(db: Knex, projectId: string, segment: SegmentDef, segments: SegmentMap): Knex.QueryBuilder {
  const q = db('contacts as c').where('c.project_id', projectId);
  if (segment.type === 'STATIC') {
    q.whereExists(db('segment_members as m').whereRaw('m.project_id = c.project_id AND m.contact_id = c.id').where('m.segment_id', segment.id));
  } else {
    compileCondition(q, segment.condition!, segments);
  }
  return q;
}

/**
 * The rows to count for a segment's member count: its contacts (segmentContacts), except that a static segment's are
 * its rows of segment_members alone, an index-only range of their primary key. The same number: a member row names a
 * contact of the project (its foreign key), and goes with it (ON DELETE CASCADE). Joined to the contacts, a count of
 * 100,000 members read all 1,000,000 contacts of the project (a hash join, 1.7 s; BENCHMARKS.md section 37).
 */
export function segmentCountRows(db: Knex, projectId: string, segment: SegmentDef, segments: SegmentMap): Knex.QueryBuilder {
  if (segment.type === 'STATIC') return db('segment_members as m').where('m.project_id', projectId).where('m.segment_id', segment.id);
  return segmentContacts(db, projectId, segment, segments);
}

/** A segment's member count, or why it has none: its stored condition cannot be compiled or its query fails on its values. */
export type MemberCount = { memberCount: number; error: null } | { memberCount: null; error: string };

/** How a condition that cannot be evaluated is described to the API user (the segment's `error`, a 422's message). */
export function unusableCondition(err: unknown): string {
  return `the condition cannot be evaluated: ${err instanceof AudienceError ? err.message : databaseMessage(err)}`;
}

/** True for a failure of one segment's own query that retrying cannot mend (see unusableCondition). */
export function isUnusableCondition(err: unknown): boolean {
  return err instanceof AudienceError || isDataError(err);
}

/**
 * Member counts of several segments in one statement (a UNION ALL of one count per segment). A segment whose stored
 * condition cannot be evaluated gets an error instead of a count, and never fails the others: conditions that do not
 * compile are left out of the statement; when the statement fails on a value (a data error: a date PostgreSQL cannot
 * hold), each segment of it is counted on its own, so that only the bad ones get their error. That fallback costs
 * one statement per segment of the page, and only while a bad row is on it.
 */
export async function memberCounts(db: Knex, projectId: string, segments: SegmentDef[]): Promise<Map<string, MemberCount>> {
  const counts = new Map<string, MemberCount>();
  if (segments.length === 0) return counts;
  const all = await loadSegments(db, projectId);
  const count = (s: SegmentDef) => segmentCountRows(db, projectId, s, all).select(db.raw('?::uuid AS id', [s.id]), db.raw('count(*)::int AS n'));
  const parts: { segment: SegmentDef; query: Knex.QueryBuilder }[] = [];
  for (const segment of segments) {
    try {
      parts.push({ segment, query: count(segment) });
    } catch (err) {
      if (!(err instanceof AudienceError)) throw err;
      counts.set(segment.id, { memberCount: null, error: unusableCondition(err) });
    }
  }
  if (parts.length === 0) return counts;
  const [first, ...rest] = parts.map((p) => p.query);
  try {
    const rows: { id: string; n: number }[] = await (rest.length ? first!.unionAll(rest, true) : first!);
    for (const r of rows) counts.set(r.id, { memberCount: r.n, error: null });
  } catch (err) {
    if (!isDataError(err)) throw err;
    await Promise.all(parts.map(async ({ segment }) => {
      try {
        const [row] = await count(segment);
        counts.set(segment.id, { memberCount: (row as { n: number }).n, error: null });
      } catch (one) {
        if (!isDataError(one)) throw one;
        counts.set(segment.id, { memberCount: null, error: unusableCondition(one) });
      }
    }));
  }
  return counts;
}

/** Segments whose conditions name this one (they would break if it were deleted). */
export async function segmentsReferencing(db: Knex, projectId: string, id: string): Promise<{ id: string; name: string }[]> {
  return db('segments').where('project_id', projectId).whereRaw('condition::text LIKE ?', [`%"segment.${id}"%`]).select('id', 'name');
}

/**
 * How old a kept member count may be before a read of it asks for a recount. The read answers the kept count (with
 * the time it was counted) and the recount runs after it, in the background: a page of segments costs what reading
 * their rows costs, whatever their conditions match (BENCHMARKS.md section 41).
 */
export const SEGMENT_RECOUNT_AFTER_MS = 60_000;

/** A recount under way longer than this has died with its process: another read takes it over. */
export const SEGMENT_RECOUNT_GIVE_UP_MS = 10 * 60_000;

/** A segment's kept count (its row's member_count, member_count_error and members_counted_at). */
export interface KeptCountRow {
  member_count: number | null;
  member_count_error: string | null;
  members_counted_at: Date | null;
}

/** The kept count of a row, or undefined when it was never counted. */
export function keptCount(row: KeptCountRow): MemberCount | undefined {
  if (!row.members_counted_at) return undefined;
  return row.member_count_error !== null ? { memberCount: null, error: row.member_count_error } : { memberCount: row.member_count ?? 0, error: null };
}

/**
 * Counts the segments now (memberCounts, exactly) and keeps each count on its row with the time the count began.
 * A count never replaces one that began later (two recounts that cross: the newer stays).
 */
export async function recountSegments(db: Knex, projectId: string, segments: SegmentDef[]): Promise<Map<string, { members: MemberCount; countedAt: Date }>> {
  const kept = new Map<string, { members: MemberCount; countedAt: Date }>();
  if (segments.length === 0) return kept;
  const { rows: [{ at }] } = await db.raw('SELECT clock_timestamp() AS at');
  const counts = await memberCounts(db, projectId, segments);
  const values = [...counts].map(([id, c]) => ({ id, n: c.memberCount, error: c.error }));
  await db.raw(
    `UPDATE segments s SET
       member_count = CASE WHEN v.newer THEN v.n ELSE s.member_count END,
       member_count_error = CASE WHEN v.newer THEN v.error ELSE s.member_count_error END,
       members_counted_at = CASE WHEN v.newer THEN v.at ELSE s.members_counted_at END,
       members_recount_since = NULL
     FROM (SELECT x.*, ?::timestamptz AS at, s2.members_counted_at IS NULL OR s2.members_counted_at <= ?::timestamptz AS newer
           FROM jsonb_to_recordset(?::jsonb) AS x(id uuid, n integer, error text)
           JOIN segments s2 ON s2.project_id = ? AND s2.id = x.id) v
     WHERE s.project_id = ? AND s.id = v.id`,
    [at, at, JSON.stringify(values), projectId, projectId]);
  for (const [id, members] of counts) kept.set(id, { members, countedAt: at as Date });
  return kept;
}

/**
 * Claims the recount of those segments whose kept count is older than SEGMENT_RECOUNT_AFTER_MS and that no one else is
 * recounting (one UPDATE: of several API nodes reading the same page, one counts), and answers their ids.
 */
export async function claimRecounts(db: Knex, projectId: string, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows: { id: string }[] = await db('segments').where('project_id', projectId).whereIn('id', ids)
    .where('members_counted_at', '<', db.raw(`now() - make_interval(secs => ?)`, [SEGMENT_RECOUNT_AFTER_MS / 1000]))
    .where((q) => q.whereNull('members_recount_since').orWhere('members_recount_since', '<', db.raw(`now() - make_interval(secs => ?)`, [SEGMENT_RECOUNT_GIVE_UP_MS / 1000])))
    .update({ members_recount_since: db.fn.now() }).returning('id');
  return rows.map((r) => r.id);
}
