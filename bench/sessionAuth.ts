/**
 * Authentication by a person's session against authentication by a key (issue 27: a session must cost no more than a
 * key, ≥ 0.95 ×), side by side in one run on one Herald API process: POST /v1/send and GET /contacts, each driven with
 * a secret key and with a session cookie (+ Herald-Project, + Origin on the POST), in interleaved rounds (key, session,
 * key, session, ...; each round starts with the side the previous one ended with) so that neither side has the warmer
 * database or the quieter minute. On a shared machine a round's req/s moves with the others' load, so the figure is
 * the median of the per-round ratios (each ratio from two runs a few seconds apart), with the API process's and
 * PostgreSQL's CPU per request beside req/s: CPU per request is what a session costs more than a key, whatever the
 * load. Before the rounds, EXPLAIN ANALYZE of both admission statements (people/sessions.ts ADMIT_SESSIONS,
 * projects/access.ts admit) shows their plans, and /health's req/s (before and after) says how loaded the machine was.
 *
 *   npx tsx bench/sessionAuth.ts          (npm run bench:session)
 *
 * Starts its own embedded PostgreSQL in a temporary directory and the Herald API exactly as `npm run api` runs it
 * (bench/lib/herald-child.ts); autocannon (in this process) drives it. No worker runs: sends are queued, not delivered.
 *
 * Environment: BENCH_DURATION (s per run, default 10), BENCH_WARMUP (s, default 3), BENCH_ROUNDS (default 6),
 * BENCH_CONNECTIONS (default 32), BENCH_CONTACTS (default 50000), BENCH_LOG_LEVEL (default info), BENCH_JSON=file,
 * BENCH_PG_STAT=1 (in the first round, each case's statements per request: one admission statement either way).
 */
import fs from 'node:fs';
import os from 'node:os';
import autocannon from 'autocannon';
import type { Knex } from 'knex';
import { createUser } from '../people/users';
import { printTopStatements, startCluster } from './lib/cluster';
import { benchProject, prepareEngineSchema, startHeraldChild } from './lib/herald';
import { cpuMs, machine, machineBusyMs, runBench, type Child } from './lib/proc';
import { ADMIT_SESSIONS } from '../people/sessions';
import { tokenHash } from '../people/tokens';
import { ADMIT_KEYS, windowBindings } from '../projects/access';
import { startSink, type Sink } from './lib/sink';

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const EXISTING_CONTACTS = Number(process.env.BENCH_CONTACTS ?? 50_000);
// heraldEnv's PUBLIC_URL: the Origin a browser on Herald's own page sends.
const ORIGIN = 'http://127.0.0.1:3000';
const PASSWORD = 'bench password, long enough';

let counter = 0;
const sendBody = () => JSON.stringify({
  from: 'Bench Shop <orders@example.com>', to: `session-${counter++}@example.org`, subject: 'Your order has shipped', body: '<p>Hello</p>',
});

interface Run { name: string; rps: number[]; p50: number[]; p99: number[]; apiMs: number[]; pgMs: number[]; non2xx: number }

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

async function drive(url: string, method: 'GET' | 'POST', headers: Record<string, string>, seconds: number) {
  return autocannon({
    url, method, connections: CONNECTIONS, duration: seconds, timeout: 30,
    headers: method === 'POST' ? { 'content-type': 'application/json', ...headers } : headers,
    ...(method === 'POST' ? { requests: [{ setupRequest: (req: object) => ({ ...req, body: sendBody() }) }] } : {}),
  });
}

