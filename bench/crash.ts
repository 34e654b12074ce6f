/**
 * What a crashed worker costs, repeated (issue 12's run):
 *
 *   npx tsx bench/crash.ts      (npm run bench:crash)
 *
 * Starts its own embedded PostgreSQL (fsync on, as `npm start` runs) and a loopback SMTP sink. Each run queues
 * BENCH_EMAILS (default 5,000) emails, starts two Herald worker processes at SEND_RATE_PER_SECOND=BENCH_RATE (default
 * 100000: lifted), SIGKILLs one when 40 % have reached the sink, and then either
 * - restart: starts it again under the same EXECUTOR_ID, or
 * - gone: never brings it back, so the other worker must notice its stale heartbeat and take its claims;
 * and waits until every email is SENT. Prints per run: the killed worker's open claims at the kill, emails lost
 * (never at the sink), duplicates (at the sink more than once), and how long after the kill its claims were all SENT.
 * Environment: BENCH_EMAILS, BENCH_RATE, BENCH_RUNS (per mode, default 3), BENCH_MODES (default restart,gone).
 */
import { MAX_UNRECORDED } from '../worker/deliveryQueue';
import { startCluster } from './lib/cluster';
import { benchProject, prepareEngineSchema, queueEmails, startHeraldChild } from './lib/herald';
import { machine, runBench, sleep, type Child } from './lib/proc';
import { startSink } from './lib/sink';

process.env.BENCH_DURABLE ??= '1';
const N = Number(process.env.BENCH_EMAILS ?? 5000);
const RATE = process.env.BENCH_RATE ?? '100000';
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const MODES = (process.env.BENCH_MODES ?? 'restart,gone').split(',') as ('restart' | 'gone')[];

runBench('bench:crash', 30 * 60_000, async () => {
  const cluster = await startCluster('crash');
  const sink = await startSink();
  const children: Child[] = [];
  const worker = (id: string) => {
    const c = startHeraldChild(`worker ${id}`, cluster, 'worker', { SMTP_URL: sink.url, SEND_RATE_PER_SECOND: RATE, EXECUTOR_ID: id, LOG_LEVEL: 'warn' });
    children.push(c);
    return c;
  };
  const rows: string[] = [];
  try {
    console.log(`machine: ${machine(cluster.version)}`);
    console.log(`PostgreSQL settings: ${JSON.stringify(cluster.settings)}\n`);
    await prepareEngineSchema(cluster, sink.url);
    const project = await benchProject(cluster);
    for (const mode of MODES) {
      for (let run = 1; run <= RUNS; run++) {
        const tag = `${mode}${run}`;
        const killedId = `${tag}-a`;
        await queueEmails(cluster, project.id, N, tag);
        sink.reset();
        const [victim, survivor] = [worker(killedId), worker(`${tag}-b`)];
        await Promise.all([victim.ready, survivor.ready]);
        await sink.waitFor(Math.ceil(N * 0.4), 300_000);
        victim.process.kill('SIGKILL');
        const killedAt = Date.now();
        await new Promise((r) => (victim.process.exitCode !== null || victim.process.signalCode !== null ? r(undefined) : victim.process.once('exit', r)));
        const claims: string[] = await cluster.knex('emails').where({ project_id: project.id, status: 'SENDING', claimed_by: killedId }).pluck('id');
        const restarted = mode === 'restart' ? worker(killedId) : undefined;
        let claimsSentMs = NaN;
        for (;;) {
          if (Number.isNaN(claimsSentMs)) {
            const { n } = (await cluster.knex('emails').whereIn('id', claims).where('status', 'SENT').count('* as n').first()) as { n: number };
            if (Number(n) === claims.length) claimsSentMs = Date.now() - killedAt;
          }
          const { n } = (await cluster.knex('emails').where({ project_id: project.id, status: 'SENT' }).where('to_email', 'like', `${tag}-%`).count('* as n').first()) as { n: number };
          if (Number(n) === N && !Number.isNaN(claimsSentMs)) break;
          if (Date.now() - killedAt > 300_000) throw new Error(`${tag}: ${n} of ${N} SENT 5 minutes after the kill`);
          await sleep(100);
        }
        await sleep(500); // the last messages' acceptance at the sink
        const mine = sink.recipients.filter((r) => r.startsWith(`${tag}-`));
        const distinct = new Set(mine).size;
        const row = `| ${mode} | ${run} | ${claims.length} | ${N - distinct} | ${mine.length - distinct} | ${(claimsSentMs / 1000).toFixed(1)} s |`;
        rows.push(row);
        console.log(row);
        await Promise.all([survivor.stop(), restarted?.stop()]);
      }
    }
    console.log(`\ntwo workers, ${N} emails at ${RATE}/s, one SIGKILLed at 40 %; duplicates bound: ${MAX_UNRECORDED} (MAX_UNRECORDED)`);
    console.log('\n| killed worker | run | its claims open at the kill | lost | duplicates | its claims all SENT after the kill |\n|---|---|---|---|---|---|');
    for (const r of rows) console.log(r);
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await sink.close();
    await cluster.stop();
  }
});
