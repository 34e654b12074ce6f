/**
 * `npm run bench:startup`: what it costs to start a Herald process compiled to JavaScript (`node scripts/run.cjs
 * bin/<entry>.ts`, how npm start, npm run api/worker, the image and the tests' children start one) against its
 * TypeScript sources through tsx's loader (`node --import tsx bin/<entry>.ts`, how they started before), side by side
 * in one run: the same entry on the same database, rounds alternating between the two ways. For each start: the
 * process's CPU time (its threads included, PostgreSQL's not) and the wall time from spawn to the first 200 from
 * GET /health; the process is then stopped with SIGTERM.
 *
 * BENCH_ENTRIES (default `bin/start.ts,bin/api.ts`), BENCH_ROUNDS (default 6 of each).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { startCluster } from './lib/cluster';
import { cpuMs, freePort, machine, REPO_ROOT, runBench, sleep, stealSince } from './lib/proc';
import { startSink } from './lib/sink';

const ENTRIES = (process.env.BENCH_ENTRIES ?? 'bin/start.ts,bin/api.ts').split(',');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const WAYS = {
  'compiled (scripts/run.cjs)': (entry: string) => [path.join(REPO_ROOT, 'scripts', 'run.cjs'), entry],
  'tsx loader (--import tsx)': (entry: string) => ['--import', 'tsx', entry],
} as const;
type Way = keyof typeof WAYS;

interface Start { cpuMs: number; wallMs: number }

async function start(argv: string[], env: NodeJS.ProcessEnv): Promise<Start> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(process.execPath, argv, { cwd: REPO_ROOT, env: { ...env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit'] });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${argv.join(' ')} exited (${child.exitCode}) before it answered`);
      const ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false);
      if (ok) break;
      if (performance.now() - t0 > 60_000) throw new Error(`${argv.join(' ')} did not answer /health within 60 s`);
      await sleep(20);
    }
    return { cpuMs: cpuMs(child.pid!), wallMs: performance.now() - t0 };
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

runBench('bench:startup', 15 * 60_000, async () => {
  const cluster = await startCluster('startup');
  const sink = await startSink();
  const env: NodeJS.ProcessEnv = {
    ...process.env, DATABASE_URL: cluster.url, SMTP_URL: sink.url, SECRET_KEY: 'bench-startup-secret-bench-startup-secret',
    LOG_LEVEL: 'warn', SMTP_SUBMISSION_PORT: '0', SMTP_INBOUND_PORT: '0', METRICS_PORT: undefined, ENGINE: undefined,
  };
  console.log(machine(cluster.version));
  // Once each, not counted: the build of the sources (scripts/run.cjs), tsx's transform cache, the database's migrations.
  for (const way of Object.keys(WAYS) as Way[]) await start(WAYS[way](ENTRIES[0]!), env);
  const steal = stealSince();
  const results = new Map<string, Start[]>();
  for (let r = 0; r < ROUNDS; r++) {
    for (const entry of ENTRIES) {
      const order = (r % 2 ? Object.keys(WAYS).reverse() : Object.keys(WAYS)) as Way[];
      for (const way of order) {
        const key = `${entry} | ${way}`;
        results.set(key, [...(results.get(key) ?? []), await start(WAYS[way](entry), env)]);
      }
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const of = (entry: string, way: Way, k: keyof Start) => median(results.get(`${entry} | ${way}`)!.map((x) => x[k]));
  console.log(`\n${ROUNDS} starts of each entry each way; medians; steal ${(stealSince(steal.at).share * 100).toFixed(1)} %`);
  console.log('| entry | way | CPU ms to /health | wall ms to /health |');
  console.log('|---|---|---|---|');
  const [compiled, tsx] = Object.keys(WAYS) as Way[];
  for (const entry of ENTRIES) {
    for (const way of [compiled!, tsx!]) console.log(`| ${entry} | ${way} | ${of(entry, way, 'cpuMs').toFixed(0)} | ${of(entry, way, 'wallMs').toFixed(0)} |`);
    console.log(`| ${entry} | compiled ÷ tsx | ${(of(entry, compiled!, 'cpuMs') / of(entry, tsx!, 'cpuMs')).toFixed(2)} | ${(of(entry, compiled!, 'wallMs') / of(entry, tsx!, 'wallMs')).toFixed(2)} |`);
  }
  await sink.close();
  await cluster.stop();
});
