/**
 * Authentication by a person's session against authentication by a key (issue 27: a session must cost no more than a
 * key, ≥ 0.95 ×), side by side in one run on one Herald API process: POST /v1/send and GET /contacts, each driven with
 * a secret key and with a session cookie (+ Herald-Project, + Origin on the POST), in alternating rounds so that
 * neither side has the warmer database.
 *
 *   npx tsx bench/sessionAuth.ts          (npm run bench:session)
 *
 * Starts its own embedded PostgreSQL in a temporary directory and the Herald API exactly as `npm run api` runs it
 * (bench/lib/herald-child.ts); autocannon (in this process) drives it. No worker runs: sends are queued, not delivered.
 *
 * Environment: BENCH_DURATION (s per round, default 10), BENCH_WARMUP (s, default 3), BENCH_ROUNDS (default 2),
 * BENCH_CONNECTIONS (default 32), BENCH_CONTACTS (default 50000), BENCH_LOG_LEVEL (default info), BENCH_JSON=file.
 */
import fs from 'node:fs';
import autocannon from 'autocannon';
import { createUser } from '../people/users';
import { startCluster } from './lib/cluster';
import { benchProject, prepareEngineSchema, startHeraldChild } from './lib/herald';
import { machine, runBench, type Child } from './lib/proc';
import { startSink, type Sink } from './lib/sink';

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const EXISTING_CONTACTS = Number(process.env.BENCH_CONTACTS ?? 50_000);
// heraldEnv's PUBLIC_URL: the Origin a browser on Herald's own page sends.
const ORIGIN = 'http://127.0.0.1:3000';
const PASSWORD = 'bench password, long enough';

let counter = 0;
const sendBody = () => JSON.stringify({
  from: 'Bench Shop <orders@example.com>', to: `session-${counter++}@example.org`, subject: 'Your order has shipped', body: '<p>Hello</p>',
});

interface Run { name: string; rps: number[]; p50: number[]; p99: number[]; non2xx: number }

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
    console.log(`load: ${CONNECTIONS} connections, ${ROUNDS} rounds of ${DURATION} s per case (warm-up ${WARMUP} s each), ${EXISTING_CONTACTS} contacts\n`);
    const runs: Run[] = cases.map((c) => ({ name: c.name, rps: [], p50: [], p99: [], non2xx: 0 }));
    for (const c of cases) await drive(base + c.path, c.method, c.headers, WARMUP);
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate the order of key and session in each round.
      const order = round % 2 === 0 ? [0, 1, 2, 3] : [1, 0, 3, 2];
      for (const i of order) {
        const c = cases[i]!;
        const r = await drive(base + c.path, c.method, c.headers, DURATION);
        runs[i]!.rps.push(r['2xx'] / r.duration);
        runs[i]!.p50.push(r.latency.p50);
        runs[i]!.p99.push(r.latency.p99);
        runs[i]!.non2xx += r.non2xx + r.errors;
        console.log(`round ${round + 1}: ${c.name}: ${Math.round(r['2xx'] / r.duration)} req/s`);
      }
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    console.log('\n| case | req/s | p50 ms | p99 ms | non-2xx + errors |');
    console.log('|---|---|---|---|---|');
    for (const r of runs) console.log(`| ${r.name} | ${Math.round(mean(r.rps))} | ${mean(r.p50).toFixed(1)} | ${mean(r.p99).toFixed(1)} | ${r.non2xx} |`);
    const ratio = (s: number, k: number) => mean(runs[s]!.rps) / mean(runs[k]!.rps);
    const targets = [
      `POST /v1/send: session ${ratio(1, 0).toFixed(2)} × key ≥ 0.95: ${ratio(1, 0) >= 0.95 ? 'met' : 'MISSED'}`,
      `GET /contacts: session ${ratio(3, 2).toFixed(2)} × key ≥ 0.95: ${ratio(3, 2) >= 0.95 ? 'met' : 'MISSED'}`,
      `non-2xx and errors ${runs.reduce((n, r) => n + r.non2xx, 0)}: ${runs.every((r) => r.non2xx === 0) ? 'met' : 'MISSED'}`,
    ];
    console.log(`\ntargets: ${targets.join('; ')}`);
    if (process.env.BENCH_JSON) fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify({ machine: machine(cluster.version), runs }, null, 2));
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await sink?.close();
    await cluster.stop();
  }
});
