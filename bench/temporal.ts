/**
 * The cluster engine (Temporal) beside the embedded one (DBOS), in one run, on one machine:
 *
 *   npx tsx bench/temporal.ts      (npm run bench:temporal)
 *
 * Starts its own embedded PostgreSQL, a loopback SMTP sink and a Temporal dev server (the pinned CLI of
 * scripts/temporal.js, in memory, headless), and for each engine, with Herald's own processes (bench/lib/herald-child.ts
 * runs startHerald as bin/api.ts and bin/worker.ts do; workers with --max-old-space-size=160 and MALLOC_ARENA_MAX=2 as
 * `npm run worker` starts them):
 * 1. POST /v1/send: req/s and latency against an API process (autocannon, 32 connections);
 * 2. delivery with the rate lifted: emails/s at the sink with 1 and with 2 worker processes;
 * 3. a campaign to BENCH_CAMPAIGN contacts (default 100,000) through the API with 2 workers: time until every email row
 *    is stored, until every message is at the sink, worker peak RSS, exactly-once at the sink; on Temporal, the runs of
 *    the campaign's workflow and their history events;
 * 4. automations: BENCH_EXECUTIONS tracked events (default 2,000) each start an execution of a one-step workflow;
 *    executions completed per second.
 * Each engine gets a project of its own. Environment: BENCH_EMAILS (default 5000), BENCH_CAMPAIGN, BENCH_EXECUTIONS,
 * BENCH_SECONDS (autocannon, default 10), BENCH_ONLY=send|delivery|campaign|automations, BENCH_ENGINES=embedded,temporal.
 */
import fs from 'node:fs';
import autocannon from 'autocannon';
import { Client, Connection } from '@temporalio/client';
import { startDevServer, type DevServer } from '../scripts/temporalDevServer';
import { startCluster } from './lib/cluster';
import { benchProject, EMAIL_HTML, prepareEngineSchema, queueEmails, startHeraldChild } from './lib/herald';
import { machine, runBench, sleep, type Child } from './lib/proc';
import { startSink } from './lib/sink';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ensureTemporal } = require('../scripts/temporal.js') as { ensureTemporal(): string };

