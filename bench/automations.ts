/**
 * Automation workflows: the latency a listening workflow adds to POST /v1/track, and executions started per second
 * from tracked events, in one run.
 *
 *   npx tsx bench/automations.ts          (npm run bench:automations)
 *
 * Starts its own embedded PostgreSQL in a temporary directory, the Herald API as `npm run api` runs it, and, when a
 * part needs them, BENCH_WORKERS worker processes as `npm run worker` runs them (startHerald, embedded engine: the
 * execution dispatcher turns the outbox rows that recordEvents writes into `runAutomation` workflows on the DBOS
 * queue `herald-automations`). The project starts with BENCH_CONTACTS contacts, statistics analysed.
 *
 * 1. The extra work of a listening workflow on the event write:
 *    - the statement alone: recordEvents for one event per transaction, one call at a time on one connection, without
 *      and with a listener (no HTTP, no concurrency, no lock waits): wall time and PostgreSQL CPU per call;
 *    - POST /v1/track (autocannon in this process, BENCH_CONNECTIONS connections, public key, a distinct new contact
 *      per request; untimed priming, then per run a warm-up and the measure), on one API process: BENCH_ROUNDS pairs
 *      of A then B, then C:
 *      A. nobody listens to the event, no worker running;
 *      B. one enabled workflow listens (allowReentry, one UPDATE_CONTACT step), no worker running: the difference to
 *         A is the API's own extra work (the executions insert in recordEvents' statement); the START rows pile up in
 *         the outbox and are deleted afterwards (no workflow was ever started for them);
 *      C. the same listener with the workers running (the full system, as `npm start`): the workers drain executions
 *         on the same cores while the API is measured. Runs last, so that its backlog needs no draining.
 *    The listener's step is UPDATE_CONTACT rather than DELAY: a DELAY execution stays alive as a waiting DBOS workflow
 *    in the worker (and polls for its messages), so tens of thousands of them would measure the wait, not the start.
 * 2. Executions started per second, with the workers running, a workflow of one UPDATE_CONTACT step (the execution
 *    ends COMPLETED), BENCH_EXECUTIONS events, each for its own contact:
 *    - engine side alone: all events recorded by recordEvents in one transaction (as the API records them, but
 *      without HTTP); the running workers' dispatcher then starts the executions, which run and complete;
 *    - end to end: the same number of POST /v1/track requests (autocannon, BENCH_CONNECTIONS connections), the API
 *      and the workers sharing the cores.
 *    Times come from the database: the enqueue (`dbos.workflow_status.created_at`, the dispatcher emptying the
 *    outbox), the start (`started_at_epoch_ms`, a worker dequeued the workflow), the end (`automation_executions.
 *    completed_at`). Checks: N executions, one per event, all COMPLETED, one DBOS workflow and one step run each, N
 *    contacts updated.
 *
 * Environment: BENCH_EXECUTIONS (default 5000), BENCH_WORKERS (worker processes, default 1), BENCH_DURATION (s,
 * default 15), BENCH_WARMUP (s, default 3), BENCH_CONNECTIONS (default 32), BENCH_CONTACTS (default 50000),
 * BENCH_ROUNDS (A/B pairs, default 2), BENCH_PRIME (s of untimed load before the first measure, default 5),
 * BENCH_MICRO_CALLS (recordEvents calls per A/B block of the statement alone, default 1000),
 * BENCH_ONLY=latency|executions|engine (engine: the engine side of 2 alone), BENCH_WAIT_S (longest wait for all
 * executions of a part, default 300), BENCH_WORKER_NODE_ARGS (node options of the workers, default
 * --max-old-space-size=160 as `npm run worker` sets it; '' for none), BENCH_LOG_LEVEL (Herald's LOG_LEVEL, default
 * info, to /dev/null), BENCH_DURABLE=1 (fsync on), BENCH_PG_STAT=1 (statements per execution on the engine side, and
 * recordEvents' statement per track run), BENCH_JSON=file.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import autocannon from 'autocannon';
import { recordEvents } from '../db/queries/events';
import { startCluster } from './lib/cluster';
import { benchProject, prepareEngineSchema, startHeraldChild } from './lib/herald';
import { cpuMs, machine, machineBusyMs, runBench, sleep, type Child } from './lib/proc';
import { startSink, type Sink } from './lib/sink';

const N = Number(process.env.BENCH_EXECUTIONS ?? 5000);
const WORKERS = Number(process.env.BENCH_WORKERS ?? 1);
const DURATION = Number(process.env.BENCH_DURATION ?? 15);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const EXISTING_CONTACTS = Number(process.env.BENCH_CONTACTS ?? 50_000);
const ONLY = process.env.BENCH_ONLY;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const PRIME = Number(process.env.BENCH_PRIME ?? 5);
const MICRO_CALLS = Number(process.env.BENCH_MICRO_CALLS ?? 1000);
const WAIT_MS = Number(process.env.BENCH_WAIT_S ?? 300) * 1000;
/** As `npm run worker` runs it (package.json); BENCH_WORKER_NODE_ARGS='' for none. */
const WORKER_NODE_ARGS = (process.env.BENCH_WORKER_NODE_ARGS ?? '--max-old-space-size=160').split(' ').filter(Boolean);