runBench('bench:session', 10 * 60_000, async () => {
  const cluster = await startCluster('session');
  const children: Child[] = [];
  let sink: Sink | undefined;
  try {
    console.log(`machine: ${machine(cluster.version)}`);
    const { knex } = cluster;
    const project = await benchProject();
    await knex.raw(`INSERT INTO contacts (project_id, email, subscribed, data)
      SELECT ?::uuid, 'existing-' || g || '@example.org', g % 2 = 0, '{}'::jsonb FROM generate_series(1, ?::int) g`, [project.id, EXISTING_CONTACTS]);
    // A database with people in it: 10,000 accounts with a session each besides the bench's own.
    await knex.raw(`INSERT INTO users (email, password_hash) SELECT 'person' || g || '@example.org', 'x' FROM generate_series(1, 10000) g`);
    await knex.raw(`INSERT INTO sessions (token_hash, user_id, expires_at) SELECT sha256(convert_to(id::text, 'UTF8')), id, now() + interval '1 day' FROM users`);
    const user = await createUser(knex, { email: 'bench-admin@example.org', password: PASSWORD });
    await knex.raw('INSERT INTO memberships (project_id, user_id, role) VALUES (?, ?, ?)', [project.id, user.id, 'admin']);
    await knex.raw('ANALYZE');

    sink = await startSink();
    await prepareEngineSchema(cluster, sink.url);
    const herald = startHeraldChild('herald api', cluster, 'api', { PORT: '0', API_RATE_LIMIT_PER_MINUTE: '1000000000' });
    children.push(herald);
    const base = `http://127.0.0.1:${(await herald.ready).port as number}`;

    const login = await fetch(`${base}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json', origin: ORIGIN }, body: JSON.stringify({ email: user.email, password: PASSWORD }) });
    if (login.status !== 200) throw new Error(`login answered ${login.status}`);
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;

    const key = { authorization: `Bearer ${project.secretKey}` };
    const session = { cookie, 'herald-project': project.id, origin: ORIGIN };
    const cases: { name: string; path: string; method: 'GET' | 'POST'; headers: Record<string, string> }[] = [
      { name: 'POST /v1/send, key', path: '/v1/send', method: 'POST', headers: key },
      { name: 'POST /v1/send, session', path: '/v1/send', method: 'POST', headers: session },
      { name: 'GET /contacts, key', path: '/contacts?limit=20', method: 'GET', headers: key },
      { name: 'GET /contacts, session', path: '/contacts?limit=20', method: 'GET', headers: session },
    ];
    // The plans of both admissions, as each runs per request (the session's token hash, the key's lookup).
    const plan = async (name: string, sql: string, bindings: readonly Knex.RawBinding[]) => {
      const { rows } = await knex.raw(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${sql}`, bindings);
      const lines = (rows as { 'QUERY PLAN': string }[]).map((r) => r['QUERY PLAN']);
      const scans = lines.filter((l) => /Scan|Join|Insert|Update/.test(l)).map((l) => l.trim().replace(/\s+\(actual.*$/, '')).slice(0, 40);
      console.log(`${name}: ${lines.find((l) => l.startsWith('Execution Time'))}, ${lines.find((l) => l.startsWith('Planning Time'))}`);
      for (const l of scans) console.log(`    ${l}`);
    };
    const token = decodeURIComponent(cookie.slice(cookie.indexOf('=') + 1));
    await plan('session admission (ADMIT_SESSIONS)', ADMIT_SESSIONS, [[tokenHash(token).toString('hex')], [project.id], 30, ...windowBindings(Date.now())]);
    const lookup = project.secretKey.slice(3, 19);
    await plan('key admission (projects/access.ts ADMIT_KEYS)', ADMIT_KEYS, [[lookup], [lookup], ...windowBindings(Date.now())]);

    const health = async () => {
      const r = await autocannon({ url: `${base}/health`, connections: CONNECTIONS, duration: 3 });
      return r['2xx'] / r.duration;
    };
    const healthBefore = await health();
    console.log(`\nGET /health (the machine's load): ${Math.round(healthBefore)} req/s before the rounds`);
    console.log(`load: ${CONNECTIONS} connections, ${ROUNDS} rounds of ${DURATION} s per case (warm-up ${WARMUP} s each), ${EXISTING_CONTACTS} contacts\n`);
    const runs: Run[] = cases.map((c) => ({ name: c.name, rps: [], p50: [], p99: [], apiMs: [], pgMs: [], non2xx: 0 }));
    for (const c of cases) await drive(base + c.path, c.method, c.headers, WARMUP);
    const pgPid = cluster.postmasterPid();
    const busy0 = machineBusyMs();
    const started = Date.now();
    for (let round = 0; round < ROUNDS; round++) {
      // Key, session, then session, key: each side goes first in every other round.
      const order = round % 2 === 0 ? [0, 1, 2, 3] : [1, 0, 3, 2];
      for (const i of order) {
        const c = cases[i]!;
        await printTopStatements(cluster, 1, 0); // BENCH_PG_STAT=1: from zero for this run
        const before = { api: cpuMs(herald.pid), pg: cpuMs(pgPid, true) };
        const r = await drive(base + c.path, c.method, c.headers, DURATION);
        const n = Math.max(1, r['2xx']);
        runs[i]!.rps.push(r['2xx'] / r.duration);
        runs[i]!.p50.push(r.latency.p50);
        runs[i]!.p99.push(r.latency.p99);
        runs[i]!.apiMs.push((cpuMs(herald.pid) - before.api) / n);
        runs[i]!.pgMs.push((cpuMs(pgPid, true) - before.pg) / n);
        runs[i]!.non2xx += r.non2xx + r.errors;
        console.log(`round ${round + 1}: ${c.name}: ${Math.round(r['2xx'] / r.duration)} req/s, API ${runs[i]!.apiMs.at(-1)!.toFixed(3)} ms/req, postgres ${runs[i]!.pgMs.at(-1)!.toFixed(3)} ms/req`);
        if (round === 0) await printTopStatements(cluster, n, 4); // the statements per request of each case, once
      }
    }
    const healthAfter = await health();
    console.log(`\nGET /health (the machine's load): ${Math.round(healthAfter)} req/s after the rounds`);
    console.log('\n| case | req/s (median of rounds) | p50 ms | p99 ms | CPU ms/req: API | postgres | non-2xx + errors |');
    console.log('|---|---|---|---|---|---|---|');
    for (const r of runs) console.log(`| ${r.name} | ${Math.round(median(r.rps))} | ${median(r.p50).toFixed(1)} | ${median(r.p99).toFixed(1)} | ${median(r.apiMs).toFixed(3)} | ${median(r.pgMs).toFixed(3)} | ${r.non2xx} |`);
    /** Per round, session / key; the median of the rounds. */
    const ratios = (s: number, k: number) => runs[s]!.rps.map((x, i) => x / runs[k]!.rps[i]!);
    const cpuRatios = (s: number, k: number) => runs[s]!.apiMs.map((x, i) => x / runs[k]!.apiMs[i]!);
    const line = (name: string, s: number, k: number) => {
      const rs = ratios(s, k);
      return `${name}: session / key per round ${rs.map((x) => x.toFixed(2)).join(', ')}; median ${median(rs).toFixed(2)} ≥ 0.95: ${median(rs) >= 0.95 ? 'met' : 'MISSED'}`
        + ` (API CPU per request, session / key: median ${median(cpuRatios(s, k)).toFixed(2)})`;
    };
    console.log(`\n${line('POST /v1/send', 1, 0)}\n${line('GET /contacts', 3, 2)}`);
    console.log(`non-2xx and errors ${runs.reduce((n, r) => n + r.non2xx, 0)}: ${runs.every((r) => r.non2xx === 0) ? 'met' : 'MISSED'}`);
    console.log(`machine: /health ${Math.round(healthBefore)} req/s before, ${Math.round(healthAfter)} after; the machine's CPUs ${((100 * (machineBusyMs() - busy0)) / ((Date.now() - started) * os.availableParallelism())).toFixed(0)} % busy over the rounds (this run's own processes included)`);
    if (process.env.BENCH_JSON) fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify({ machine: machine(cluster.version), healthBefore, healthAfter, runs }, null, 2));
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await sink?.close();
    await cluster.stop();
  }
});
