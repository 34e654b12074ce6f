/**
 * A 100,000-recipient campaign with the rate limit lifted: audience materialisation side by side with a raw
 * INSERT … SELECT, then the whole send through the API and a worker process into a loopback SMTP sink.
 *
 *   npx tsx bench/campaign.ts      (npm run bench:campaign)
 *
 * Starts its own embedded PostgreSQL (temporary directory), seeds N subscribed contacts in one project
 * (INSERT … SELECT generate_series) with a verified example.com, then:
 *
 * 1. Materialisation (no worker runs). Herald: the campaign workflow itself (workflows/sendCampaign.ts) runs
 *    in this process with a plain context whose activities are Herald's campaign activities (campaignBatches:
 *    beginCampaign, then campaignBatch with size 500 and `after` = the previous batch's last contact, continue-as-new
 *    every 100 batches), with an engine that, like the embedded one, delivers the committed rows (nothing to start);
 *    the clock stops when the workflow first asks for the campaign's progress (every batch done). A batch is what it
 *    really is: the campaign row lock and the INSERT … SELECT of 500 rows. Left out: the DBOS step bookkeeping (in
 *    part 2). The floor: one raw INSERT INTO emails (the same columns Herald sets) SELECT … FROM contacts
 *    WHERE project_id = ? AND subscribed, into a fresh campaign. BENCH_REPS runs of each, alternating which goes
 *    first; the rows are deleted and the table vacuumed after each run.
 * 2. Send. The Herald API (child process, as `npm run api`) and a worker (child process, as `npm run worker`:
 *    startHerald worker role, DATABASE_URL, SMTP_URL, EXECUTOR_ID; SEND_RATE_PER_SECOND=100000) run on the cluster.
 *    POST /campaigns (ALL contacts) and POST /campaigns/:id/send; the clock runs from the send request until the
 *    sink has accepted all N messages, and until the campaign reads SENT (GET /campaigns/:id every 500 ms). The
 *    worker's resident memory is read from /proc/<pid>/status every 200 ms (VmRSS; VmHWM is the kernel's own peak).
 *    The pid is the worker's node process itself (children run as `node --import tsx`, no launcher in between).
 *    The worker starts first and the API once it is ready: two processes that create DBOS's schema at the same time
 *    on a fresh database collide (see BENCHMARKS.md, section 4).
 *
 * Environment: BENCH_CONTACTS (default 100000), BENCH_REPS (materialisation runs of each side, default 3),
 * BENCH_ONLY=materialise|send, BENCH_TIMEOUT_MIN (watchdog, default 15), BENCH_LOG_LEVEL (Herald's LOG_LEVEL,
 * default info, to /dev/null), BENCH_DURABLE=1 (fsync on), BENCH_PG_STAT=1 (statements of the send, per email),
 * BENCH_CPU_PROF=1 (V8 profile of the worker into BENCH_PROFILE_DIR, default $TMPDIR/herald-bench-profiles),
 * BENCH_HEAP_SNAPSHOT_AT=s1,s2 (heap snapshots of the worker that many seconds after the send, into the same
 * directory), BENCH_WORKER_NODE_ARGS (extra node options of the worker, e.g. --max-old-space-size=160),
 * BENCH_JSON=file (all figures).
 */
import fs from 'node:fs';
import path from 'node:path';
import { CAMPAIGN_BATCH_SIZE } from '../workflows/sendCampaign';
import { BODY, cleanEmails, countRows, heraldMaterialise, newCampaign, type HeraldRun } from './lib/materialise';
import { startCluster, type BenchCluster } from './lib/cluster';
import { benchProject, startHeraldChild } from './lib/herald';
import { cpuProfileArgs, PROFILE_DIR, cpuMs, machine, machineBusyMs, runBench, sleep, type Child } from './lib/proc';
import { startSink, type Sink } from './lib/sink';

const N = Number(process.env.BENCH_CONTACTS ?? 100_000);
const REPS = Number(process.env.BENCH_REPS ?? 3);
const ONLY = process.env.BENCH_ONLY;
const TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_MIN ?? 15) * 60_000;
const started = Date.now();
const remaining = () => TIMEOUT_MS - (Date.now() - started) - 15_000;
const now = () => performance.timeOrigin + performance.now();
const f = (n: number, d = 0) => n.toLocaleString('en', { minimumFractionDigits: d, maximumFractionDigits: d });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

