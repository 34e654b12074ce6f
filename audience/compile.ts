import type { Knex } from 'knex';
import { AudienceError, type FieldError } from '../core/errors';
import { likeLiteral as literal } from '../db/like';
import { preparedStatement } from '../db/prepared';
import { eventIdFloorSql, idsFollowTime } from '../db/queries/events';
import { checkCondition, classify, referencedSegments, type FieldRef } from './check';
import { conditionSchema, type AudienceCondition, type FilterRule, type TimeUnit } from './condition';

/**
 * Compiles an audience condition into WHERE clauses on `contacts AS c`: one parameterised query, evaluated by
 * PostgreSQL. Every value is a binding; the only SQL text chosen from input comes from fixed tables below.
 */
export interface SegmentDef {
  id: string;
  type: 'DYNAMIC' | 'STATIC';
  condition: AudienceCondition | null;
}
export type SegmentMap = Map<string, SegmentDef>;

const INTERVAL: Record<TimeUnit, string> = { minutes: 'mins', hours: 'hours', days: 'days' };
const ORDER_SQL = { greaterThan: '>', lessThan: '<', greaterThanOrEqual: '>=', lessThanOrEqual: '<=' } as const;

const ago = (unit: TimeUnit) => `now() - make_interval(${INTERVAL[unit]} => ?)`;

type Where = Knex.QueryBuilder;
type Bindings = readonly unknown[];

/** whereRaw with loosely typed bindings (knex's typings want one binding type per call). */
function raw(q: Where, sql: string, bindings: Bindings = []): void {
  q.whereRaw(sql, bindings as Knex.RawBinding[]);
}

function textRule(q: Where, expr: string, pathBindings: Bindings, rule: FilterRule, caseInsensitive: boolean): void {
  const v = String(rule.value);
  const like = caseInsensitive ? 'ILIKE' : 'LIKE';
  switch (rule.operator) {
    case 'contains': raw(q, `${expr} ${like} ?`, [...pathBindings, `%${literal(v)}%`]); break;
    case 'notContains': raw(q, `coalesce(${expr}, '') NOT ${like} ?`, [...pathBindings, `%${literal(v)}%`]); break;
    case 'startsWith': raw(q, `${expr} ${like} ?`, [...pathBindings, `${literal(v)}%`]); break;
    case 'endsWith': raw(q, `${expr} ${like} ?`, [...pathBindings, `%${literal(v)}`]); break;
    default: throw new Error(`not a text operator: ${rule.operator}`);
  }
}

