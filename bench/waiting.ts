/**
 * Automation executions waiting in a long delay: does one worker, as `npm run worker` runs it (160 MB heap cap), hold
 * them, and what do they cost while idle?
 *
 *   npx tsx bench/waiting.ts      (npm run bench:waiting)
 *
 * Own embedded PostgreSQL, one worker child process; BENCH_EXECUTIONS (default 20000) events recorded at once for a
 * workflow whose one step is a 1-day DELAY. Reports when all are WAITING and the worker's RSS, then the worker's CPU
 * and RSS over 120 s idle. On the embedded engine a long wait is parked (workflows/runAutomation.ts PARK_AFTER_MS):
 * the engine run ends and the row holds the wait, so the count is bounded by the database, not the worker's heap.
 * NODE_ARGS overrides the worker's node options.
 */
import fs from 'node:fs';
import { recordEvents } from '../db/queries/events';
import { startCluster } from './lib/cluster';
import { benchProject, prepareEngineSchema, startHeraldChild } from './lib/herald';
import { cpuMs, runBench, sleep } from './lib/proc';
import { startSink } from './lib/sink';

const N = Number(process.env.BENCH_EXECUTIONS ?? 20000);
const rss = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
runBench('bench:waiting', 20 * 60_000, async () => {
  const cluster = await startCluster('waiting');
  const sink = await startSink();
  try {
    const { knex } = cluster;
    const project = await benchProject();
    await prepareEngineSchema(cluster, sink.url);
    await knex('automations').insert({ project_id: project.id, name: 'wait', enabled: true, trigger_event: 'wait', allow_reentry: true,
      steps: JSON.stringify([{ id: 'wait', type: 'DELAY', config: { amount: 1, unit: 'days' }, next: null }]) });
    const contacts: { id: string }[] = (await knex.raw(`INSERT INTO contacts (project_id, email, subscribed, data)
      SELECT ?::uuid, 'w-' || g || '@example.org', true, '{}'::jsonb FROM generate_series(1, ?::int) g RETURNING id`, [project.id, N])).rows;
    const w = startHeraldChild('worker', cluster, 'worker', { SMTP_URL: sink.url, EXECUTOR_ID: 'scratch-wait' }, (process.env.NODE_ARGS ?? '--max-old-space-size=160').split(' ').filter(Boolean));
    await w.ready;
    const pg = cluster.postmasterPid();
    await knex.transaction(async (trx) => {
      for (let i = 0; i < contacts.length; i += 2000) await recordEvents(trx, project.id, contacts.slice(i, i + 2000).map((c) => ({ name: 'wait', contactId: c.id })));
    });
    const t0 = Date.now();
    for (;;) {
      const waiting = Number((await knex.raw("SELECT count(*) AS n FROM automation_executions WHERE status = 'WAITING'")).rows[0].n);
      const exited = w.process.exitCode !== null || w.process.signalCode !== null;
      if (waiting >= N || exited || Date.now() - t0 > 400_000) {
        console.log(`+${((Date.now() - t0) / 1000).toFixed(1)} s: ${waiting} of ${N} WAITING; ${exited ? `worker exited (signal ${w.process.signalCode})` : `worker RSS ${rss(w.pid).toFixed(0)} MB`}`);
        if (exited) return;
        break;
      }
      await sleep(1000);
    }
    // Idle with N waiting: CPU over 120 s (the receive poll is 60 s).
    const c0 = { w: cpuMs(w.pid), pg: cpuMs(pg, true) };
    await sleep(120_000);
    console.log(`idle 120 s with ${N} waiting: worker CPU ${((cpuMs(w.pid) - c0.w) / 1200).toFixed(1)} % of one CPU, postgres (live backends) ${((cpuMs(pg, true) - c0.pg) / 1200).toFixed(1)} %; worker RSS ${rss(w.pid).toFixed(0)} MB; ${w.process.exitCode !== null || w.process.signalCode !== null ? 'worker exited' : 'worker alive'}`);
    await w.stop();
  } finally {
    await sink.close();
    await cluster.stop();
  }
});
