/**
 * What the counts of the lists cost, statement by statement (issue 33 point 3, BENCHMARKS.md section 41): EXPLAIN
 * ANALYZE of each list's count as it was (exact) and as it is (capped at 1,000, db/pages.ts cappedCount), of a page of
 * segments' member counts (memberCounts, what GET /segments ran when read) beside reading the segments' rows (what it
 * runs now, the counts kept on them), of a rare dynamic segment's count exact and capped (the reason the segment
 * counts are kept rather than capped), and of the contact picker's page and count.
 *
 *   BENCH_CLUSTER_DIR=dir npx tsx bench/listCounts.ts
 *
 * Needs the cluster bench/listRatios.ts seeded and kept in BENCH_CLUSTER_DIR (1,000,000 contacts and emails, 200,000
 * executions and deliveries…; its list-ratios.json names the ids). BENCH_REPEAT (default 5): each statement is run
 * that many times after one warm-up run, and its median execution time printed, with the machine's load average.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { loadSegments } from '../audience/compile';
import { memberCounts, segmentContacts, segmentCountRows } from '../audience/segmentQueries';
import { cappedCount, LIST_COUNT_CAP } from '../db/pages';
import { listContacts, searchStatement } from '../db/queries/contacts';
import { startCluster } from './lib/cluster';
import { machine, runBench, stealSince } from './lib/proc';

const REPEAT = Number(process.env.BENCH_REPEAT ?? 5);

interface Seeded {
  projectId: string;
  ids: { proSegment: string; openedSegment: string; staticSegment: string; workflow: string; endpoint: string };
  contacts: { id: string; email: string }[];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** The median execution time (ms) of EXPLAIN ANALYZE of the statement, and the plan's top node. */
async function explain(knex: Knex, q: Knex.QueryBuilder | Knex.Raw): Promise<{ ms: number; top: string }> {
  const { sql, bindings } = q.toSQL();
  const run = async () => {
    const res = await knex.raw(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, bindings as Knex.RawBinding[]);
    const plan = res.rows[0]['QUERY PLAN'][0];
    return { ms: plan['Execution Time'] as number, top: plan.Plan['Node Type'] as string };
  };
  await run();
  const runs = [];
  for (let i = 0; i < REPEAT; i++) runs.push(await run());
  return { ms: median(runs.map((r) => r.ms)), top: runs[0]!.top };
}

/** The median wall time (ms) of a call. */
async function timed(call: () => Promise<unknown>): Promise<number> {
  await call();
  const ms = [];
  for (let i = 0; i < REPEAT; i++) {
    const t0 = performance.now();
    await call();
    ms.push(performance.now() - t0);
  }
  return median(ms);
}