const CLK_TCK = (() => {
  try { return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100; } catch { return 100; }
})();

const f = (n: number, d = 0) => (Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d }) : '–');

interface Cpu { api: number; workers: number; postgres: number; loadgen: number; machine: number }

interface Latency {
  name: string;
  kind: 'A' | 'B' | 'C';
  rps: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  ok: number;
  non2xx: number;
  errors: number;
  /** CPU ms per answered request. */
  cpu: Cpu;
  /** Run C: executions the workers completed during the measure, per second, and what was left at its end. */
  drained?: { completedPerS: number; backlog: number };
  /** BENCH_PG_STAT=1: recordEvents' second statement (totals + executions insert), mean ms; statements per request. */
  pg?: { cteExecMs: number; ctePlanMs: number; statementsPerReq: number };
}

/** recordEvents for one event, alone: per call wall time (ms) and PostgreSQL CPU (ms). */
interface Micro { kind: 'A' | 'B'; round: number; meanMs: number; p50: number; p99: number; pgCpuMs: number }

interface Executions {
  name: string;
  n: number;
  /** End to end: the track requests (autocannon). */
  http?: { seconds: number; rps: number; p50: number; p99: number; non2xx: number; errors: number };
  /** First and last, in ms since the first event was recorded (engine side: the commit; end to end: the first request). */
  enqueue: { first: number; last: number; perS: number };
  start: { first: number; last: number; perS: number };
  complete: { first: number; last: number; perS: number };
  totalS: number;
  /** Event (its transaction's start) → execution COMPLETED, ms. */
  lag: { p50: number; p99: number };
  cpu: Cpu;
  workerHwmMb: number;
  checks: { executions: number; distinctEvents: number; completed: number; otherStatus: number; dbosWorkflows: number; dbosSuccess: number; dbosRecovered: number; stepRuns: number; contactsUpdated: number; events: number };
  ok: boolean;
}

let counter = 0;
function trackBody(event: string, tag: string): () => string {
  return () => JSON.stringify({ email: `visitor-${tag}-${counter++}@example.org`, event, data: { plan: 'pro' } });
}

function statusMb(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}
const vmHwmMb = (pid: number) => statusMb(pid, 'VmHWM');
const vmRssMb = (pid: number) => statusMb(pid, 'VmRSS');

/**
 * CPU ms of PostgreSQL: the postmaster, its live backends, and the backends that have exited (the postmaster's
 * cutime + cstime): connection pools close idle connections during a run, and a sum over the live ones only would
 * lose their time.
 */
function postgresCpuMs(postmaster: number): number {
  let reaped = 0;
  try {
    const text = fs.readFileSync(`/proc/${postmaster}/stat`, 'utf8');
    const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
    // Fields 16 and 17 (cutime, cstime) are rest[13] and rest[14], in clock ticks.
    reaped = ((Number(rest[13]) + Number(rest[14])) * 1000) / CLK_TCK;
  } catch { /* gone */ }
  return cpuMs(postmaster, true) + reaped;
}

