/**
 * One project's abusive sends against another project's requests, in one run (issue 13: a 499-byte send with nested
 * Liquid loops blocked /health for 6.6 s before render budgets and render threads).
 *
 *   npx tsx bench/abuse.ts          (npm run bench:abuse)
 *
 * Starts its own embedded PostgreSQL and the Herald API as `npm run api` runs it (a child process). Two phases of
 * BENCH_DURATION seconds each, measured the same way:
 * - quiet: the probes alone;
 * - abuse: the probes while BENCH_ABUSERS loops of project A send, back to back, the attack's templates to 20
 *   recipients each (nested loops that write megabytes, and nested loops that only take time);
 * The probes, from project B: GET /health every 20 ms, and a one-recipient POST /v1/send every 50 ms. Each probe's
 * latency is recorded; the report gives p50, p99 and max per phase, and the ratio abuse / quiet.
 *
 * Environment: BENCH_DURATION (s, default 15), BENCH_ABUSERS (default 4), BENCH_JSON=file.
 */
import fs from 'node:fs';
import { startCluster } from './lib/cluster';
import { benchProject, prepareEngineSchema, startHeraldChild } from './lib/herald';
import { cpuMs, machine, runBench, sleep, type Child } from './lib/proc';
import { startSink, type Sink } from './lib/sink';

const DURATION = Number(process.env.BENCH_DURATION ?? 15);
const ABUSERS = Number(process.env.BENCH_ABUSERS ?? 4);

const ATTACKS = [
  '{% for a in (1..3000) %}{% for b in (1..3000) %}<p>{{ a }} {{ b }} xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx</p>{% endfor %}{% endfor %}',
  '{% for a in (1..100000) %}{% for b in (1..100000) %}{% endfor %}{% endfor %}',
];
const TWENTY = Array.from({ length: 20 }, (_, i) => `victim-${i}@example.org`);

interface Series { name: string; ms: number[]; failures: number }

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]! : NaN;
};

async function timed(url: string, init: RequestInit, series: Series): Promise<void> {
  const started = performance.now();
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
    await res.arrayBuffer();
    if (res.status !== 200) series.failures++;
  } catch {
    series.failures++;
  }
  series.ms.push(performance.now() - started);
}

/** Runs `probe` every `everyMs` (not waiting for the previous one: a stalled server shows as latency) until `until`. */
async function every(everyMs: number, until: number, probe: () => Promise<void>): Promise<void> {
  const inFlight: Promise<void>[] = [];
  while (performance.now() < until) {
    inFlight.push(probe());
    await sleep(everyMs);
  }
  await Promise.all(inFlight);
}

async function phase(base: string, keyB: string, keyA: string, abusive: boolean, childPid: number) {
  const health: Series = { name: 'GET /health', ms: [], failures: 0 };
  const send: Series = { name: 'POST /v1/send (other project)', ms: [], failures: 0 };
  const attacks = { sent: 0, statuses: new Map<number, number>() };
  const until = performance.now() + DURATION * 1000;
  let rssMax = 0;
  const rss = setInterval(() => {
    const m = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${childPid}/status`, 'utf8'));
    if (m) rssMax = Math.max(rssMax, Number(m[1]) / 1024);
  }, 100);
  const cpu0 = cpuMs(childPid);
  let n = 0;
  const loops = abusive ? Array.from({ length: ABUSERS }, async (_, k) => {
    for (let i = 0; performance.now() < until; i++) {
      const res = await fetch(`${base}/v1/send`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keyA}`, 'content-type': 'application/json' },
        body: JSON.stringify({ from: 'a@example.com', to: TWENTY, subject: 'Hi', body: ATTACKS[(i + k) % ATTACKS.length] }),
      });
      await res.arrayBuffer();
      attacks.sent++;
      attacks.statuses.set(res.status, (attacks.statuses.get(res.status) ?? 0) + 1);
    }
  }) : [];
  await Promise.all([
    every(20, until, () => timed(`${base}/health`, {}, health)),
    every(50, until, () => timed(`${base}/v1/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keyB}`, 'content-type': 'application/json' },
      body: JSON.stringify({ from: 'b@example.com', to: `probe-${abusive ? 'a' : 'q'}-${n++}@example.org`, subject: 'Receipt {{ n }}', body: '<p>Thanks, {{ name }}</p>', data: { n, name: 'Ada' } }),
    }, send)),
    ...loops,
  ]);
  clearInterval(rss);
  return { health, send, attacks, rssMax, cpuS: (cpuMs(childPid) - cpu0) / 1000 };
}

runBench('bench:abuse', 10 * 60_000, async () => {
  const cluster = await startCluster('abuse');
  let herald: Child | undefined;
  let sink: Sink | undefined;
  try {
    console.log(`machine: ${machine(cluster.version)}`);
    console.log(`phases of ${DURATION} s; abuse: ${ABUSERS} loops of 20-recipient sends with the attack's templates\n`);
    const [a, b] = [await benchProject(), await benchProject()];
    sink = await startSink();
    await prepareEngineSchema(cluster, sink.url);
    herald = startHeraldChild('herald api', cluster, 'api', { PORT: '0', API_RATE_LIMIT_PER_MINUTE: '1000000000', LOG_LEVEL: 'warn' });
    const port = (await herald.ready).port as number;
    const base = `http://127.0.0.1:${port}`;
    // Warm-up: the render thread starts on first use.
    await fetch(`${base}/v1/send`, { method: 'POST', headers: { authorization: `Bearer ${b.secretKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ from: 'b@example.com', to: 'warm@example.org', subject: 'x', body: 'y' }) });

    const quiet = await phase(base, b.secretKey, a.secretKey, false, herald.pid);
    const abuse = await phase(base, b.secretKey, a.secretKey, true, herald.pid);

    const f = (x: number) => x.toFixed(1);
    console.log('| probe | phase | requests | non-200 | p50 ms | p99 ms | max ms |');
    console.log('|---|---|---|---|---|---|---|');
    for (const [name, q, x] of [['GET /health', quiet.health, abuse.health], ['POST /v1/send (other project)', quiet.send, abuse.send]] as const) {
      for (const [label, s] of [['quiet', q], ['abuse', x]] as const) {
        console.log(`| ${name} | ${label} | ${s.ms.length} | ${s.failures} | ${f(pct(s.ms, 50))} | ${f(pct(s.ms, 99))} | ${f(Math.max(...s.ms))} |`);
      }
    }
    console.log(`\nabusive sends: ${abuse.attacks.sent} (${[...abuse.attacks.statuses].map(([s, c]) => `${c}× ${s}`).join(', ')})`);
    console.log(`API process: peak RSS ${Math.round(quiet.rssMax)} MB quiet, ${Math.round(abuse.rssMax)} MB under abuse; CPU ${quiet.cpuS.toFixed(1)} s / ${abuse.cpuS.toFixed(1)} s (main thread and render threads)`);
    console.log(`ratios abuse / quiet: /health p99 ${(pct(abuse.health.ms, 99) / pct(quiet.health.ms, 99)).toFixed(2)}, other project's send p99 ${(pct(abuse.send.ms, 99) / pct(quiet.send.ms, 99)).toFixed(2)}`);
    const stored = Number((await cluster.knex('emails').where('project_id', a.id).count('* as n').first())!.n);
    console.log(`emails stored for the abusive project: ${stored}`);
    if (process.env.BENCH_JSON) {
      fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify({ quiet, abuse, stored }, (_k, v) => (v instanceof Map ? Object.fromEntries(v) : v), 2));
    }
  } finally {
    await herald?.stop();
    await sink?.close();
    await cluster.stop();
  }
});
