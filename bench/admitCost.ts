/**
 * What the key's look at every SMTP message costs beside the rate count it replaced (issue 26, BENCHMARKS.md 19):
 * projects/access.ts admit (key, project, rate count and last_used_at in one named statement) against consumeRate
 * (the rate count alone, what SMTP ran per message before), called in groups of 8 as bench:smtp's 8 connections do,
 * in 8 interleaved rounds of 1,500 calls each; the CPU per call of this process (process.cpuUsage) and of PostgreSQL.
 * CPU time, not wall time, and both sides in every round: the figure holds on a machine shared with others.
 *
 *   npx tsx bench/admitCost.ts      (~1 min)
 */
import { admit, consumeRate } from '../projects/access';
import { startCluster } from './lib/cluster';
import { benchProject } from './lib/herald';
import { cpuMs, runBench } from './lib/proc';

runBench('admit-cost', 5 * 60_000, async () => {
  const cluster = await startCluster('admitcost');
  try {
    const project = await benchProject();
    const { knex } = cluster;
    const pgPid = cluster.postmasterPid();
    const N = 1500;
    const ROUNDS = 8;
    const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const res: Record<string, { api: number[]; pg: number[] }> = { consumeRate: { api: [], pg: [] }, admit: { api: [], pg: [] } };
    const run = async (name: string, f: () => Promise<unknown>) => {
      // 8 at a time, as the 8 connections of bench:smtp.
      const c = process.cpuUsage();
      const p0 = cpuMs(pgPid, true);
      for (let i = 0; i < N / 8; i++) await Promise.all(Array.from({ length: 8 }, f));
      const d = process.cpuUsage(c);
      res[name]!.api.push((d.user + d.system) / N);
      res[name]!.pg.push(((cpuMs(pgPid, true) - p0) * 1000) / N);
    };
    for (let r = 0; r < ROUNDS; r++) {
      await run('consumeRate', () => consumeRate(knex, project.id));
      await run('admit', () => admit(knex, project.secretKey));
    }
    for (const [k, v] of Object.entries(res)) console.log(`${k}: API ${med(v.api).toFixed(1)} µs, postgres ${med(v.pg).toFixed(1)} µs per call (medians of ${ROUNDS} interleaved rounds; API ${v.api.map((x) => x.toFixed(0)).join(' ')})`);
  } finally {
    await cluster.stop();
  }
});