const SENDER = { from_email: 'news@example.com', from_name: 'Bench News', reply_to: 'reply@example.com' };

// ---------------------------------------------------------------------------------------------------------------
// 1. Materialisation

async function floorMaterialise(cluster: BenchCluster, projectId: string, rep: number): Promise<{ ms: number; rows: number; pgCpuMs: number }> {
  const { knex } = cluster;
  const campaignId = await newCampaign(knex, projectId, `floor-${rep}`, 'SENDING');
  const pgBefore = cpuMs(cluster.postmasterPid(), true);
  const t0 = performance.now();
  await knex.raw(
    `INSERT INTO emails (project_id, contact_id, campaign_id, from_email, from_name, reply_to, to_email, subject, html)
     SELECT c.project_id, c.id, ?::uuid, ?, ?, ?, c.email, NULL, NULL FROM contacts c WHERE c.project_id = ?::uuid AND c.subscribed`,
    [campaignId, SENDER.from_email, SENDER.from_name, SENDER.reply_to, projectId],
  );
  const ms = performance.now() - t0;
  const pgCpuMs = cpuMs(cluster.postmasterPid(), true) - pgBefore;
  const rows = await countRows(knex, campaignId);
  await cleanEmails(knex, campaignId);
  return { ms, rows, pgCpuMs };
}

