/**
 * `npm run bench:transport`: what a round trip to the embedded PostgreSQL costs through its Unix socket (how Herald
 * connects since db/embedded.ts gave the cluster one) against loopback TCP (how it connected before), side by side in
 * one run: the same statements on the same cluster, rounds alternating between the two so that the machine's drift
 * falls on both. Per 1,000 statements: the client's CPU, the backend's CPU and the wall time, and their ratios.
 *
 * BENCH_STATEMENTS (default 20,000 a round), BENCH_ROUNDS (default 6 of each).
 */
import pg from 'pg';
import { startCluster } from './lib/cluster';
import { cpuMs, machine, runBench, stealSince } from './lib/proc';

const STATEMENTS = Number(process.env.BENCH_STATEMENTS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);

interface Round { clientMs: number; backendMs: number; wallMs: number }

async function round(config: pg.ClientConfig): Promise<Round> {
  const client = new pg.Client(config);
  await client.connect();
  try {
    const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    for (let i = 0; i < 200; i++) await client.query({ text: 'SELECT $1::int AS x', values: [i] }); // warm
    const backend0 = cpuMs(pid);
    const cpu0 = process.cpuUsage();
    const wall0 = performance.now();
    // A statement with a parameter, as Herald sends them (parse, bind, execute, sync in one write).
    for (let i = 0; i < STATEMENTS; i++) await client.query({ text: 'SELECT $1::int AS x', values: [i] });
    const cpu = process.cpuUsage(cpu0);
    return { clientMs: (cpu.user + cpu.system) / 1000, backendMs: cpuMs(pid) - backend0, wallMs: performance.now() - wall0 };
  } finally {
    await client.end();
  }
}

runBench('bench:transport', 10 * 60_000, async () => {
  const cluster = await startCluster('transport');
  const url = new URL(cluster.url);
  const socketDir = url.searchParams.get('host');
  if (!socketDir) throw new Error('the embedded cluster has no Unix socket here (its data directory path is too long?)');
  const common = { port: Number(url.port), user: decodeURIComponent(url.username), password: decodeURIComponent(url.password), database: url.pathname.slice(1) };
  const ways = { 'Unix socket': { ...common, host: socketDir }, 'TCP 127.0.0.1': { ...common, host: '127.0.0.1' } } as const;
  console.log(machine(cluster.version));
  const steal = stealSince();
  const results: Record<string, Round[]> = { 'Unix socket': [], 'TCP 127.0.0.1': [] };
  for (let r = 0; r < ROUNDS; r++) {
    // Alternating which goes first, so neither always follows the other's garbage.
    const order = r % 2 ? (['TCP 127.0.0.1', 'Unix socket'] as const) : (['Unix socket', 'TCP 127.0.0.1'] as const);
    for (const way of order) results[way]!.push(await round(ways[way]));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const per1000 = (way: string, k: keyof Round) => median(results[way]!.map((x) => x[k])) * (1000 / STATEMENTS);
  console.log(`\n${ROUNDS} rounds of ${STATEMENTS.toLocaleString('en')} statements each way; medians per 1,000 statements; steal ${(stealSince(steal.at).share * 100).toFixed(1)} %`);
  console.log('| way | client CPU ms | backend CPU ms | wall ms |');
  console.log('|---|---|---|---|');
  for (const way of Object.keys(results)) console.log(`| ${way} | ${per1000(way, 'clientMs').toFixed(1)} | ${per1000(way, 'backendMs').toFixed(1)} | ${per1000(way, 'wallMs').toFixed(1)} |`);
  const ratio = (k: keyof Round) => (per1000('Unix socket', k) / per1000('TCP 127.0.0.1', k)).toFixed(2);
  console.log(`| socket ÷ TCP | ${ratio('clientMs')} | ${ratio('backendMs')} | ${ratio('wallMs')} |`);
  await cluster.stop();
});
