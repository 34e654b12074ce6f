import type { Knex } from 'knex';
import { LIST_PLAN } from '../../db/pages';
/**
 * EXPLAIN output of a query over a partitioned table (db/partitions.ts), read as the EXPLAIN tests read a plain table's:
 * - the partitions that hold no row (the months created ahead, the default partition) are planned as sequential scans
 *   of nothing (cost 0.00..0.00, or a start-up cost equal to the total, a sub-plan's: an empty table has no page to
 *   read); they are left out, with their conditions;
 * - a Merge Append's `Sort Key` is the order it merges its partitions' index scans in, not a sort: left out too.
 * What remains names each partition's index as `<parent index>_<partition>` (emails_pkey_p202611), so that a test
 * looking for the parent's index name finds it.
 */
export function partitionedPlan(plan: string): string {
  const lines = plan.split('\n');
  const out: string[] = [];
  const indent = (l: string) => l.length - l.trimStart().length;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/Seq Scan on \w+_(p\d{6}|default|legacy)\b.*cost=(\d+\.\d\d)\.\.\2 /.test(line)) {
      const own = indent(line);
      while (i + 1 < lines.length && indent(lines[i + 1]!) > own && !/->/.test(lines[i + 1]!)) i++;
      continue;
    }
    if (/^\s*Sort Key:/.test(line) && /Merge Append/.test(lines[i - 1] ?? '')) continue;
    out.push(line);
  }
  return out.join('\n');
}

/**
 * The generic plan of a statement as pageWithTotal sends it with `genericPlan` (db/pages.ts): EXPLAIN (GENERIC_PLAN) of
 * its text with the `$n` parameters left unknown to the planner, under the planner settings it is sent with
 * (LIST_PLAN), read as partitionedPlan reads a plan.
 */
export async function genericPlanOf(db: Knex, statement: { toSQL(): { toNative(): { sql: string } } }, settings: Record<string, string> = LIST_PLAN): Promise<string> {
  const res = await db.transaction(async (trx) => {
    for (const [k, v] of Object.entries(settings)) await trx.raw(`SET LOCAL ${k} = ${v}`);
    return trx.raw(`EXPLAIN (GENERIC_PLAN) ${statement.toSQL().toNative().sql}`) as Promise<{ rows: { 'QUERY PLAN': string }[] }>;
  });
  return partitionedPlan(res.rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n'));
}

/** A plan under its first node: a list statement's own sort of its page's rows (at most limit + 1) left out. */
export const belowTheTop = (plan: string) => plan.split('\n').slice(1).join('\n');

/** A node of EXPLAIN (ANALYZE, FORMAT JSON), with the fields these tests read. */
export interface AnalyzedNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  Plans?: AnalyzedNode[];
}

/**
 * The plan of the last statement `call` sends (knex's `query` event, which db/prepared.ts emits too), run again under
 * EXPLAIN (ANALYZE, FORMAT JSON) with its bindings: the list code's own statement, as PostgreSQL runs it. Its nodes,
 * flattened.
 */
export async function analyzedPlanOfCall(db: Knex, call: () => Promise<unknown>): Promise<AnalyzedNode[]> {
  let sent: { sql: string; bindings: readonly unknown[] } | undefined;
  const capture = (q: { sql: string; bindings?: readonly unknown[] }) => { sent = { sql: q.sql, bindings: q.bindings ?? [] }; };
  db.on('query', capture);
  try {
    await call();
  } finally {
    db.off('query', capture);
  }
  if (!sent) throw new Error('no statement was sent');
  const res = await db.raw(`EXPLAIN (ANALYZE, FORMAT JSON) ${sent.sql.replace(/\$\d+/g, '?')}`, sent.bindings as Knex.RawBinding[]);
  return planNodes(res.rows[0]['QUERY PLAN'][0].Plan as AnalyzedNode);
}

/** A plan's nodes (FORMAT JSON), the root and every node under it. */
export const planNodes = (n: AnalyzedNode): AnalyzedNode[] => [n, ...(n.Plans ?? []).flatMap(planNodes)];
