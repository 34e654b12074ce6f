/**
 * An A/B campaign's materialisation beside a plain campaign's of the same audience (issue 32's bar: the test adds no
 * per-recipient work, ≤ 1.2 ×), side by side in one run.
 *
 *   npx tsx bench/abCampaign.ts      (npm run bench:ab-campaign)
 *
 * Starts its own embedded PostgreSQL, seeds BENCH_CONTACTS (default 100,000) subscribed contacts in one project, then
 * times, BENCH_REPS times each (alternating which goes first), the campaign workflow with Herald's real campaign
 * activities in this process (bench/lib/materialise.ts, as bench/campaign.ts times a plain campaign):
 * - plain: beginCampaign, the audience in batches of 500 into the delivery queue;
 * - A/B: beginCampaign (the variants frozen, the sample planned over the audience: a count and a top-N sort of the
 *   hashes), the sample's batches (each reads 100 / share times more of the audience and queues its variants' part),
 *   the drain (nothing pending: no worker runs), the wait (over at once: it is a timer, not work), the decision (the
 *   real activity: the sample's figures, a campaign.winner event) and the rest's batches (the audience again, in
 *   batches of 500, everyone not mailed yet).
 * Both end with one email per contact; the clock stops when the workflow first asks for its last part's progress.
 * Shares: BENCH_SHARES (default "10,50"), 2 variants (BENCH_VARIANTS).
 */
import { cpuMs, machine, machineBusyMs, runBench } from './lib/proc';
import { startCluster } from './lib/cluster';
import { benchProject } from './lib/herald';
import { heraldMaterialise, type HeraldRun } from './lib/materialise';

const N = Number(process.env.BENCH_CONTACTS ?? 100_000);
const REPS = Number(process.env.BENCH_REPS ?? 3);
const SHARES = (process.env.BENCH_SHARES ?? '10,50').split(',').map(Number);
const VARIANTS = Number(process.env.BENCH_VARIANTS ?? 2);
const f = (n: number, d = 0) => n.toLocaleString('en', { minimumFractionDigits: d, maximumFractionDigits: d });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

runBench('bench:ab-campaign', 30 * 60_000, async () => {
  const cluster = await startCluster('ab-campaign');
  try {
    console.log(`machine: ${machine(cluster.version)}`);
    const { knex } = cluster;
    const project = await benchProject();
    await knex.raw(`INSERT INTO contacts (project_id, email, subscribed, data)
      SELECT ?::uuid, 'reader-' || g || '@example.org', true, jsonb_build_object('firstName', 'Reader ' || g)
      FROM generate_series(1, ?::int) g`, [project.id, N]);
    await knex.raw('VACUUM ANALYZE');
    console.log(`seeded ${f(N)} subscribed contacts; ${REPS} runs of each side per share, alternating; ${VARIANTS} variants\n`);
    const rows: string[] = [];
    for (const share of SHARES) {
      const plain: HeraldRun[] = [];
      const ab: HeraldRun[] = [];
      const busyBefore = machineBusyMs();
      const wallBefore = performance.now();
      for (let rep = 1; rep <= REPS; rep++) {
        const order = rep % 2 === 1 ? ['plain', 'ab'] : ['ab', 'plain'];
        for (const side of order) {
          const r = side === 'plain'
            ? await heraldMaterialise(cluster, project.id, `plain-${share}-${rep}`)
            : await heraldMaterialise(cluster, project.id, `ab-${share}-${rep}`, { variants: VARIANTS, samplePercent: share });
          if (r.rows !== N) throw new Error(`${side} left ${r.rows} rows instead of ${N}`);
          (side === 'plain' ? plain : ab).push(r);
          console.log(`  ${share} % run ${rep} ${side.padEnd(5)}: ${f(r.ms)} ms, ${f(r.rows)} rows (sample ${f(r.sample)}) in ${r.batches} batches, PostgreSQL CPU ${f(r.pgCpuMs)} ms, this process ${f(r.selfCpuMs)} ms`);
        }
      }
      const [p, a] = [median(plain.map((r) => r.ms)), median(ab.map((r) => r.ms))];
      const load = machineBusyMs() - busyBefore;
      console.log(`  ${share} %: A/B ${f(a)} ms vs plain ${f(p)} ms = ${(a / p).toFixed(2)} × (bar ≤ 1.2: ${a / p <= 1.2 ? 'met' : 'MISSED'}); the machine was ${f((100 * load) / (2 * (performance.now() - wallBefore)))} % busy\n`);
      rows.push(`| ${share} % | ${plain.map((r) => f(r.ms)).join(' / ')} | ${ab.map((r) => f(r.ms)).join(' / ')} | ${(a / p).toFixed(2)} × | ${f(median(plain.map((r) => r.pgCpuMs)))} / ${f(median(ab.map((r) => r.pgCpuMs)))} | ${median(ab.map((r) => r.batches))} vs ${median(plain.map((r) => r.batches))} |`);
    }
    console.log('| sample share | plain (ms) | A/B (ms) | A/B ÷ plain (medians) | PostgreSQL CPU ms, plain / A/B | batches A/B vs plain |');
    console.log('|---|---|---|---|---|---|');
    for (const r of rows) console.log(r);
    console.log(`\nthis process's CPU over the run: ${f(cpuMs(process.pid))} ms`);
  } finally {
    await cluster.stop();
  }
});