async function materialisation(cluster: BenchCluster, projectId: string) {
  console.log(`\n== 1. Materialisation of ${f(N)} email rows: Herald's campaign workflow + activities (no-op engine) vs one raw INSERT … SELECT, ${REPS} runs each ==`);
  const herald: HeraldRun[] = [];
  const floor: Awaited<ReturnType<typeof floorMaterialise>>[] = [];
  for (let rep = 1; rep <= REPS; rep++) {
    const order = rep % 2 === 1 ? ['floor', 'herald'] : ['herald', 'floor'];
    for (const side of order) {
      if (side === 'floor') {
        const r = await floorMaterialise(cluster, projectId, rep);
        floor.push(r);
        console.log(`  run ${rep} floor : ${f(r.ms)} ms, ${f(r.rows)} rows, PostgreSQL CPU ${f(r.pgCpuMs)} ms`);
      } else {
        const r = await heraldMaterialise(cluster, projectId, `herald-${rep}`);
        if (r.rows !== N) throw new Error(`a materialisation left ${r.rows} rows instead of ${N}`);
        herald.push(r);
        console.log(`  run ${rep} herald: ${f(r.ms)} ms, ${f(r.rows)} rows in ${r.batches} batches (${r.runs} workflow runs), PostgreSQL CPU ${f(r.pgCpuMs)} ms, this process ${f(r.selfCpuMs)} ms`);
      }
    }
  }
  for (const r of [...herald, ...floor]) if (r.rows !== N) throw new Error(`a materialisation left ${r.rows} rows instead of ${N}`);
  const hMs = median(herald.map((r) => r.ms));
  const fMs = median(floor.map((r) => r.ms));
  const ratio = hMs / fMs;
  const mid = herald.find((r) => r.ms === hMs)!;
  console.log(`\n| side | runs (ms) | median ms | rows/s | PostgreSQL CPU ms (median) |`);
  console.log('|---|---|---|---|---|');
  console.log(`| raw INSERT … SELECT (floor) | ${floor.map((r) => f(r.ms)).join(' / ')} | ${f(fMs)} | ${f(N / (fMs / 1000))} | ${f(median(floor.map((r) => r.pgCpuMs)))} |`);
  console.log(`| Herald (${mid.batches} batches of ${CAMPAIGN_BATCH_SIZE}) | ${herald.map((r) => f(r.ms)).join(' / ')} | ${f(hMs)} | ${f(N / (hMs / 1000))} | ${f(median(herald.map((r) => r.pgCpuMs)))} |`);
  console.log(`\nHerald's time by statement (median run; client-side wall time, summed):`);
  let stmtTotal = 0;
  for (const [kind, t] of [...mid.statements].sort((a, b) => b[1].ms - a[1].ms)) {
    stmtTotal += t.ms;
    console.log(`  ${f(t.ms).padStart(7)} ms  ${f((100 * t.ms) / mid.ms, 1).padStart(5)} %  ${String(t.n).padStart(5)} ×  ${f(t.ms / t.n, 2)} ms each  ${kind}`);
  }
  console.log(`  ${f(mid.ms - stmtTotal).padStart(7)} ms  ${f((100 * (mid.ms - stmtTotal)) / mid.ms, 1).padStart(5)} %  between statements (JS: query building, pool, event loop)`);
  console.log(`target: Herald ${f(hMs)} ms = ${ratio.toFixed(2)} × the floor (${f(fMs)} ms) ≤ 3: ${ratio <= 3 ? 'met' : 'MISSED'}`);

  return {
    heraldMs: herald.map((r) => r.ms), floorMs: floor.map((r) => r.ms), ratio,
    statements: Object.fromEntries(mid.statements), heraldPgCpuMs: herald.map((r) => r.pgCpuMs), floorPgCpuMs: floor.map((r) => r.pgCpuMs),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// 2. The send

/** VmRSS, VmHWM and the anonymous / file-backed parts of the RSS (bytes) of a process, from /proc/<pid>/status. */
function memOf(pid: number): { rss: number; hwm: number; anon: number; file: number } | undefined {
  try {
    const text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) * 1024;
    return { rss: kb('VmRSS'), hwm: kb('VmHWM'), anon: kb('RssAnon'), file: kb('RssFile') };
  } catch {
    return undefined;
  }
}

const MB = 2 ** 20;

async function api(port: number, key: string, method: string, url: string, body?: unknown): Promise<{ status: number; data: Record<string, unknown> }> {
  const res = await fetch(`http://127.0.0.1:${port}${url}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const json = (await res.json().catch(() => ({}))) as { data?: Record<string, unknown> };
  return { status: res.status, data: json.data ?? (json as Record<string, unknown>) };
}

async function send(cluster: BenchCluster, project: { id: string; secretKey: string }, children: Child[], sink: Sink) {
  const { knex } = cluster;
  console.log(`\n== 2. Send: POST /campaigns/:id/send → all ${f(N)} delivered to the loopback sink (SEND_RATE_PER_SECOND=100000) ==`);
  const workerStart = now();
  const worker = startHeraldChild('herald worker', cluster, 'worker', {
    SMTP_URL: sink.url, SEND_RATE_PER_SECOND: '100000', EXECUTOR_ID: 'bench-campaign-worker',
  }, [
    ...cpuProfileArgs(),
    ...(process.env.BENCH_WORKER_NODE_ARGS ?? '').split(' ').filter(Boolean),
  ]);
  children.push(worker);
  await worker.ready;
  const workerReadyMs = now() - workerStart;
  // One after the other: on a fresh database, two processes that create DBOS's schema at the same time collide
  // (createEmbeddedEngine → migrateSystemDatabase: duplicate key in pg_type), and the second one exits.
  const apiChild = startHeraldChild('herald api', cluster, 'api', { PORT: '0', API_RATE_LIMIT_PER_MINUTE: '1000000000' });
  children.push(apiChild);
  const port = (await apiChild.ready).port as number;
  const cmdline = fs.readFileSync(`/proc/${worker.pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  console.log(`worker pid ${worker.pid}: ${cmdline.map((a) => path.basename(a)).join(' ')} (ready in ${f(workerReadyMs / 1000, 1)} s); API on 127.0.0.1:${port}`);
  const idle = memOf(worker.pid)!;
  worker.send({ type: 'mem' });
  const idleHeap = (await worker.next('mem', 10_000)) as unknown as NodeJS.MemoryUsage;
  console.log(`worker memory when idle: VmRSS ${f(idle.rss / MB)} MB (anonymous ${f(idle.anon / MB)}, file-backed ${f(idle.file / MB)}), V8 heap used ${f(idleHeap.heapUsed / MB)} MB of ${f(idleHeap.heapTotal / MB)} MB`);

  const created = await api(port, project.secretKey, 'POST', '/campaigns', {
    name: 'Bench campaign', subject: 'News for {{ contact.data.firstName }}', body: BODY,
    from: SENDER.from_email, fromName: SENDER.from_name, replyTo: SENDER.reply_to, audienceType: 'ALL',
  });
  if (created.status !== 201) throw new Error(`POST /campaigns answered ${created.status}: ${JSON.stringify(created.data)}`);
  const campaignId = created.data.id as string;
  if (cluster.pgStat) await knex.raw('SELECT pg_stat_statements_reset()');

  // Memory: /proc every 200 ms; the worker's own view (heap, external) every second over IPC.
  const samples: { t: number; rss: number }[] = [];
  let peak = { rss: 0, anon: 0, file: 0, at: 0 };
  let heapPeak = { heapUsed: 0, heapTotal: 0, external: 0, arrayBuffers: 0, rss: 0, at: 0 };
  let memBusy = false;
  let sendAt = 0;
  const rssTimer = setInterval(() => {
    const m = memOf(worker.pid);
    if (!m) return;
    const t = now() - sendAt;
    samples.push({ t, rss: m.rss });
    if (m.rss > peak.rss) peak = { rss: m.rss, anon: m.anon, file: m.file, at: t };
  }, 200);
  const heapTimer = setInterval(() => {
    if (memBusy) return;
    memBusy = true;
    worker.send({ type: 'mem' });
    worker.next('mem', 5000).then((m) => {
      const u = m as unknown as typeof heapPeak;
      if (u.heapUsed > heapPeak.heapUsed) heapPeak = { ...u, at: now() - sendAt };
    }, () => undefined).finally(() => { memBusy = false; });
  }, 1000);

  const pgPid = cluster.postmasterPid();
  const snap = () => ({ worker: cpuMs(worker.pid), api: cpuMs(apiChild.pid), postgres: cpuMs(pgPid, true), parent: cpuMs(process.pid), machine: machineBusyMs() });
  sink.reset();
  const before = snap();
  sendAt = now();
  const sent = await api(port, project.secretKey, 'POST', `/campaigns/${campaignId}/send`, {});
  const sendAnsweredMs = now() - sendAt;
  if (sent.status !== 200) throw new Error(`POST /campaigns/:id/send answered ${sent.status}: ${JSON.stringify(sent.data)}`);

  // Diagnostics: heap snapshots of the worker at the given seconds after the send (each pauses the worker).
  const snapshots = (process.env.BENCH_HEAP_SNAPSHOT_AT ?? '').split(',').filter(Boolean).map((sec) => setTimeout(() => {
    fs.mkdirSync(PROFILE_DIR, { recursive: true });
    worker.send({ type: 'heap-snapshot', dir: PROFILE_DIR });
    worker.next('heap-snapshot', 120_000).then((m) => {
      console.log(`  heap snapshot at +${sec} s: ${String(m.file)} (after it: heap used ${f((m.heapUsed as number) / MB)} MB, RSS ${f((m.rss as number) / MB)} MB)`);
    }, (err: Error) => console.log(`  heap snapshot at +${sec} s failed: ${err.message}`));
  }, Number(sec) * 1000));

  // Progress, every 15 s: deliveries, the rows materialised so far, worker memory.
  const timeline: { t: number; delivered: number; rows: number; rssMb: number }[] = [];
  let lastCount = 0;
  let lastT = 0;
  const progress = setInterval(() => {
    void countRows(knex, campaignId).then((rows) => {
      const t = now() - sendAt;
      const delivered = sink.times.length;
      const rssMb = (memOf(worker.pid)?.rss ?? 0) / MB;
      timeline.push({ t, delivered, rows, rssMb });
      console.log(`  +${f(t / 1000).padStart(4)} s  delivered ${f(delivered).padStart(7)} (${f((delivered - lastCount) / ((t - lastT) / 1000)).padStart(4)}/s)  email rows ${f(rows).padStart(7)}  worker RSS ${f(rssMb)} MB`);
      lastCount = delivered;
      lastT = t;
    }, () => undefined);
  }, 15_000);

  try {
    await sink.waitFor(N, remaining());
    const allDeliveredMs = sink.times[N - 1]! - sendAt;
    const after = snap();
    clearInterval(progress);
    // The campaign workflow notices that nothing is pending on its next poll (workflows/sendCampaign.ts drainPollMs).
    let campaign: Record<string, unknown>;
    let sentSeenMs: number;
    for (;;) {
      campaign = (await api(port, project.secretKey, 'GET', `/campaigns/${campaignId}`)).data;
      if (campaign.status === 'SENT') { sentSeenMs = now() - sendAt; break; }
      if (campaign.status !== 'SENDING') throw new Error(`the campaign is ${String(campaign.status)}`);
      if (remaining() < 0) throw new Error('the campaign did not read SENT before the watchdog');
      await sleep(500);
    }
    clearInterval(rssTimer);
    clearInterval(heapTimer);
    const hwm = memOf(worker.pid)!.hwm;

    // Checks, and where the time went.
    const rows = (await knex.raw(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE status = 'SENT')::int AS sent, count(DISTINCT contact_id)::int AS contacts,
              extract(epoch FROM min(created_at)) * 1000 AS first_row, extract(epoch FROM max(created_at)) * 1000 AS last_row
       FROM emails WHERE campaign_id = ?`, [campaignId])).rows[0] as { n: number; sent: number; contacts: number; first_row: number; last_row: number };
    const events = Number((await knex.raw(`SELECT count(*)::int AS n FROM events e JOIN emails m ON m.project_id = e.project_id AND m.id = e.email_id
       WHERE m.campaign_id = ? AND e.name = 'email.sent'`, [campaignId])).rows[0].n);
    const distinct = new Set(sink.recipients).size;
    const completedAt = new Date(campaign.completedAt as string).getTime();
    let statements: { calls: number; ms: number; query: string }[] = [];
    if (cluster.pgStat) {
      statements = (await knex.raw('SELECT calls, total_exec_time + total_plan_time AS ms, query FROM pg_stat_statements ORDER BY total_exec_time + total_plan_time DESC LIMIT 25')).rows;
    }
    const t = sink.times;
    const cpu = (k: keyof ReturnType<typeof snap>) => (after[k] - before[k]) / N;
    const r = {
      sendAnsweredMs,
      firstRowMs: rows.first_row - sendAt,
      lastRowMs: rows.last_row - sendAt,
      firstDeliveredMs: t[0]! - sendAt,
      allDeliveredMs,
      completedMs: completedAt - sendAt,
      sentSeenMs,
      perSecond: N / (allDeliveredMs / 1000),
      sinkPerSecond: (N - 1) / ((t[N - 1]! - t[0]!) / 1000),
      peakRssMb: peak.rss / MB,
      peakAtS: peak.at / 1000,
      hwmMb: hwm / MB,
      peakAnonMb: peak.anon / MB,
      peakFileMb: peak.file / MB,
      idleRssMb: idle.rss / MB,
      idleAnonMb: idle.anon / MB,
      idleFileMb: idle.file / MB,
      idleHeapUsedMb: idleHeap.heapUsed / MB,
      idleHeapTotalMb: idleHeap.heapTotal / MB,
      heapPeak: { heapUsedMb: heapPeak.heapUsed / MB, heapTotalMb: heapPeak.heapTotal / MB, externalMb: heapPeak.external / MB, arrayBuffersMb: heapPeak.arrayBuffers / MB, rssMb: heapPeak.rss / MB, atS: heapPeak.at / 1000 },
      cpuPerEmail: { worker: cpu('worker'), api: cpu('api'), postgres: cpu('postgres'), parentSink: cpu('parent'), machine: cpu('machine') },
      checks: { rows: rows.n, sent: rows.sent, contacts: rows.contacts, events, atSink: t.length, distinct, totalRecipients: campaign.totalRecipients },
      workerReadyMs,
      timeline,
    };
    const s = (ms: number) => `${f(ms / 1000, 1)} s`;
    console.log(`\nsend answered after ${f(sendAnsweredMs)} ms`);
    console.log(`email rows: first created at +${s(r.firstRowMs)}, last batch at +${s(r.lastRowMs)} (materialisation inside the send: ${s(r.lastRowMs - r.firstRowMs)}; each committed batch is in the delivery queue)`);
    console.log(`deliveries: first at +${s(r.firstDeliveredMs)}, all ${f(N)} at +${s(allDeliveredMs)} → ${f(r.perSecond)} emails/s from the send request (${f(r.sinkPerSecond)}/s first → last at the sink)`);
    console.log(`campaign: completed_at +${s(r.completedMs)}, read SENT at +${s(sentSeenMs)} (${s(sentSeenMs - allDeliveredMs)} after the last delivery)`);
    console.log(`worker memory: peak VmRSS sampled ${f(r.peakRssMb)} MB (anonymous ${f(r.peakAnonMb)}, file-backed ${f(r.peakFileMb)}) at +${f(r.peakAtS)} s, VmHWM ${f(r.hwmMb)} MB (idle ${f(r.idleRssMb)} MB); largest V8 heap used ${f(r.heapPeak.heapUsedMb)} MB of ${f(r.heapPeak.heapTotalMb)} MB, external ${f(r.heapPeak.externalMb)} MB, array buffers ${f(r.heapPeak.arrayBuffersMb)} MB (RSS ${f(r.heapPeak.rssMb)} MB then, at +${f(r.heapPeak.atS)} s)`);
    console.log(`CPU ms per email: worker ${r.cpuPerEmail.worker.toFixed(2)}, API ${r.cpuPerEmail.api.toFixed(2)}, PostgreSQL ${r.cpuPerEmail.postgres.toFixed(2)}, sink + this script ${r.cpuPerEmail.parentSink.toFixed(2)}, machine busy ${r.cpuPerEmail.machine.toFixed(2)} (other processes ${(r.cpuPerEmail.machine - r.cpuPerEmail.worker - r.cpuPerEmail.api - r.cpuPerEmail.postgres - r.cpuPerEmail.parentSink).toFixed(2)})`);
    console.log(`checks: ${f(rows.n)} email rows for ${f(rows.contacts)} distinct contacts, ${f(rows.sent)} SENT, ${f(events)} email.sent events, ${f(t.length)} messages at the sink to ${f(distinct)} distinct recipients (duplicates ${t.length - distinct}), totalRecipients ${String(campaign.totalRecipients)}`);
    if (statements.length) {
      console.log(`\nstatements of the send by total time (pg_stat_statements; calls per email, ms per email):`);
      for (const st of statements) console.log(`  ${(st.calls / N).toFixed(3).padStart(7)}  ${(st.ms / N).toFixed(3).padStart(6)} ms  ${st.query.replace(/\s+/g, ' ').slice(0, 150)}`);
    }
    const ok = rows.sent === N && distinct === N && t.length === N;
    console.log(`targets: worker peak RSS ${f(Math.max(r.peakRssMb, r.hwmMb))} MB ≤ 300 MB: ${Math.max(r.peakRssMb, r.hwmMb) <= 300 ? 'met' : 'MISSED'}; every contact exactly once: ${ok ? 'yes' : 'NO'}`);
    return r;
  } finally {
    for (const t of snapshots) clearTimeout(t);
    clearInterval(progress);
    clearInterval(rssTimer);
    clearInterval(heapTimer);
  }
}

runBench('bench:campaign', TIMEOUT_MS, async () => {
  const cluster = await startCluster('campaign');
  const children: Child[] = [];
  let sink: Sink | undefined;
  try {
    console.log(`machine: ${machine(cluster.version)}`);
    console.log(`PostgreSQL settings: ${JSON.stringify(cluster.settings)}`);
    const { knex } = cluster;
    const project = await benchProject();
    const t0 = performance.now();
    await knex.raw(`INSERT INTO contacts (project_id, email, subscribed, data)
      SELECT ?::uuid, 'reader-' || g || '@example.org', true, jsonb_build_object('firstName', 'Reader ' || g, 'plan', CASE WHEN g % 3 = 0 THEN 'pro' ELSE 'free' END)
      FROM generate_series(1, ?::int) g`, [project.id, N]);
    await knex.raw('VACUUM ANALYZE');
    console.log(`seeded ${f(N)} subscribed contacts in ${f((performance.now() - t0) / 1000, 1)} s (one project, verified example.com)`);

    const results: Record<string, unknown> = { machine: machine(cluster.version), settings: cluster.settings, contacts: N };
    if (ONLY !== 'send') results.materialisation = await materialisation(cluster, project.id);
    if (ONLY !== 'materialise') {
      sink = await startSink();
      results.send = await send(cluster, project, children, sink);
    }
    if (process.env.BENCH_JSON) fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify(results, null, 2));
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await sink?.close();
    await cluster.stop();
  }
});
