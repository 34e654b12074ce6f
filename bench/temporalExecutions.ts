/**
 * Automation executions on Temporal beside a floor on the same dev server, and a campaign's start-to-first-send on
 * both engines beside a floor, in one run (issue 33, point 4):
 *
 *   npx tsx bench/temporalExecutions.ts      (npm run bench:temporal-executions)
 *
 * Starts its own embedded PostgreSQL, a loopback SMTP sink and a Temporal dev server (the pinned CLI, in memory,
 * headless), all on this machine's cores.
 *
 * 1. Executions. The typical automation is the API's own example shape: SEND_EMAIL → DELAY → CONDITION (data.plan is
 *    pro: yes) → SEND_EMAIL. On Temporal that is six activities (startExecution, runStep, beginWait, checkWait, runStep,
 *    runStep) and one timer. The DELAY is 3 s (the API's shortest is a minute: the bench sets 0.05 minutes in the
 *    stored workflow's row, so that a run measures the engine, not a minute's wait). BENCH_EXECUTIONS contacts
 *    (default 2,000, each with data.plan = pro) get the trigger's event in one transaction (recordEvents, as the API
 *    records them); the worker's execution dispatcher starts them (batches of 200, at most AUTOMATION_MAX_RUNNING
 *    running) and the worker runs them; the two emails of each go to the sink through the worker's delivery queue.
 *    Measured: from the events' commit to the last execution's completed_at, N ÷ that time.
 *    The floor: the same number of executions of a workflow that does nothing with the same shape (bench/lib/
 *    temporalFloor/workflows.ts: six activities that return at once, one timer of the same 3 s, the same activity
 *    options and signal handler), registered only in the bench's own worker (bench/lib/temporal-floor-child.ts),
 *    started exactly as Herald starts an execution: engine/temporal.ts `start` (same workflow type, task queue, id
 *    policies, search attributes), by a loop that mirrors the dispatcher's (batches of 200 concurrent starts, at most
 *    200 running, waiting 200 ms after a short batch), from the first start to the last execution's last activity.
 *    Two floors: **plain**, a worker with the SDK's default options in a Node process without flags (what Temporal
 *    allows here); and **as Herald runs its worker**: Herald's worker options (engine/temporal.ts temporalWorkerTuning)
 *    in a process started as `npm run worker` starts one (--max-old-space-size=160, MALLOC_ARENA_MAX=2).
 *    Each round runs plain floor, Herald-like floor, Herald, one after the other (they poll the same task queue);
 *    BENCH_ROUNDS rounds (default 2). Per part: executions/s, CPU ms per execution of the worker, the Temporal server
 *    and PostgreSQL, the worker's peak RSS, one execution's history length, the machine's steal.
 * 2. Campaign start-to-first-send, on the embedded engine and on Temporal (an API and a worker process each, as
 *    `npm run api` and `npm run worker`): BENCH_CAMPAIGNS campaigns (default 5) to BENCH_AUDIENCE contacts (default
 *    10,000), one after the other, each from before POST /campaigns/:id/send to the first message at the sink (and the
 *    campaign then sent whole before the next). The floor, beside each: POST /v1/send of one email, from before the
 *    request to its message at the sink, on the same processes: the delivery queue's own latency (a committed QUEUED
 *    row, the worker's claim, SMTP), which every campaign email also goes through, so a campaign's first email can
 *    never arrive sooner. Which goes first alternates.
 *
 * Environment: BENCH_EXECUTIONS, BENCH_ROUNDS, BENCH_CAMPAIGNS, BENCH_AUDIENCE, BENCH_ONLY=executions|campaign,
 * BENCH_PARTS (executions parts to run, default floor,floor-herald,herald), BENCH_LOG_LEVEL (default warn), BENCH_JSON=file.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import { recordEvents } from '../db/queries/events';
import { createTemporalEngine } from '../engine/temporal';
import { createLogger } from '../logging/logger';
import { startDevServer, type DevServer } from '../scripts/temporalDevServer';
import { startCluster } from './lib/cluster';
import { benchProject, EMAIL_HTML, prepareEngineSchema, startHeraldChild } from './lib/herald';
import { cpuMs, machine, runBench, sleep, spawnChild, stealSince, type Child } from './lib/proc';
import { startSink } from './lib/sink';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ensureTemporal } = require('../scripts/temporal.js') as { ensureTemporal(): string };

const N = Number(process.env.BENCH_EXECUTIONS ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CAMPAIGNS = Number(process.env.BENCH_CAMPAIGNS ?? 5);
const AUDIENCE = Number(process.env.BENCH_AUDIENCE ?? 10_000);
const ONLY = process.env.BENCH_ONLY;
const PARTS = (process.env.BENCH_PARTS ?? 'floor,floor-herald,herald').split(',');
const WAIT_MS = 3000;
const BATCH = 200;
const MAX_RUNNING = 200;
const WORKER_ARGS = ['--max-old-space-size=160'];
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'warn';

const hwmMb = (pid: number): number => {
  try {
    return Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
  } catch {
    return NaN;
  }
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

interface ExecRow { round: number; part: string; 'executions/s': number; 'seconds': string; 'worker CPU ms/exec': string; 'Temporal server CPU ms/exec': string; 'PostgreSQL CPU ms/exec': string; 'worker peak RSS MB': number; 'history events': number; 'cached workflows': number | string; 'steal %': string }

runBench('bench:temporal-executions', 60 * 60_000, async () => {
  const cluster = await startCluster('temporal-executions');
  const sink = await startSink();
  let dev: DevServer | undefined;
  const children: Child[] = [];
  const track = (c: Child) => { children.push(c); return c; };
  const stop = async (c: Child) => { await c.stop(); children.splice(children.indexOf(c), 1); };
  const execRows: ExecRow[] = [];
  const campaignRows: Record<string, string | number>[] = [];
  try {
    console.log(`machine: ${machine(cluster.version)}`);
    dev = await startDevServer({ cli: ensureTemporal(), headless: true });
    const address = dev.address;
    console.log(`Temporal: dev server at ${address}, in memory, on this machine`);
    const log = createLogger('warn', 'bench', 2);
    const engine = await createTemporalEngine({ address, namespace: 'default', log });
    const connection = await Connection.connect({ address });
    const client = new Client({ connection, namespace: 'default' });
    const historyLength = async (workflowId: string) => (await client.workflow.getHandle(workflowId).fetchHistory()).events?.length ?? 0;
    const pgCpu = () => cpuMs(cluster.postmasterPid(), true);
    const temporalEnv = { ENGINE: 'temporal', TEMPORAL_ADDRESS: address, SMTP_URL: sink.url, SEND_RATE_PER_SECOND: '100000', LOG_LEVEL };

    if (!ONLY || ONLY === 'executions') {
      const bundleFile = path.join(os.tmpdir(), `herald-bench-floor-${process.pid}.js`);
      const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
      fs.writeFileSync(bundleFile, (await bundleWorkflowCode({ workflowsPath: require.resolve('./lib/temporalFloor/workflows'), logger: quiet })).code);

      // Herald's side: an API process (to create the workflow as a person does) and a project.
      const api = track(startHeraldChild('api (temporal)', cluster, 'api', { ...temporalEnv, PORT: '0', API_RATE_LIMIT_PER_MINUTE: '100000000' }));
      const base = `http://127.0.0.1:${String((await api.ready).port)}`;
      const project = await benchProject(cluster);
      const auth = { authorization: `Bearer ${project.secretKey}`, 'content-type': 'application/json' };
      const post = async (p: string, body: unknown) => {
        const res = await fetch(`${base}${p}`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
        const json = await res.json() as { data: { id: string } };
        if (res.status >= 300) throw new Error(`POST ${p}: ${res.status} ${JSON.stringify(json)}`);
        return json.data;
      };
      const template = await post('/templates', { name: 'Welcome', subject: 'Welcome', body: EMAIL_HTML, from: 'hello@example.com', type: 'TRANSACTIONAL' });
      const event = 'bench.signed-up';
      const workflow = await post('/workflows', {
        name: 'Onboarding (bench)', enabled: true, allowReentry: true, trigger: { type: 'EVENT', event },
        steps: [
          { id: 'welcome', type: 'SEND_EMAIL', config: { template: template.id }, next: 'wait' },
          { id: 'wait', type: 'DELAY', config: { amount: 1, unit: 'minutes' }, next: 'check' },
          { id: 'check', type: 'CONDITION', config: { filter: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] } }, branches: { yes: 'nudge', no: null } },
          { id: 'nudge', type: 'SEND_EMAIL', config: { template: template.id }, next: null },
        ],
      });
      // The wait: 3 s instead of the API's shortest minute (the interpreter reads the stored steps as they are).
      await cluster.knex.raw(`UPDATE automations SET steps = jsonb_set(steps, '{1,config,amount}', to_jsonb(?::float8)) WHERE id = ?`, [WAIT_MS / 60_000, workflow.id]);

      const floor = async (round: number, part: string, heraldLike: boolean) => {
        const child = track(spawnChild(`floor worker (${part})`, 'bench/lib/temporal-floor-child.ts',
          { TEMPORAL_ADDRESS: address, BENCH_FLOOR_BUNDLE: bundleFile, ...(heraldLike ? { MALLOC_ARENA_MAX: '2' } : { BENCH_FLOOR_DEFAULTS: '1' }) },
          heraldLike ? WORKER_ARGS : []));
        const ready = await child.ready;
        let done = 0;
        let waiting = 0;
        child.process.on('message', (m: { type?: string; n?: number; waiting?: number }) => {
          if (m.type === 'done') { done += m.n ?? 0; waiting = m.waiting ?? waiting; }
        });
        const cpu0 = { w: cpuMs(child.pid), t: cpuMs(dev!.pid, true), pg: pgCpu() };
        const steal0 = stealSince();
        const t0 = performance.now();
        let started = 0;
        let refused = 0;
        const ids = Array.from({ length: N }, () => `execution-${crypto.randomUUID()}`);
        const pending = [...ids];
        while (done < N) {
          // The dispatcher's admission on Temporal: executions running (not waiting, not done) below the limit. A start
          // the server does not accept in time is tried again by the next pass, as the dispatcher leaves its row.
          const room = Math.min(BATCH, MAX_RUNNING - (started - done - waiting), pending.length);
          const batch = room > 0 ? pending.splice(0, room) : [];
          const failed: string[] = [];
          await Promise.all(batch.map(async (id) => {
            try {
              await engine.start('runAutomation', { projectId: project.id, executionId: id.slice('execution-'.length), waitMs: WAIT_MS } as never, { id, tags: { automationId: workflow.id } });
            } catch {
              failed.push(id);
            }
          }));
          pending.unshift(...failed);
          refused += failed.length;
          started += batch.length - failed.length;
          if (batch.length - failed.length < BATCH) await sleep(200);
          if (performance.now() - t0 > 900_000) throw new Error(`floor: ${done} of ${N} done after 15 minutes`);
        }
        if (refused) console.log(`  (${part}: ${refused} starts not accepted within the engine's deadline, tried again)`);
        const s = (performance.now() - t0) / 1000;
        const cpu = { w: cpuMs(child.pid) - cpu0.w, t: cpuMs(dev!.pid, true) - cpu0.t, pg: pgCpu() - cpu0.pg };
        const row: ExecRow = {
          round, part, 'executions/s': Number((N / s).toPrecision(3)), seconds: s.toFixed(1), 'worker CPU ms/exec': (cpu.w / N).toFixed(2),
          'Temporal server CPU ms/exec': (cpu.t / N).toFixed(2), 'PostgreSQL CPU ms/exec': (cpu.pg / N).toFixed(2),
          'worker peak RSS MB': Math.round(hwmMb(child.pid)), 'history events': await historyLength(ids[0]!),
          'cached workflows': ready.cachedWorkflows as number, 'steal %': (stealSince(steal0.at).share * 100).toFixed(1),
        };
        await stop(child);
        return row;
      };

      const herald = async (round: number) => {
        const tag = `r${round}`;
        const contacts: { id: string }[] = (await cluster.knex.raw(`INSERT INTO contacts (project_id, email, subscribed, data)
          SELECT ?::uuid, 'auto-' || ? || '-' || g || '@example.org', true, '{"plan":"pro","firstName":"Ada"}'::jsonb FROM generate_series(1, ?::int) g RETURNING id`, [project.id, tag, N])).rows;
        await cluster.knex.raw('ANALYZE contacts');
        const worker = track(startHeraldChild(`worker (temporal, ${tag})`, cluster, 'worker', { ...temporalEnv, EXECUTOR_ID: `bench-exec-${tag}`, MALLOC_ARENA_MAX: '2' }, WORKER_ARGS));
        await worker.ready;
        sink.reset();
        const cpu0 = { w: cpuMs(worker.pid), t: cpuMs(dev!.pid, true), pg: pgCpu() };
        const steal0 = stealSince();
        const t0 = Date.now();
        await cluster.knex.transaction(async (trx) => {
          for (let i = 0; i < contacts.length; i += 2000) await recordEvents(trx, project.id, contacts.slice(i, i + 2000).map((c) => ({ name: event, contactId: c.id })));
        });
        let endMs: number;
        for (;;) {
          const r = (await cluster.knex.raw(`SELECT count(*) FILTER (WHERE status = 'COMPLETED')::int AS completed, count(*) FILTER (WHERE status IN ('FAILED', 'CANCELLED'))::int AS bad,
              (extract(epoch FROM max(completed_at)) * 1000)::float8 AS last FROM automation_executions WHERE automation_id = ? AND contact_id = ANY(?::uuid[])`,
          [workflow.id, contacts.map((c) => c.id)])).rows[0] as { completed: number; bad: number; last: number };
          if (r.bad > 0) throw new Error(`herald: ${r.bad} executions failed or were cancelled`);
          if (r.completed >= N) { endMs = r.last; break; }
          if (Date.now() - t0 > 900_000) throw new Error(`herald: ${r.completed} of ${N} completed after 15 minutes`);
          await sleep(200);
        }
        const s = (endMs - t0) / 1000;
        const cpu = { w: cpuMs(worker.pid) - cpu0.w, t: cpuMs(dev!.pid, true) - cpu0.t, pg: pgCpu() - cpu0.pg };
        const one = (await cluster.knex('automation_executions').where({ automation_id: workflow.id, contact_id: contacts[0]!.id }).first('id')) as { id: string };
        const row: ExecRow = {
          round, part: 'herald', 'executions/s': Number((N / s).toPrecision(3)), seconds: s.toFixed(1), 'worker CPU ms/exec': (cpu.w / N).toFixed(2),
          'Temporal server CPU ms/exec': (cpu.t / N).toFixed(2), 'PostgreSQL CPU ms/exec': (cpu.pg / N).toFixed(2),
          'worker peak RSS MB': Math.round(hwmMb(worker.pid)), 'history events': await historyLength(`execution-${one.id}`),
          'cached workflows': '(see its log)', 'steal %': (stealSince(steal0.at).share * 100).toFixed(1),
        };
        // Its 2 × N emails delivered before the worker stops (the CPU above includes the part of them sent meanwhile).
        await sink.waitFor(2 * N, 600_000);
        await stop(worker);
        return row;
      };

      for (let round = 1; round <= ROUNDS; round++) {
        for (const part of PARTS) {
          const row = part === 'herald' ? await herald(round) : await floor(round, part, part === 'floor-herald');
          execRows.push(row);
          console.log(`round ${round}, ${part}: ${row['executions/s']} executions/s (${row.seconds} s), worker ${row['worker CPU ms/exec']} ms/exec, server ${row['Temporal server CPU ms/exec']} ms/exec, PostgreSQL ${row['PostgreSQL CPU ms/exec']} ms/exec, RSS ${row['worker peak RSS MB']} MB, history ${row['history events']}, steal ${row['steal %']} %, load ${os.loadavg()[0]!.toFixed(1)}`);
        }
      }
      await stop(api);
      fs.rmSync(bundleFile, { force: true });
    }

    if (!ONLY || ONLY === 'campaign') {
      await prepareEngineSchema(cluster, sink.url);
      for (const eng of ['embedded', 'temporal'] as const) {
        const env = eng === 'temporal' ? temporalEnv : { ENGINE: 'embedded', SMTP_URL: sink.url, SEND_RATE_PER_SECOND: '100000', LOG_LEVEL };
        const api = track(startHeraldChild(`api (${eng})`, cluster, 'api', { ...env, PORT: '0', API_RATE_LIMIT_PER_MINUTE: '100000000' }));
        const worker = track(startHeraldChild(`worker (${eng})`, cluster, 'worker', { ...env, EXECUTOR_ID: `bench-campaign-${eng}`, MALLOC_ARENA_MAX: '2' }, WORKER_ARGS));
        const base = `http://127.0.0.1:${String((await api.ready).port)}`;
        await worker.ready;
        const project = await benchProject(cluster);
        const auth = { authorization: `Bearer ${project.secretKey}`, 'content-type': 'application/json' };
        await cluster.knex.raw(`INSERT INTO contacts (project_id, email, subscribed, data)
          SELECT ?::uuid, 'c' || g || '-${eng}@example.org', true, '{}'::jsonb FROM generate_series(1, ?::int) g`, [project.id, AUDIENCE]);
        await cluster.knex.raw('ANALYZE');
        const firstAtSink = async (request: () => Promise<Response>) => {
          sink.reset();
          const t0 = performance.timeOrigin + performance.now();
          const res = await request();
          const answered = performance.timeOrigin + performance.now() - t0;
          if (res.status >= 300) throw new Error(`${res.status} ${await res.text()}`);
          await res.arrayBuffer();
          await sink.waitFor(1, 120_000);
          return { first: sink.times[0]! - t0, answered, t0 };
        };
        // Where a campaign's first send went, from the database's own times (same clock): the engine accepted the start
        // (dispatched_at), the workflow's first activity made it SENDING (started_at), its first batch queued (the first
        // email's created_at: its transaction's start), then the delivery queue's claim and SMTP (the rest).
        const stagesOf = async (id: string, t0: number, first: number) => {
          const { rows: [r] } = await cluster.knex.raw(`SELECT extract(epoch FROM c.dispatched_at) * 1000 AS dispatched, extract(epoch FROM c.started_at) * 1000 AS started,
            (SELECT extract(epoch FROM min(e.created_at)) * 1000 FROM emails e WHERE e.project_id = c.project_id AND e.campaign_id = c.id) AS queued
            FROM campaigns c WHERE c.id = ?`, [id]);
          const at = (v: unknown) => Math.round(Number(v) - t0);
          return { dispatched: at(r.dispatched), started: at(r.started), queued: at(r.queued), first: Math.round(first) };
        };
        const stages: Awaited<ReturnType<typeof stagesOf>>[] = [];
        const steal0 = stealSince();
        const floorMs: number[] = [];
        const campaignMs: number[] = [];
        const answeredMs: number[] = [];
        for (let k = 0; k < CAMPAIGNS; k++) {
          const res = await fetch(`${base}/campaigns`, { method: 'POST', headers: auth, body: JSON.stringify({ name: `Bench ${eng} ${k}`, subject: 'News', body: EMAIL_HTML, from: 'news@example.com', audienceType: 'ALL' }) });
          const created = await res.json() as { data?: { id: string } };
          if (res.status !== 201 || !created.data) throw new Error(`POST /campaigns (${eng}): ${res.status} ${JSON.stringify(created).slice(0, 500)}`);
          const id = created.data.id;
          const sendOne = () => firstAtSink(() => fetch(`${base}/v1/send`, { method: 'POST', headers: auth, body: JSON.stringify({ to: `floor-${eng}-${k}@example.org`, from: 'orders@example.com', subject: 'Your order', body: EMAIL_HTML }) }));
          if (k % 2 === 1) floorMs.push((await sendOne()).first);
          const c = await firstAtSink(() => fetch(`${base}/campaigns/${id}/send`, { method: 'POST', headers: auth, body: '{}' }));
          campaignMs.push(c.first);
          answeredMs.push(c.answered);
          stages.push(await stagesOf(id, c.t0, c.first));
          // The whole campaign out before the next measure.
          await sink.waitFor(AUDIENCE, 600_000);
          for (const t0 = Date.now(); ;) {
            const { status } = (await cluster.knex('campaigns').where('id', id).first('status'))!;
            if (status === 'SENT') break;
            if (Date.now() - t0 > 600_000) throw new Error(`campaign ${status} 10 minutes after its last email`);
            await sleep(200);
          }
          if (k % 2 === 0) floorMs.push((await sendOne()).first);
          const st = stages[stages.length - 1]!;
          console.log(`${eng}, campaign ${k + 1}: first message at the sink after ${c.first.toFixed(0)} ms (the send answered in ${c.answered.toFixed(0)} ms; engine start accepted at ${st.dispatched} ms, SENDING at ${st.started}, first batch at ${st.queued}); POST /v1/send's message after ${floorMs[floorMs.length - 1]!.toFixed(0)} ms`);
        }
        campaignRows.push({
          engine: eng, campaigns: CAMPAIGNS, audience: AUDIENCE,
          'first send, median ms': Math.round(median(campaignMs)), 'first send, each ms': campaignMs.map((x) => Math.round(x)).join(', '),
          'POST /campaigns/:id/send answered, median ms': Math.round(median(answeredMs)),
          'start accepted / SENDING / first batch, median ms': (['dispatched', 'started', 'queued'] as const).map((k) => Math.round(median(stages.map((x) => x[k])))).join(' / '),
          'floor: POST /v1/send to the sink, median ms': Math.round(median(floorMs)), 'floor, each ms': floorMs.map((x) => Math.round(x)).join(', '),
          'ratio (medians)': (median(campaignMs) / median(floorMs)).toFixed(2), 'steal %': (stealSince(steal0.at).share * 100).toFixed(1),
        });
        await stop(worker);
        await stop(api);
      }
    }
    await connection.close();
    await engine.close();

    const table = (title: string, list: Record<string, unknown>[]) => {
      if (!list.length) return;
      const cols = [...new Set(list.flatMap((r) => Object.keys(r)))];
      console.log(`\n${title}\n| ${cols.join(' | ')} |\n|${cols.map(() => '---').join('|')}|`);
      for (const r of list) console.log(`| ${cols.map((c) => String(r[c] ?? '—')).join(' | ')} |`);
    };
    table(`Executions: ${N} per part, the typical automation's shape (6 activities, 1 timer of ${WAIT_MS} ms)`, execRows as unknown as Record<string, unknown>[]);
    const rate = (part: string) => execRows.filter((r) => r.part === part).map((r) => r['executions/s']);
    if (rate('herald').length && rate('floor').length) {
      console.log(`\nHerald ÷ plain floor, round by round: ${rate('herald').map((h, i) => (h / rate('floor')[i]!).toFixed(2)).join(', ')} (target ≥ 0.5)`);
    }
    table('Campaign start-to-first-send', campaignRows);
    if (process.env.BENCH_JSON) fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify({ machine: machine(cluster.version), execRows, campaignRows }, null, 2));
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await dev?.stop();
    await sink.close();
    await cluster.stop();
  }
});