function compileRule(q: Where, rule: FilterRule, segments: SegmentMap, depth: number): void {
  const ref = classify(rule.field) as FieldRef; // checked by check()
  const op = rule.operator;
  switch (ref.kind) {
    case 'email': {
      const v = typeof rule.value === 'string' ? rule.value.trim().toLowerCase() : '';
      if (op === 'equals') raw(q, 'c.email = ?', [v]);
      else if (op === 'notEquals') raw(q, 'c.email <> ?', [v]);
      else if (op === 'exists') raw(q, 'true');
      else if (op === 'notExists') raw(q, 'false');
      else textRule(q, 'c.email', [], { ...rule, value: v }, false);
      return;
    }
    case 'subscribed':
      raw(q, op === 'equals' ? 'c.subscribed = ?' : 'c.subscribed <> ?', [rule.value]);
      return;
    case 'timestamp': {
      const col = `c.${ref.column}`;
      if (op === 'within') raw(q, `${col} >= ${ago(rule.unit!)}`, [rule.value]);
      else if (op === 'olderThan') raw(q, `${col} < ${ago(rule.unit!)}`, [rule.value]);
      else raw(q, `${col} ${ORDER_SQL[op as keyof typeof ORDER_SQL]} ?::timestamptz`, [rule.value]);
      return;
    }
    case 'data': {
      const path = [ref.path];
      const json = 'c.data #> ?::text[]';
      const text = 'c.data #>> ?::text[]';
      if (op === 'equals') raw(q, `${json} = ?::jsonb`, [...path, JSON.stringify(rule.value)]);
      else if (op === 'notEquals') raw(q, `${json} IS DISTINCT FROM ?::jsonb`, [...path, JSON.stringify(rule.value)]);
      else if (op === 'exists') raw(q, `coalesce(jsonb_typeof(${json}), 'null') <> 'null'`, path);
      else if (op === 'notExists') raw(q, `coalesce(jsonb_typeof(${json}), 'null') = 'null'`, path);
      else if (op === 'within') raw(q, `herald_try_timestamptz(${text}) >= ${ago(rule.unit!)}`, [...path, rule.value]);
      else if (op === 'olderThan') raw(q, `herald_try_timestamptz(${text}) < ${ago(rule.unit!)}`, [...path, rule.value]);
      else if (op in ORDER_SQL) {
        const cmp = ORDER_SQL[op as keyof typeof ORDER_SQL];
        // Numbers compare as numbers (only where the stored value is a JSON number); dates as timestamps.
        if (typeof rule.value === 'number') {
          raw(q, `(CASE WHEN jsonb_typeof(${json}) = 'number' THEN (${text})::numeric END) ${cmp} ?`, [...path, ...path, rule.value]);
        } else {
          raw(q, `herald_try_timestamptz(${text}) ${cmp} ?::timestamptz`, [...path, rule.value]);
        }
      } else textRule(q, text, path, rule, true);
      return;
    }
    case 'event': {
      const within = op === 'triggeredWithin' || op === 'notTriggeredWithin';
      // A window's events by their ids too, but for the outcomes' (whose ids can be of any age): the partitions of the
      // months before it are pruned, not read through (eventIdFloorSql).
      const window = within ? [`e.created_at >= ${ago(rule.unit!)}`, ...(idsFollowTime(ref.name) ? [`e.id >= ${eventIdFloorSql(ago(rule.unit!))}`] : [])] : [];
      const sql = `EXISTS (SELECT 1 FROM events e WHERE e.project_id = c.project_id AND e.contact_id = c.id AND e.name = ?${window.map((w) => ` AND ${w}`).join('')})`;
      const bindings = [ref.name, ...window.map(() => rule.value)];
      raw(q, op === 'triggered' || op === 'triggeredWithin' ? sql : `NOT ${sql}`, bindings);
      return;
    }
    case 'segment': {
      const segment = segments.get(ref.id)!; // checked by check()
      const member = (w: Where) => {
        if (segment.type === 'STATIC') {
          raw(w, 'EXISTS (SELECT 1 FROM segment_members m WHERE m.project_id = c.project_id AND m.segment_id = ? AND m.contact_id = c.id)', [segment.id]);
        } else {
          w.where((inner) => { compile(inner, segment.condition!, segments, depth + 1); });
        }
      };
      if (op === 'memberOf') q.where(member);
      else q.whereNot(member);
      return;
    }
  }
}

/**
 * Adds the condition to a query over `contacts AS c`; `segments` are the project's (loadSegments). A condition that
 * cannot be compiled throws an AudienceError naming what is wrong (at its path under `prefix`): it is checked here
 * again with the rules of the API (the row may have been stored under older rules, or by hand), so no stored row
 * turns into broken SQL.
 */
export function compileCondition(q: Where, condition: AudienceCondition, segments: SegmentMap, prefix = 'condition'): void {
  check(condition, segments, 0, prefix);
  compile(q, condition, segments, 0);
}

/** Throws an AudienceError for the first problem of the condition or of a segment it names, however deeply nested. */
function check(condition: AudienceCondition | null, segments: SegmentMap, depth: number, prefix: string): void {
  if (depth > 10) throw new AudienceError('segments nested too deeply (or in a loop)');
  const shape = conditionSchema.validate(condition, { convert: false });
  if (shape.error || !condition) throw new AudienceError(`${prefix}: ${shape.error?.message ?? 'missing'}`);
  const problem = checkCondition(condition, prefix)[0];
  if (problem) throw new AudienceError(`${problem.field}: ${problem.message}`);
  for (const id of referencedSegments(condition)) {
    const segment = segments.get(id);
    if (!segment) throw new AudienceError(`${prefix}: segment ${id} does not exist`);
    if (segment.type === 'DYNAMIC') check(segment.condition, segments, depth + 1, `segment ${id}: condition`);
  }
}