const N = Number(process.env.BENCH_EMAILS ?? 5000);
const CAMPAIGN = Number(process.env.BENCH_CAMPAIGN ?? 100_000);
const EXECUTIONS = Number(process.env.BENCH_EXECUTIONS ?? 2000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ONLY = process.env.BENCH_ONLY;
const ENGINES = (process.env.BENCH_ENGINES ?? 'embedded,temporal').split(',') as ('embedded' | 'temporal')[];
const WORKER_ARGS = (process.env.BENCH_WORKER_ARGS ?? '--max-old-space-size=160').split(' ').filter(Boolean);
const part = (name: string) => !ONLY || ONLY === name;

interface Row { engine: string; [k: string]: string | number }
const rows: Record<string, Row[]> = { send: [], delivery: [], campaign: [], automations: [] };

const hwmMb = (pid: number): number => {
  try {
    return Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
  } catch {
    return NaN;
  }
};
const perSecond = (times: number[]) => (times.length - 1) / ((times[times.length - 1]! - times[0]!) / 1000);

runBench('bench:temporal', 40 * 60_000, async () => {
  const cluster = await startCluster('temporal');
  const sink = await startSink();
  let dev: DevServer | undefined;
  const children: Child[] = [];
  const start = (name: string, roles: 'api' | 'worker', env: Record<string, string>, args: string[] = []) => {
    const c = startHeraldChild(name, cluster, roles, env, args);
    children.push(c);
    return c;
  };
  try {
    console.log(`machine: ${machine(cluster.version)}`);
    dev = await startDevServer({ cli: ensureTemporal(), headless: true });
    console.log(`Temporal: dev server at ${dev.address} (CLI 1.5.1, server 1.29.1), in memory, on this machine\n`);
    await prepareEngineSchema(cluster, sink.url);
    const connection = await Connection.connect({ address: dev.address });
    const client = new Client({ connection, namespace: 'default' });

    for (const engine of ENGINES) {
      const env = { ...(engine === 'temporal' ? { ENGINE: 'temporal', TEMPORAL_ADDRESS: dev.address } : { ENGINE: 'embedded' }), SMTP_URL: sink.url, SEND_RATE_PER_SECOND: '100000', LOG_LEVEL: 'warn' };
      const project = await benchProject(cluster);
      const auth = { authorization: `Bearer ${project.secretKey}`, 'content-type': 'application/json' };
      const api = start(`api (${engine})`, 'api', { ...env, PORT: '0', API_RATE_LIMIT_PER_MINUTE: '100000000' });
      const base = `http://127.0.0.1:${String((await api.ready).port)}`;
      const workers = async (n: number) => {
        const ws = Array.from({ length: n }, (_, i) => start(`worker ${i + 1} (${engine})`, 'worker', { ...env, EXECUTOR_ID: `bench-${engine}-${i + 1}`, MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2' }, WORKER_ARGS));
        await Promise.all(ws.map((w) => w.ready));
        return ws;
      };

      if (part('send')) {
        let i = 0;
        const body = () => JSON.stringify({ to: `send-${engine}-${i++}@example.org`, from: 'orders@example.com', subject: 'Your order', body: EMAIL_HTML });
        const run = (duration: number) => autocannon({ url: `${base}/v1/send`, method: 'POST', connections: 32, duration, headers: auth, requests: [{ setupRequest: (r) => ({ ...r, body: body() }) }] });
        await run(3);
        const r = await run(SECONDS);
        rows.send!.push({ engine, 'req/s': Math.round(r.requests.average), 'p50 ms': r.latency.p50, 'p99 ms': r.latency.p99, '2xx': r['2xx'], 'non-2xx': r.non2xx });
        await cluster.knex('emails').where('project_id', project.id).delete(); // no worker ran: they stay out of the next parts
      }

      if (part('delivery')) {
        for (const n of [1, 2]) {
          await queueEmails(cluster, project.id, N, `delivery-${engine}-${n}`);
          sink.reset();
          const ws = await workers(n);
          await sink.waitFor(N, 600_000);
          rows.delivery!.push({ engine, workers: n, emails: N, 'emails/s': Math.round(perSecond(sink.times)) });
          await Promise.all(ws.map((w) => w.stop()));
        }
      }

      if (part('campaign')) {
        await cluster.knex.raw(`INSERT INTO contacts (project_id, email, subscribed, data)
          SELECT ?::uuid, 'c' || g || '-${engine}@example.org', true, '{}'::jsonb FROM generate_series(1, ?::int) g`, [project.id, CAMPAIGN]);
        await cluster.knex.raw('ANALYZE');
        const ws = await workers(2);
        const created = await fetch(`${base}/campaigns`, { method: 'POST', headers: auth, body: JSON.stringify({ name: `Bench ${engine}`, subject: 'News', body: EMAIL_HTML, from: 'news@example.com', audienceType: 'ALL' }) }).then((r) => r.json()) as { data: { id: string } };
        const id = created.data.id;
        sink.reset();
        const t0 = Date.now();
        await fetch(`${base}/campaigns/${id}/send`, { method: 'POST', headers: auth, body: '{}' });
        let stored = 0;
        let peak = 0;
        for (;;) {
          peak = Math.max(peak, ...ws.map((w) => hwmMb(w.pid)));
          const { n } = (await cluster.knex('emails').where('campaign_id', id).count('* as n').first()) as { n: number };
          if (Number(n) >= CAMPAIGN && !stored) stored = Date.now() - t0;
          const status = (await cluster.knex('campaigns').where('id', id).first('status'))!.status as string;
          if (status === 'SENT' && sink.times.length >= CAMPAIGN) break;
          if (Date.now() - t0 > 1_200_000) throw new Error(`campaign ${status} after 20 minutes: ${sink.times.length} delivered`);
          await sleep(250);
        }
        const sentMs = sink.times[sink.times.length - 1]! - t0;
        const distinct = new Set(sink.recipients).size;
        const row: Row = { engine, contacts: CAMPAIGN, 'rows stored s': (stored / 1000).toFixed(1), 'all delivered s': (sentMs / 1000).toFixed(1), 'emails/s': Math.round(CAMPAIGN / (sentMs / 1000)), 'worker peak RSS MB': Math.round(peak), 'at the sink': `${sink.times.length} (${distinct} distinct)` };
        if (engine === 'temporal') {
          let runs = 0;
          let max = 0;
          let total = 0;
          for await (const w of client.workflow.list({ query: `WorkflowId="campaign-${id}"` })) {
            const events = (await client.workflow.getHandle(w.workflowId, w.runId).fetchHistory()).events?.length ?? 0;
            runs++;
            total += events;
            max = Math.max(max, events);
          }
          Object.assign(row, { 'workflow runs': runs, 'history events (max run)': max, 'history events (all runs)': total });
        }
        rows.campaign!.push(row);
        await Promise.all(ws.map((w) => w.stop()));
      }

      if (part('automations')) {
        const event = `bench_${engine}`;
        const wf = await fetch(`${base}/workflows`, { method: 'POST', headers: auth, body: JSON.stringify({ name: event, enabled: true, trigger: { type: 'EVENT', event }, steps: [{ id: 'tag', type: 'UPDATE_CONTACT', config: { data: { benched: true } } }] }) }).then((r) => r.json()) as { data: { id: string } };
        const ws = await workers(1);
        let i = 0;
        const t0 = Date.now();
        await autocannon({ url: `${base}/v1/track`, method: 'POST', connections: 16, amount: EXECUTIONS, headers: auth, requests: [{ setupRequest: (r) => ({ ...r, body: JSON.stringify({ email: `auto-${engine}-${i++}@example.org`, event }) }) }] });
        for (;;) {
          const { n } = (await cluster.knex('automation_executions').where({ automation_id: wf.data.id, status: 'COMPLETED' }).count('* as n').first()) as { n: number };
          if (Number(n) >= EXECUTIONS) break;
          if (Date.now() - t0 > 600_000) throw new Error(`${n} of ${EXECUTIONS} executions completed after 10 minutes`);
          await sleep(100);
        }
        const s = (Date.now() - t0) / 1000;
        const row: Row = { engine, executions: EXECUTIONS, 'all completed s': s.toFixed(1), 'executions/s': Math.round(EXECUTIONS / s), 'worker peak RSS MB': Math.round(hwmMb(ws[0]!.pid)) };
        if (engine === 'temporal') {
          // History events per execution (the persistence writes docs/scaling.md counts), from the first 50 listed.
          const counts: number[] = [];
          for await (const w of client.workflow.list({ query: 'WorkflowType="runAutomation"' })) {
            counts.push((await client.workflow.getHandle(w.workflowId, w.runId).fetchHistory()).events?.length ?? 0);
            if (counts.length >= 50) break;
          }
          if (counts.length) Object.assign(row, { 'history events per execution (mean, max)': `${(counts.reduce((a, b) => a + b, 0) / counts.length).toFixed(1)}, ${Math.max(...counts)}` });
        }
        rows.automations!.push(row);
        await Promise.all(ws.map((w) => w.stop()));
      }
      await api.stop();
    }
    await connection.close();

    for (const [name, list] of Object.entries(rows)) {
      if (!list.length) continue;
      const cols = [...new Set(list.flatMap((r) => Object.keys(r)))];
      console.log(`\n${name}\n| ${cols.join(' | ')} |\n|${cols.map(() => '---').join('|')}|`);
      for (const r of list) console.log(`| ${cols.map((c) => r[c] ?? '—').join(' | ')} |`);
    }
    const t = (list: Row[], pred: (r: Row) => boolean) => list.filter((r) => r.engine === 'temporal').every(pred);
    const targets = [
      rows.delivery!.length ? `delivery on Temporal ≥ 500 emails/s: ${t(rows.delivery!, (r) => Number(r['emails/s']) >= 500) ? 'met' : 'MISSED'}` : '',
      rows.campaign!.length ? `worker RSS ≤ 300 MB through the campaign: ${rows.campaign!.every((r) => Number(r['worker peak RSS MB']) <= 300) ? 'met' : 'MISSED'}` : '',
      rows.campaign!.length ? `no workflow history run over 10,000 events: ${t(rows.campaign!, (r) => Number(r['history events (max run)'] ?? 0) <= 10_000) ? 'met' : 'MISSED'}` : '',
      rows.campaign!.length ? `exactly once at the sink: ${rows.campaign!.every((r) => r['at the sink'] === `${CAMPAIGN} (${CAMPAIGN} distinct)`) ? 'met' : 'MISSED'}` : '',
    ].filter(Boolean);
    console.log(`\ntargets: ${targets.join('; ')}`);
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await dev?.stop();
    await sink.close();
    await cluster.stop();
  }
});

