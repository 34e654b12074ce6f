/**
 * POST /v1/verify: requests/s with a warm DNS cache, and latency (p99) with a cold one, against a DNS server on loopback.
 *
 *   npx tsx bench/verify.ts          (npm run bench:verify)
 *
 * Starts its own embedded PostgreSQL in a temporary directory, a DNS server (dns2, the tests' test/support/dns.ts) on
 * loopback in this process, and the Herald API as `npm run api` runs it (startHerald, roles api only) with
 * DNS_SERVERS pointing at that server. autocannon (in this process) then drives it:
 * - warm: addresses at BENCH_WARM_DOMAINS (default 200) domains, each asked once before the measure, so every DNS
 *   answer comes from the API's cache (checked: the DNS server counts no query during the measure);
 * - cold: BENCH_COLD_REQUESTS (default 5000) requests, each at a domain never asked before (three DNS queries: MX, A,
 *   AAAA), so every answer waits for DNS.
 * Each request also passes authentication and the rate limiter (two PostgreSQL statements), as any API call does.
 *
 * Environment: BENCH_DURATION (s, default 20), BENCH_WARMUP (s, default 5), BENCH_CONNECTIONS (default 32),
 * BENCH_WARM_DOMAINS, BENCH_COLD_REQUESTS, BENCH_LOG_LEVEL (default warn), BENCH_JSON=file.
 */
import fs from 'node:fs';
import autocannon from 'autocannon';
import { startDnsServer } from '../test/support/dns';
import { startCluster } from './lib/cluster';
import { startHeraldChild } from './lib/herald';
import { cpuMs, machine, runBench, type Child } from './lib/proc';
import { createProject } from '../projects/service';

const DURATION = Number(process.env.BENCH_DURATION ?? 20);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const WARM_DOMAINS = Number(process.env.BENCH_WARM_DOMAINS ?? 200);
const COLD_REQUESTS = Number(process.env.BENCH_COLD_REQUESTS ?? 5000);

interface Measured { name: string; rps: number; p50: number; p90: number; p99: number; max: number; ok: number; non2xx: number; errors: number; dnsQueries: number; cpuMsPerReq: number }

function summary(name: string, r: autocannon.Result, dnsQueries: number, cpu: number): Measured {
  return {
    name, rps: r['2xx'] / r.duration, p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max,
    ok: r['2xx'], non2xx: r.non2xx, errors: r.errors + r.timeouts, dnsQueries, cpuMsPerReq: cpu / Math.max(1, r['2xx']),
  };
}

runBench('bench:verify', 10 * 60_000, async () => {
  const cluster = await startCluster('verify');
  const dns = await startDnsServer();
  const children: Child[] = [];
  try {
    console.log(`machine: ${machine(cluster.version)}`);
    const zone = { MX: ['mx1.mail.bench.example', 'mx2.mail.bench.example'], A: ['192.0.2.1'], AAAA: ['2001:db8::1'] };
    const warm = Array.from({ length: WARM_DOMAINS }, (_, i) => `warm-${i}.example.com`);
    const cold = Array.from({ length: COLD_REQUESTS + CONNECTIONS * 2 }, (_, i) => `cold-${i}.example.net`);
    for (const d of [...warm, ...cold]) dns.set(d, zone);
    const project = await createProject('Bench verify');

    const herald = startHeraldChild('herald api', cluster, 'api', {
      PORT: '0', API_RATE_LIMIT_PER_MINUTE: '1000000000', LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
      DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2000', DNS_TRIES: '2', VERIFY_DNS_BUDGET_MS: '3000',
    });
    children.push(herald);
    const port = (await herald.ready).port as number;
    const url = `http://127.0.0.1:${port}/v1/verify`;
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${project.secretKey}` };
    let n = 0;
    const warmBody = () => JSON.stringify({ email: `user${n++}+tag@${warm[n % warm.length]}` });
    let c = 0;
    const coldBody = () => JSON.stringify({ email: `user@${cold[c++]}` });

    // Fill the cache: every warm domain once.
    for (const d of warm) {
      const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ email: `first@${d}` }) });
      const body = (await res.json()) as { data: { valid: boolean } };
      if (!body.data.valid) throw new Error(`warm-up: ${d} not valid: ${JSON.stringify(body)}`);
    }
    const drive = (opts: Partial<autocannon.Options>, body: () => string) => autocannon({
      url, method: 'POST', connections: CONNECTIONS, timeout: 30, headers, ...opts,
      requests: [{ setupRequest: (req) => ({ ...req, body: body() }) }],
    });

    console.log(`warm: warm-up ${WARMUP} s, measure ${DURATION} s at ${CONNECTIONS} connections over ${WARM_DOMAINS} cached domains …`);
    await drive({ duration: WARMUP }, warmBody);
    let queries = dns.queries.length;
    let cpu = cpuMs(herald.pid);
    const warmR = await drive({ duration: DURATION }, warmBody);
    const warmM = summary('warm cache', warmR, dns.queries.length - queries, cpuMs(herald.pid) - cpu);

    console.log(`cold: ${COLD_REQUESTS} requests at ${CONNECTIONS} connections, each at a domain never asked before …`);
    queries = dns.queries.length;
    cpu = cpuMs(herald.pid);
    const coldR = await drive({ amount: COLD_REQUESTS }, coldBody);
    const coldM = summary('cold cache', coldR, dns.queries.length - queries, cpuMs(herald.pid) - cpu);

    const results = [warmM, coldM];
    console.log('\n| run | req/s | p50 ms | p90 ms | p99 ms | max ms | 2xx | non-2xx | errors | DNS queries | API CPU ms/req |');
    console.log('|---|---|---|---|---|---|---|---|---|---|---|');
    for (const r of results) {
      console.log(`| ${r.name} | ${Math.round(r.rps)} | ${r.p50} | ${r.p90} | ${r.p99} | ${r.max} | ${r.ok} | ${r.non2xx} | ${r.errors} | ${r.dnsQueries} | ${r.cpuMsPerReq.toFixed(2)} |`);
    }
    console.log(`\nchecks: warm run asked DNS ${warmM.dnsQueries} times (expected 0); cold run asked ${coldM.dnsQueries} times for ${coldM.ok} answers (expected 3 each: MX, A, AAAA)`);
    if (process.env.BENCH_JSON) fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify({ machine: machine(cluster.version), results }, null, 2));
  } finally {
    await Promise.all(children.map((ch) => ch.stop()));
    await dns.close();
    await cluster.stop();
  }
});
