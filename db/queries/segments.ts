import type { Knex } from 'knex';
import { compileCondition, loadSegments, type SegmentDef, type SegmentMap } from '../../audience/compile';

/**
 * The contacts of a segment as a query over `contacts AS c` (select what you need from it). Dynamic segments are
 * their condition; static ones their members table.
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

/** Member counts of several segments in one statement (a UNION ALL of one count per segment). */
export async function memberCounts(db: Knex, projectId: string, segments: SegmentDef[]): Promise<Map<string, number>> {
  if (segments.length === 0) return new Map();
  const all = await loadSegments(db, projectId);
  const parts = segments.map((s) => segmentContacts(db, projectId, s, all).select(db.raw('?::uuid AS id', [s.id]), db.raw('count(*)::int AS n')));
  const [first, ...rest] = parts;
  const rows: { id: string; n: number }[] = await (rest.length ? first!.unionAll(rest, true) : first!);
  return new Map(rows.map((r) => [r.id, r.n]));
}

/** Segments whose conditions name this one (they would break if it were deleted). */
export async function segmentsReferencing(db: Knex, projectId: string, id: string): Promise<{ id: string; name: string }[]> {
  return db('segments').where('project_id', projectId).whereRaw('condition::text LIKE ?', [`%"segment.${id}"%`]).select('id', 'name');
}