/** The SQL of a checked condition (knex calls the where-callbacks when it builds the statement). */
function compile(q: Where, condition: AudienceCondition, segments: SegmentMap, depth: number): void {
  q.where((all) => {
    for (const group of condition.groups) {
      const add = (g: Where) => { for (const rule of group.filters) compileRule(g, rule, segments, depth); };
      if (condition.logic === 'OR') all.orWhere(add);
      else all.where(add);
    }
  });
}

/**
 * The project's segments' definitions as one text, in SQL (binding: the project): the sha256 of each segment's id,
 * type and condition in id order. A process that kept the definitions (audience/segments.ts) selects it beside the
 * statement it built from them, and knows in the same snapshot whether they are still what it built it from.
 */
export const SEGMENTS_DIGEST_SQL = `(SELECT encode(sha256(convert_to(coalesce(string_agg(s.id::text || ' ' || s.type::text || ' ' || coalesce(s.condition::text, ''), ',' ORDER BY s.id), ''), 'UTF8')), 'hex') FROM segments s WHERE s.project_id = ?)`;

/**
 * The project's segments' definitions and their digest: a named statement, prepared once per connection
 * (db/prepared.ts), since a page of a segment's contacts reads them when its process does not know them yet (0.70 ms
 * as a knex query of its own, in process on the bench's cluster).
 */
const SEGMENT_DEFS = preparedStatement('herald_segment_defs',
  `SELECT id, type, condition, ${SEGMENTS_DIGEST_SQL} AS digest FROM segments WHERE project_id = ?`, { genericPlan: true });

/** The project's segments, with their digest (SEGMENTS_DIGEST_SQL) read in the same statement; undefined when there are none. */
export async function loadSegmentsDigested(db: Knex, projectId: string): Promise<{ all: SegmentMap; digest: string | undefined }> {
  const { rows } = await SEGMENT_DEFS(db, [projectId, projectId]);
  const defs = rows as (SegmentDef & { digest: string })[];
  return { all: new Map(defs.map(({ digest: _d, ...r }) => [r.id, r])), digest: defs[0]?.digest };
}

/** The project's segments, for resolving nested segment.<id> filters (one query; a project has few segments). */
export async function loadSegments(db: Knex, projectId: string): Promise<SegmentMap> {
  return (await loadSegmentsDigested(db, projectId)).all;
}

/**
 * Loads the project's segments and finds the problems of the condition's segment references: a segment that
 * does not exist in the project, or a chain that leads back to `selfId` (the segment being saved) or around a loop.
 */
export async function resolveSegments(db: Knex, projectId: string, condition: AudienceCondition, prefix: string, selfId?: string): Promise<{ segments: SegmentMap; errors: FieldError[] }> {
  const segments = await loadSegments(db, projectId);
  if (selfId) segments.delete(selfId); // its stored condition is being replaced
  const errors: FieldError[] = [];
  // Depth-first from each top-level rule: unknown ids, and any way back to a segment already on the path.
  const visit = (id: string, onPath: string[]): string | null => {
    if (id === selfId || onPath.includes(id)) return [...onPath, id].join(' → ');
    const s = segments.get(id);
    if (!s) return null;
    for (const next of s.condition ? referencedSegments(s.condition) : []) {
      const loop = visit(next, [...onPath, id]);
      if (loop) return loop;
    }
    return null;
  };
  condition.groups.forEach((g, gi) => g.filters.forEach((f, fi) => {
    const ref = classify(f.field);
    if (ref?.kind !== 'segment') return;
    const path = `${prefix}.groups.${gi}.filters.${fi}.field`;
    if (ref.id !== selfId && !segments.has(ref.id)) {
      errors.push({ field: path, message: `segment ${ref.id} does not exist`, code: 'not_found' });
      return;
    }
    const loop = visit(ref.id, selfId ? [selfId] : []);
    if (loop) errors.push({ field: path, message: `segments may not refer to themselves: ${loop}`, code: 'cycle' });
  }));
  return { segments, errors };
}
