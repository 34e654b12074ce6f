import type { Knex } from 'knex';
import { AudienceError } from '../core/errors';
import { compileCondition, loadSegments, type SegmentDef, type SegmentMap } from './compile';
import { databaseMessage, isDataError } from '../db/errors';

/**
 * The contacts of a segment as a query over `contacts AS c` (select what you need from it). Dynamic segments are
 * their condition; static ones their members table. A condition that cannot be compiled throws an AudienceError.
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