runBench('bench:automations', 20 * 60_000, async () => {
  const cluster = await startCluster('automations');
  const children: Child[] = [];
  let sinkRef: Sink | undefined;
  try {
    const { knex } = cluster;
    console.log(`machine: ${machine(cluster.version)}`);
    console.log(`PostgreSQL settings: ${JSON.stringify(cluster.settings)}`);
    console.log(`track: ${CONNECTIONS} connections, warm-up ${WARMUP} s, measure ${DURATION} s, a distinct new contact per request; executions: ${N}, ${WORKERS} worker process(es) with node options "${WORKER_NODE_ARGS.join(' ')}"; ${EXISTING_CONTACTS} existing contacts`);
    // How busy the machine is before anything of ours runs (the main session may be running tests).
    const idle0 = machineBusyMs();
    await sleep(2000);
    console.log(`other processes before the run: ${f((machineBusyMs() - idle0) / 20)} % of one CPU (2 s sample)`);
    const project = await benchProject();
    await knex.raw(`INSERT INTO contacts (project_id, email, subscribed, data)
      SELECT ?::uuid, 'existing-' || g || '@example.org', g % 2 = 0, jsonb_build_object('plan', 'free')
      FROM generate_series(1, ?::int) g`, [project.id, EXISTING_CONTACTS]);
    await knex.raw('ANALYZE');

    const sink = await startSink();
    sinkRef = sink;
    await prepareEngineSchema(cluster, sink.url);
    const api = startHeraldChild('herald api', cluster, 'api', { PORT: '0', API_RATE_LIMIT_PER_MINUTE: '1000000000' });
    children.push(api);
    const port = (await api.ready).port as number;
    const base = `http://127.0.0.1:${port}`;

    // The workflows, created and enabled through the API as a user would.
    const createWorkflow = async (name: string, event: string, data: Record<string, unknown>): Promise<string> => {
      const res = await fetch(`${base}/workflows`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${project.secretKey}` },
        body: JSON.stringify({ name, enabled: true, trigger: { type: 'EVENT', event }, allowReentry: true, steps: [{ id: 'tag', type: 'UPDATE_CONTACT', config: { data } }] }),
      });
      const body = (await res.json()) as { data?: { id: string } };
      if (res.status !== 201 || !body.data) throw new Error(`POST /workflows: ${res.status} ${JSON.stringify(body)}`);
      return body.data.id;
    };
    const listener = await createWorkflow('bench: listener', 'bench.listened', { listened: true });
    const journeyEngine = await createWorkflow('bench: journey (engine side)', 'journey.engine', { journey: 'engine' });
    const journeyHttp = await createWorkflow('bench: journey (end to end)', 'journey.http', { journey: 'http' });

    const pgPid = cluster.postmasterPid();
    let workers: Child[] = [];
    const snap = () => ({
      api: cpuMs(api.pid), workers: workers.reduce((s, w) => s + cpuMs(w.pid), 0), postgres: postgresCpuMs(pgPid),
      loadgen: cpuMs(process.pid), machine: machineBusyMs(),
    });
    const perUnit = (a: ReturnType<typeof snap>, b: ReturnType<typeof snap>, n: number): Cpu => ({
      api: (b.api - a.api) / n, workers: (b.workers - a.workers) / n, postgres: (b.postgres - a.postgres) / n,
      loadgen: (b.loadgen - a.loadgen) / n, machine: (b.machine - a.machine) / n,
    });
    const trackUrl = `${base}/v1/track`;
    const trackHeaders = { 'content-type': 'application/json', authorization: `Bearer ${project.publicKey}` };
    const drive = (opts: Partial<autocannon.Options>, body: () => string) => autocannon({
      url: trackUrl, method: 'POST', connections: CONNECTIONS, timeout: 30, headers: trackHeaders, ...opts,
      requests: [{ setupRequest: (req) => ({ ...req, body: body() }) }],
    });
    const countOf = async (q: string, bindings: unknown[]): Promise<number> => Number((await knex.raw(q, bindings as never)).rows[0].n);

    const latency: Latency[] = [];
    const measureTrack = async (name: string, kind: Latency['kind'], event: string, tag: string): Promise<{ m: Latency; answered: number; from: number; to: number }> => {
      process.stdout.write(`${name}: warm-up ${WARMUP} s … `);
      const warm = await drive({ duration: WARMUP }, trackBody(event, tag));
      process.stdout.write(`${Math.round(warm['2xx'] / WARMUP)} req/s; measure ${DURATION} s … `);
      if (cluster.pgStat) await knex.raw('SELECT pg_stat_statements_reset()');
      const before = snap();
      const from = Date.now();
      const r = await drive({ duration: DURATION }, trackBody(event, tag));
      const to = Date.now();
      // autocannon stops counting at its deadline; the requests then in flight still commit. Let them.
      await sleep(1500);
      const ok = r['2xx'];
      const m: Latency = {
        name, kind, rps: ok / r.duration, mean: r.latency.mean, p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max,
        ok, non2xx: r.non2xx, errors: r.errors + r.timeouts, cpu: perUnit(before, snap(), ok),
      };
      if (cluster.pgStat) {
        const st = (await knex.raw(`SELECT sum(calls) FILTER (WHERE query LIKE 'WITH ev AS%') AS cte_calls,
            sum(total_exec_time) FILTER (WHERE query LIKE 'WITH ev AS%') AS cte_exec, sum(total_plan_time) FILTER (WHERE query LIKE 'WITH ev AS%') AS cte_plan,
            sum(calls) FILTER (WHERE query NOT LIKE '%pg_stat_statements%') AS calls
          FROM pg_stat_statements`)).rows[0];
        m.pg = { cteExecMs: Number(st.cte_exec) / Number(st.cte_calls), ctePlanMs: Number(st.cte_plan) / Number(st.cte_calls), statementsPerReq: Number(st.calls) / ok };
      }
      console.log(`${Math.round(m.rps)} req/s, p50 ${m.p50} ms, p99 ${m.p99} ms`);
      return { m, answered: warm['2xx'] + ok, from, to };
    };

    const workersDown = () => workers.some((w) => w.process.exitCode !== null || w.process.signalCode !== null);
    const startWorkers = async () => {
      workers = Array.from({ length: WORKERS }, (_, i) => startHeraldChild(`herald worker ${i + 1}`, cluster, 'worker', {
        SMTP_URL: sink.url, EXECUTOR_ID: `bench-automations-worker-${i + 1}`,
      }, WORKER_NODE_ARGS));
      children.push(...workers);
      await Promise.all(workers.map((w) => w.ready));
    };

    const listenerChecks: string[] = [];
    const micro: Micro[] = [];
    if (ONLY !== 'executions' && ONLY !== 'engine') {
      // The statement alone: recordEvents for one event in its own transaction, one at a time on one connection (no
      // HTTP, no concurrency, no lock waits), for existing contacts, alternating nobody listening / one listener.
      const existing: string[] = (await knex('contacts').where('project_id', project.id).where('email', 'like', 'existing-%').orderBy('id').limit(MICRO_CALLS * 2 * ROUNDS).pluck('id'));
      process.stdout.write(`recordEvents alone: ${MICRO_CALLS} calls × ${ROUNDS} rounds each way … `);
      let k = 0;
      // Untimed first (JIT, the pool's connections, caches).
      for (let i = 0; i < 200; i++) await knex.transaction((trx) => recordEvents(trx, project.id, [{ name: 'bench.unheard', contactId: existing[k++ % existing.length]!, data: { plan: 'pro' } }]));
      for (let round = 1; round <= ROUNDS; round++) {
        for (const [kind, event] of [['A', 'bench.unheard'], ['B', 'bench.listened']] as const) {
          const times: number[] = [];
          const pg0 = postgresCpuMs(pgPid);
          for (let i = 0; i < MICRO_CALLS; i++) {
            const contactId = existing[k++ % existing.length]!;
            const t0 = performance.now();
            await knex.transaction((trx) => recordEvents(trx, project.id, [{ name: event, contactId, data: { plan: 'pro' } }]));
            times.push(performance.now() - t0);
          }
          times.sort((x, y) => x - y);
          micro.push({ kind, round, meanMs: times.reduce((x, y) => x + y, 0) / times.length, p50: times[Math.floor(times.length / 2)]!, p99: times[Math.floor(times.length * 0.99)]!, pgCpuMs: (postgresCpuMs(pgPid) - pg0) / MICRO_CALLS });
        }
      }
      const microRows = await countOf('SELECT count(*) AS n FROM automation_executions WHERE project_id = ? AND automation_id = ?', [project.id, listener]);
      console.log(`done; ${microRows} executions written for ${MICRO_CALLS * ROUNDS} listened events`);
      await knex('automation_executions').where({ project_id: project.id, automation_id: listener }).del();
      await knex('events').where('project_id', project.id).whereIn('name', ['bench.listened', 'bench.unheard']).del();
      await knex.raw('VACUUM ANALYZE automation_executions, events');

      // JIT, pools and caches of the API: untimed load before the first measure.
      process.stdout.write(`priming the API: ${PRIME} s … `);
      const prime = await drive({ duration: PRIME }, trackBody('bench.prime', 'prime'));
      console.log(`${Math.round(prime['2xx'] / PRIME)} req/s`);
      // A and B, alternated: the API alone (no worker process).
      for (let round = 1; round <= ROUNDS; round++) {
        const a = await measureTrack(`A${round}. no listener, no worker`, 'A', 'bench.unheard', `a${round}`);
        latency.push(a.m);
        const unheard = await countOf('SELECT count(*) AS n FROM automation_executions WHERE project_id = ?', [project.id]);
        const b = await measureTrack(`B${round}. one listener, no worker`, 'B', 'bench.listened', `b${round}`);
        latency.push(b.m);
        const bRows = await countOf('SELECT count(*) AS n FROM automation_executions WHERE project_id = ? AND automation_id = ? AND outbox = \'START\'', [project.id, listener]);
        // autocannon counts the answers within its duration; the requests in flight when it stops were recorded too.
        const bEvents = await countOf('SELECT count(*) AS n FROM events WHERE project_id = ? AND name = ?', [project.id, 'bench.listened']);
        listenerChecks.push(`A${round} left ${unheard} executions (expected 0); B${round} recorded ${bEvents} events (${b.answered} answered within autocannon's time) and left ${bRows} START rows in the outbox (expected one per event)`);
        // No workflow was started for B's rows: delete them (and B's events, for the next round's count), so that
        // C's workers start with an empty outbox.
        await knex('automation_executions').where({ project_id: project.id, automation_id: listener }).del();
        await knex('events').where({ project_id: project.id, name: 'bench.listened' }).del();
        await knex.raw('VACUUM ANALYZE automation_executions, events');
      }
    }

    const executions: Executions[] = [];
    // Every part from here on runs with the workers.
    await startWorkers();

    /** Waits until the workflow's n executions are done, printing progress; answers false on timeout. */
    const waitDone = async (automationId: string, n: number, from: number): Promise<boolean> => {
      const deadline = Date.now() + WAIT_MS;
      let lastPrint = Date.now();
      let last = snap();
      for (;;) {
        const row = (await knex.raw(`SELECT count(*) FILTER (WHERE status NOT IN ('RUNNING', 'WAITING'))::int AS done,
            count(*) FILTER (WHERE outbox IS NULL)::int AS told, count(*)::int AS n
          FROM automation_executions WHERE project_id = ? AND automation_id = ?`, [project.id, automationId])).rows[0] as { done: number; told: number; n: number };
        // Done once DBOS has recorded the end of each workflow too (it follows the row's last step).
        if (row.done >= n && await countOf(`SELECT count(*) AS n FROM automation_executions x JOIN dbos.workflow_status ws ON ws.workflow_uuid = 'execution-' || x.id
          WHERE x.project_id = ? AND x.automation_id = ? AND ws.status = 'SUCCESS'`, [project.id, automationId]) >= n) return true;
        const dead = workersDown() ? workers.find((w) => w.process.exitCode !== null || w.process.signalCode !== null) : undefined;
        if (dead) {
          console.log(`  ${dead.name} exited (code ${dead.process.exitCode}, signal ${dead.process.signalCode}) at +${f((Date.now() - from) / 1000, 1)} s with ${row.done} of ${n} done; its stderr is above`);
          return false;
        }
        if (Date.now() > deadline) {
          console.log(`  timed out after ${WAIT_MS / 1000} s: ${row.done} of ${n} done`);
          return false;
        }
        if (Date.now() - lastPrint >= 5000) {
          const now = snap();
          const ms = Date.now() - lastPrint;
          lastPrint = Date.now();
          const pct = (a: number, b: number) => `${f(((b - a) / ms) * 100)} %`;
          console.log(`  +${f((Date.now() - from) / 1000, 1)} s: ${row.n} executions, ${row.told} out of the outbox, ${row.done} done; CPU of the last interval: workers ${pct(last.workers, now.workers)}, postgres ${pct(last.postgres, now.postgres)}, API ${pct(last.api, now.api)}, machine ${pct(last.machine, now.machine)}; worker RSS ${workers.map((w) => f(vmRssMb(w.pid))).join(', ')} MB`);
          last = now;
        }
        await sleep(200);
      }
    };

    /** What the database says about a workflow's executions (times in ms since `from`). */
    const measureExecutions = async (name: string, automationId: string, event: string, journey: string, n: number, from: number, cpu: Cpu, http?: Executions['http']): Promise<Executions> => {
      const x = (await knex.raw(`SELECT count(*)::int AS executions, count(DISTINCT trigger_event_id)::int AS distinct_events,
          count(*) FILTER (WHERE status = 'COMPLETED')::int AS completed, count(*) FILTER (WHERE status <> 'COMPLETED')::int AS other_status,
          extract(epoch FROM min(completed_at)) * 1000 AS c0, extract(epoch FROM max(completed_at)) * 1000 AS c1
        FROM automation_executions WHERE project_id = ? AND automation_id = ?`, [project.id, automationId])).rows[0];
      const w = (await knex.raw(`SELECT count(*)::int AS n, count(*) FILTER (WHERE ws.status = 'SUCCESS')::int AS success,
          count(*) FILTER (WHERE ws.recovery_attempts > 1)::int AS recovered,
          min(ws.created_at) AS e0, max(ws.created_at) AS e1, min(ws.started_at_epoch_ms) AS s0, max(ws.started_at_epoch_ms) AS s1
        FROM automation_executions x JOIN dbos.workflow_status ws ON ws.workflow_uuid = 'execution-' || x.id
        WHERE x.project_id = ? AND x.automation_id = ?`, [project.id, automationId])).rows[0];
      const lag = (await knex.raw(`SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS p50, percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) AS p99
        FROM (SELECT extract(epoch FROM x.completed_at - e.created_at) * 1000 AS ms
              FROM automation_executions x JOIN events e ON e.project_id = x.project_id AND e.id = x.trigger_event_id
              WHERE x.project_id = ? AND x.automation_id = ?) t`, [project.id, automationId])).rows[0];
      const stepRuns = await countOf(`SELECT count(*) AS n FROM automation_step_runs s JOIN automation_executions x ON x.project_id = s.project_id AND x.id = s.execution_id
        WHERE x.project_id = ? AND x.automation_id = ?`, [project.id, automationId]);
      const contactsUpdated = await countOf('SELECT count(*) AS n FROM contacts WHERE project_id = ? AND data->>\'journey\' = ?', [project.id, journey]);
      const events = await countOf('SELECT count(*) AS n FROM events WHERE project_id = ? AND name = ?', [project.id, event]);
      // Nothing started or completed (a worker died): no figures.
      const at = (v: number | string | null) => (v === null ? NaN : Number(v));
      const span = (a: number | string | null, b: number | string | null) => ({ first: at(a) - from, last: at(b) - from, perS: (n - 1) / ((at(b) - at(a)) / 1000) });
      const checks = {
        executions: x.executions, distinctEvents: x.distinct_events, completed: x.completed, otherStatus: x.other_status,
        dbosWorkflows: w.n, dbosSuccess: w.success, dbosRecovered: w.recovered, stepRuns, contactsUpdated, events,
      };
      const ok = [checks.executions, checks.distinctEvents, checks.completed, checks.dbosWorkflows, checks.dbosSuccess, checks.stepRuns, checks.contactsUpdated, checks.events].every((v) => v === n);
      return {
        name, n, http,
        enqueue: span(w.e0, w.e1), start: span(w.s0, w.s1), complete: span(x.c0, x.c1),
        totalS: (at(x.c1) - from) / 1000,
        lag: { p50: at(lag.p50), p99: at(lag.p99) },
        cpu, workerHwmMb: Math.max(...workers.map((wk) => vmHwmMb(wk.pid))), checks, ok,
      };
    };

    if (ONLY !== 'latency') {
      // 2a. Engine side alone: N events recorded in one transaction, as recordEvents records them for the API.
      const contacts: { id: string }[] = (await knex.raw(`INSERT INTO contacts (project_id, email, subscribed, data)
        SELECT ?::uuid, 'journey-engine-' || g || '@example.org', true, '{}'::jsonb FROM generate_series(1, ?::int) g RETURNING id`, [project.id, N])).rows;
      await knex.raw('ANALYZE contacts');
      if (cluster.pgStat) await knex.raw('SELECT pg_stat_statements_reset()');
      process.stdout.write(`\nengine side: recording ${N} events in one transaction … `);
      const t = Date.now();
      await knex.transaction(async (trx) => {
        // Chunks: one multi-row INSERT has at most 65,535 parameters.
        for (let i = 0; i < contacts.length; i += 2000) {
          await recordEvents(trx, project.id, contacts.slice(i, i + 2000).map((c) => ({ name: 'journey.engine', contactId: c.id, data: { plan: 'pro' } })));
        }
      });
      const from = Date.now();
      const before = snap();
      console.log(`committed in ${f((from - t) / 1000, 2)} s; the workers take over`);
      const done = await waitDone(journeyEngine, N, from);
      const cpu = perUnit(before, snap(), N);
      executions.push(await measureExecutions('engine side (one transaction of events)', journeyEngine, 'journey.engine', 'engine', N, from, cpu));
      if (!done) console.log('  (not all done: the figures cover what was)');
      if (cluster.pgStat) {
        const rows = (await knex.raw('SELECT calls, query FROM pg_stat_statements WHERE calls >= ? ORDER BY calls DESC LIMIT 40', [Math.floor(N / 4)])).rows as { calls: number; query: string }[];
        console.log(`  statements per execution (pg_stat_statements, ${N} executions; ≥ 0.25 shown):`);
        let total = 0;
        for (const s of rows) {
          total += s.calls;
          console.log(`    ${(s.calls / N).toFixed(2)}  ${s.query.replace(/\s+/g, ' ').slice(0, 150)}`);
        }
        console.log(`    ${(total / N).toFixed(1)} in all (of those shown)`);
      }

      // 2b. End to end: N POST /v1/track, the API and the workers on the same cores.
      if (ONLY === 'engine') {
        // BENCH_ONLY=engine: the engine side alone.
      } else if (workersDown()) {
        console.log('end to end: skipped, a worker has exited');
      } else {
        process.stdout.write(`end to end: ${N} POST /v1/track at ${CONNECTIONS} connections … `);
        const before2 = snap();
        const from2 = Date.now();
        const r = await drive({ amount: N }, trackBody('journey.http', 'journey'));
        const answered = Date.now();
        console.log(`answered in ${f((answered - from2) / 1000, 1)} s (${Math.round(r['2xx'] / ((answered - from2) / 1000))} req/s)`);
        const done2 = await waitDone(journeyHttp, r['2xx'], from2);
        const cpu2 = perUnit(before2, snap(), N);
        const http = { seconds: (answered - from2) / 1000, rps: r['2xx'] / ((answered - from2) / 1000), p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors + r.timeouts };
        executions.push(await measureExecutions('end to end (POST /v1/track)', journeyHttp, 'journey.http', 'http', N, from2, cpu2, http));
        if (!done2) console.log('  (not all done: the figures cover what was)');
      }
    }

    const withC = ONLY !== 'executions' && ONLY !== 'engine';
    if (withC && workersDown()) console.log('C: skipped, a worker has exited');
    else if (withC) {
      // C. The full system: the listener, and the workers draining its executions on the same cores.
      const c = await measureTrack(`C. one listener, ${WORKERS} worker${WORKERS > 1 ? 's' : ''} running`, 'C', 'bench.listened', 'c');
      const completed = await countOf(`SELECT count(*) AS n FROM automation_executions WHERE project_id = ? AND automation_id = ?
        AND completed_at >= to_timestamp(? / 1000.0) AND completed_at < to_timestamp(? / 1000.0)`, [project.id, listener, c.from, c.to]);
      const backlog = await countOf(`SELECT count(*) AS n FROM automation_executions WHERE project_id = ? AND automation_id = ? AND status = 'RUNNING'`, [project.id, listener]);
      c.m.drained = { completedPerS: completed / ((c.to - c.from) / 1000), backlog };
      latency.push(c.m);
    }

    // The report.
    if (micro.length) {
      console.log(`\n### recordEvents alone (one event per transaction, one connection, ${MICRO_CALLS} calls per row)\n`);
      console.log('| run | mean ms | p50 ms | p99 ms | PostgreSQL CPU ms/call |');
      console.log('|---|---|---|---|---|');
      for (const m of micro) console.log(`| ${m.kind}${m.round}. ${m.kind === 'A' ? 'no listener' : 'one listener'} | ${f(m.meanMs, 3)} | ${f(m.p50, 3)} | ${f(m.p99, 3)} | ${f(m.pgCpuMs, 3)} |`);
      const avg = (kind: 'A' | 'B', get: (m: Micro) => number) => { const ms = micro.filter((m) => m.kind === kind); return ms.reduce((x, m) => x + get(m), 0) / ms.length; };
      console.log(`one listener adds ${f(avg('B', (m) => m.meanMs) - avg('A', (m) => m.meanMs), 3)} ms per call (mean; p50 ${f(avg('B', (m) => m.p50) - avg('A', (m) => m.p50), 3)} ms), ${f(avg('B', (m) => m.pgCpuMs) - avg('A', (m) => m.pgCpuMs), 3)} ms of PostgreSQL CPU`);
    }
    if (latency.length) {
      console.log('\n### POST /v1/track\n');
      console.log('| run | req/s | mean ms | p50 ms | p90 ms | p99 ms | max ms | 2xx | non-2xx / errors | CPU ms/req: API | workers | postgres | autocannon | other | executions completed/s during the run | left RUNNING at its end |');
      console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
      for (const r of latency) {
        const other = r.cpu.machine - r.cpu.api - r.cpu.workers - r.cpu.postgres - r.cpu.loadgen;
        console.log(`| ${r.name} | ${f(r.rps)} | ${f(r.mean, 1)} | ${r.p50} | ${r.p90} | ${r.p99} | ${r.max} | ${r.ok} | ${r.non2xx} / ${r.errors} | ${f(r.cpu.api, 2)} | ${f(r.cpu.workers, 2)} | ${f(r.cpu.postgres, 2)} | ${f(r.cpu.loadgen, 2)} | ${f(other, 2)} | ${r.drained ? f(r.drained.completedPerS) : '–'} | ${r.drained ? f(r.drained.backlog) : '–'} |`);
      }
      // The rounds' means, then B and C against A.
      const mean = (kind: Latency['kind']) => {
        const rs = latency.filter((r) => r.kind === kind);
        const avg = (get: (r: Latency) => number) => rs.reduce((sum, r) => sum + get(r), 0) / rs.length;
        return rs.length ? { n: rs.length, rps: avg((r) => r.rps), mean: avg((r) => r.mean), p50: avg((r) => r.p50), p90: avg((r) => r.p90), p99: avg((r) => r.p99), cpu: avg((r) => r.cpu.api + r.cpu.postgres) } : undefined;
      };
      const a = mean('A');
      const signed = (v: number, d = 1) => `${v >= 0 ? '+' : ''}${f(v, d)}`;
      for (const kind of ['B', 'C'] as const) {
        const x = mean(kind);
        if (!a || !x) continue;
        console.log(`${kind} vs A (${x.n > 1 || a.n > 1 ? `means of ${x.n} and ${a.n} runs` : 'one run each'}): req/s ${f(a.rps)} → ${f(x.rps)} (${signed((x.rps / a.rps - 1) * 100)} %), mean ${signed(x.mean - a.mean)} ms, p50 ${signed(x.p50 - a.p50)} ms, p90 ${signed(x.p90 - a.p90)} ms, p99 ${signed(x.p99 - a.p99)} ms; API + postgres CPU per request ${f(a.cpu, 2)} → ${f(x.cpu, 2)} ms (${signed(x.cpu - a.cpu, 2)})`);
      }
      const withPg = latency.filter((r) => r.pg);
      if (withPg.length) {
        console.log('pg_stat_statements: recordEvents\' totals statement (with the executions insert), mean execution + planning ms; statements per request:');
        for (const r of withPg) console.log(`  ${r.name}: ${f(r.pg!.cteExecMs, 3)} + ${f(r.pg!.ctePlanMs, 3)} ms; ${f(r.pg!.statementsPerReq, 2)} statements`);
      }
      if (listenerChecks.length) console.log(`checks: ${listenerChecks.join('; ')}`);
    }
    if (executions.length) {
      console.log(`\n### Executions (${N} events, ${WORKERS} worker process${WORKERS > 1 ? 'es' : ''}; times from the first event)\n`);
      console.log('| run | HTTP | enqueued (outbox → DBOS) first → last, per s | **started** first → last, **per s** | completed first → last, per s | all COMPLETED after | event → COMPLETED p50 / p99 | CPU ms/execution: API | workers | postgres | autocannon | other | worker VmHWM |');
      console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
      const span = (s: { first: number; last: number; perS: number }) => `${f(s.first / 1000, 2)} → ${f(s.last / 1000, 2)} s, ${f(s.perS)}/s`;
      for (const e of executions) {
        const other = e.cpu.machine - e.cpu.api - e.cpu.workers - e.cpu.postgres - e.cpu.loadgen;
        const http = e.http ? `${f(e.http.rps)} req/s, all answered after ${f(e.http.seconds, 1)} s, p50 ${e.http.p50} / p99 ${e.http.p99} ms, ${e.http.non2xx} / ${e.http.errors} non-2xx / errors` : '–';
        console.log(`| ${e.name} | ${http} | ${span(e.enqueue)} | ${span(e.start)} | ${span(e.complete)} | ${f(e.totalS, 2)} s (${f(e.n / e.totalS)}/s) | ${f(e.lag.p50 / 1000, 2)} / ${f(e.lag.p99 / 1000, 2)} s | ${f(e.cpu.api, 2)} | ${f(e.cpu.workers, 2)} | ${f(e.cpu.postgres, 2)} | ${f(e.cpu.loadgen, 2)} | ${f(other, 2)} | ${f(e.workerHwmMb)} MB |`);
      }
      for (const e of executions) {
        const c = e.checks;
        console.log(`checks (${e.name}): ${c.events} events, ${c.executions} executions for ${c.distinctEvents} distinct events, ${c.completed} COMPLETED (${c.otherStatus} other), ${c.dbosWorkflows} DBOS workflows (${c.dbosSuccess} SUCCESS, ${c.dbosRecovered} started more than once), ${c.stepRuns} step runs, ${c.contactsUpdated} contacts updated: ${e.ok ? 'all as expected (one execution per event, no duplicates)' : 'NOT AS EXPECTED'}`);
      }
    }
    if (process.env.BENCH_JSON) fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify({ machine: machine(cluster.version), settings: cluster.settings, micro, latency, executions }, null, 2));
    if (executions.some((e) => !e.ok) || workersDown()) throw new Error(workersDown() ? 'a worker exited during the run (see above)' : 'the checks of the executions failed (see above)');
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await sinkRef?.close();
    await cluster.stop();
  }
});
