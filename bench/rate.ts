/**
 * Rate accuracy of delivery at SEND_RATE_PER_SECOND=14 over 60 s.
 *
 *   npx tsx bench/rate.ts          (npm run bench:rate)
 *
 * Starts its own embedded PostgreSQL (temporary directory) and a loopback SMTP sink, queues more emails than 60 s can
 * drain (1,000; contact + QUEUED email row, as POST /v1/send leaves them), then runs a Herald worker process exactly as `npm run worker` starts it with SEND_RATE_PER_SECOND=14.
 * The sink records when it accepts each message; from the first acceptance on, 60 s are observed.
 * Reported: the most messages accepted in any one-second sliding window (every window [t, t + 1 s) that starts at an
 * acceptance, which is where the maximum of a sliding count is found), and the mean rate over the 60 s.
 *
 * Environment: BENCH_RATE (default 14), BENCH_SECONDS (default 60), BENCH_EMAILS (default 1000), BENCH_DURABLE=1.
 */
import { startCluster } from './lib/cluster';
import { benchProject, prepareEngineSchema, queueEmails, startHeraldChild } from './lib/herald';
import { machine, runBench, sleep, type Child } from './lib/proc';
import { startSink } from './lib/sink';

const RATE = Number(process.env.BENCH_RATE ?? 14);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 60);
const N = Number(process.env.BENCH_EMAILS ?? 1000);

/** Most events in any half-open window [t, t + width) (times sorted ascending). */
export function slidingMax(times: number[], width: number): { count: number; at: number } {
  let best = { count: 0, at: times[0] ?? 0 };
  let j = 0;
  for (let i = 0; i < times.length; i++) {
    while (j < times.length && times[j]! < times[i]! + width) j++;
    if (j - i > best.count) best = { count: j - i, at: times[i]! };
  }
  return best;
}

runBench('bench:rate', 5 * 60_000, async () => {
  const cluster = await startCluster('rate');
  const sink = await startSink();
  const children: Child[] = [];
  try {
    console.log(`machine: ${machine(cluster.version)}`);
    console.log(`PostgreSQL settings: ${JSON.stringify(cluster.settings)}`);
    const project = await benchProject();
    await prepareEngineSchema(cluster, sink.url);
    await queueEmails(cluster, project.id, N, 'rate');
    sink.reset();
    console.log(`queued ${N} emails; worker at SEND_RATE_PER_SECOND=${RATE}, observing ${SECONDS} s from the first acceptance …`);

    const worker = startHeraldChild('herald worker', cluster, 'worker', { SMTP_URL: sink.url, SEND_RATE_PER_SECOND: String(RATE), EXECUTOR_ID: 'bench-rate' });
    children.push(worker);
    await worker.ready;
    await sink.waitFor(1, 30_000);
    const t0 = sink.times[0]!;
    const end = t0 + SECONDS * 1000;
    await sleep(end - (performance.timeOrigin + performance.now()) + 500);
    await worker.stop();

    const times = sink.times.filter((t) => t < end);
    const win = slidingMax(times, 1000);
    const mean = times.length / SECONDS;
    // Fixed one-second buckets, for the shape of the flow.
    const buckets = Array.from({ length: SECONDS }, () => 0);
    for (const t of times) buckets[Math.floor((t - t0) / 1000)]!++;
    const gaps = times.slice(1).map((t, i) => t - times[i]!).sort((a, b) => a - b);

    console.log(`\naccepted in ${SECONDS} s: ${times.length}; mean ${mean.toFixed(2)}/s`);
    console.log(`most in any 1-s sliding window: ${win.count} (at +${((win.at - t0) / 1000).toFixed(2)} s)`);
    console.log(`per fixed second: min ${Math.min(...buckets)}, max ${Math.max(...buckets)}; ${buckets.join(' ')}`);
    console.log(`gaps between acceptances (ms): p50 ${gaps[Math.floor(gaps.length / 2)]?.toFixed(0)}, p90 ${gaps[Math.floor(gaps.length * 0.9)]?.toFixed(0)}, max ${gaps[gaps.length - 1]?.toFixed(0)}`);
    console.log(`targets: window max ${win.count} ≤ ${RATE}: ${win.count <= RATE ? 'met' : 'MISSED'}; mean ${mean.toFixed(2)} ≥ ${RATE === 14 ? '13.5' : (RATE * 13.5 / 14).toFixed(2)}: ${mean >= (RATE * 13.5) / 14 ? 'met' : 'MISSED'}`);
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await sink.close();
    await cluster.stop();
  }
});