runBench('bench:list-counts', 30 * 60_000, async () => {
  const dir = process.env.BENCH_CLUSTER_DIR;
  if (!dir || !fs.existsSync(path.join(dir, 'list-ratios.json'))) throw new Error('BENCH_CLUSTER_DIR must name a cluster bench/listRatios.ts seeded and kept');
  const seeded = JSON.parse(fs.readFileSync(path.join(dir, 'list-ratios.json'), 'utf8')) as Seeded;
  const cluster = await startCluster('list-counts', {}, { keepDir: dir });
  try {
    const { knex } = cluster;
    console.log(`machine: ${machine(cluster.version)}`);
    const p = seeded.projectId;
    const steal = stealSince();
    const loads: number[] = [os.loadavg()[0]!];
    const rows: string[][] = [];
    const pair = async (name: string, exact: Knex.QueryBuilder, capped: Knex.QueryBuilder) => {
      const a = await explain(knex, exact);
      const b = await explain(knex, capped);
      const n = (await exact.clone())[0] as { n: string | number } | undefined;
      rows.push([name, String(n?.n ?? '?'), a.ms.toFixed(1), b.ms.toFixed(1)]);
      loads.push(os.loadavg()[0]!);
      console.log(`${name}: ${n?.n} rows; exact ${a.ms.toFixed(1)} ms (${a.top}), capped ${b.ms.toFixed(1)} ms (${b.top})`);
    };
    const counts = (filtered: () => Knex.QueryBuilder) => [filtered().clearSelect().count('* as n'), cappedCount(filtered, LIST_COUNT_CAP)] as const;

    await pair('executions of the workflow', ...counts(() => knex('automation_executions as x').where({ 'x.project_id': p, 'x.automation_id': seeded.ids.workflow })));
    await pair('executions, status=WAITING', ...counts(() => knex('automation_executions as x').where({ 'x.project_id': p, 'x.automation_id': seeded.ids.workflow, 'x.status': 'WAITING' })));
    await pair('webhook deliveries of the endpoint', ...counts(() => knex('webhook_deliveries').where({ endpoint_id: seeded.ids.endpoint, project_id: p })));
    await pair('received messages', ...counts(() => knex('inbound_messages').where({ project_id: p })));
    await pair('suppressions', ...counts(() => knex('suppressions').where({ project_id: p })));
    await pair('audit log', ...counts(() => knex('audit_log').where({ project_id: p })));
    const all = await loadSegments(knex, p);
    for (const [name, id] of [['segment members: data.plan = pro', seeded.ids.proSegment], ['segment members: opened in 30 days', seeded.ids.openedSegment], ['segment members: static', seeded.ids.staticSegment]] as const) {
      const s = all.get(id)!;
      await pair(name, ...counts(() => segmentCountRows(knex, p, s, all)));
      if (s.type === 'DYNAMIC') {
        const newest = await explain(knex, cappedCount(() => segmentCountRows(knex, p, s, all), LIST_COUNT_CAP, 'c.id'));
        console.log(`  capped, newest first (as GET /segments/:id/contacts counts): ${newest.ms.toFixed(1)} ms`);
        rows.push([`${name}: capped, newest first (as it is counted now)`, '1001', '–', newest.ms.toFixed(1)]);
      }
      const page = await explain(knex, segmentContacts(knex, p, s, all).select('c.*').orderBy('c.id', 'desc').limit(11));
      console.log(`  its first page (limit 10): ${page.ms.toFixed(1)} ms (${page.top})`);
      rows.push([`${name}: first page (limit 10), unchanged`, '11', page.ms.toFixed(1), page.ms.toFixed(1)]);
    }
    // A rare condition: one contact of the 1,000,000 (no index serves data.*): capped or not, every contact is read.
    const rare = { id: '00000000-0000-0000-0000-000000000000', type: 'DYNAMIC' as const, condition: { logic: 'AND' as const, groups: [{ filters: [{ field: 'data.firstName', operator: 'equals' as const, value: 'Person 4242' }] }] } };
    await pair('a rare dynamic segment (data.firstName = one contact)', ...counts(() => segmentContacts(knex, p, rare, all)));

    // GET /segments: the member counts of the page's segments as it counted them when read, beside reading the rows.
    const segs = await knex('segments').where('project_id', p).orderBy('id', 'desc').limit(51);
    const whenRead = await timed(() => memberCounts(knex, p, segs));
    const rowsOnly = await explain(knex, knex('segments').where('project_id', p).orderBy('id', 'desc').limit(51));
    loads.push(os.loadavg()[0]!);
    console.log(`GET /segments: the ${segs.length} segments' member counts when read ${whenRead.toFixed(1)} ms (wall, one statement); their rows with kept counts ${rowsOnly.ms.toFixed(1)} ms`);
    rows.push([`GET /segments: ${segs.length} segments counted when read (memberCounts, wall) / their rows with kept counts`, '–', whenRead.toFixed(1), rowsOnly.ms.toFixed(1)]);

    // The contact picker: limit 6, five letters of an address; and one whole address. A search is one statement, its
    // page and capped count together (db/queries/contacts.ts searchStatement).
    for (const [name, search] of [['picker: five letters', seeded.contacts[3]!.email.slice(0, 5)], ['search one address', seeded.contacts[7]!.email]] as const) {
      const statement = await explain(knex, searchStatement(knex, p, { search }, { limit: 6 }));
      const found = (await listContacts(knex, p, { search }, { limit: 6 })).rows.length;
      loads.push(os.loadavg()[0]!);
      console.log(`contacts ${name} (${search}): page and capped count ${statement.ms.toFixed(1)} ms (${found} rows of 7 asked)`);
      rows.push([`contacts ${name}: page and capped count, one statement`, String(found), '–', statement.ms.toFixed(1)]);
    }

    console.log(`\nload average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}, steal ${(stealSince(steal.at).share * 100).toFixed(1)} %`);
    console.log('\n| statement | rows | before (exact), ms | after (capped), ms |\n|---|---|---|---|');
    for (const r of rows) console.log(`| ${r.join(' | ')} |`);
  } finally {
    await cluster.stop();
  }
});
