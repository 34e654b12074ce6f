/**
 * SMTP submission throughput beside POST /v1/send, at the same concurrency, in one run.
 *
 *   npx tsx bench/smtp.ts          (npm run bench:smtp)
 *
 * Starts its own embedded PostgreSQL in a temporary directory, and one Herald API process on it exactly as `npm run
 * api` runs it, with its SMTP submission listener. Then, for each way in, a warm-up and a measure:
 * - smtp: nodemailer with a pool of BENCH_CONNECTIONS (default 8) connections, STARTTLS (the generated self-signed
 *   certificate) and AUTH PLAIN with the project's secret key, as an app would configure it; each message is a small
 *   HTML mail (composed once) to a distinct new envelope recipient. A message counts when the listener answered 250
 *   (stored).
 * - http: autocannon at the same number of connections, POST /v1/send with the same From, subject and HTML.
 * No worker runs during the measure: neither way in waits for delivery.
 *
 * Environment: BENCH_DURATION (s, default 15), BENCH_WARMUP (s, default 3), BENCH_CONNECTIONS (default 8), BENCH_HTTP=0 (SMTP
 * and the floor only: the interleaved before/after pairs of BENCHMARKS.md 17 and 19 measure SMTP alone), BENCH_SMTP_RATE
 * (messages/s offered, paced over the pool; default 0, as fast as it goes: at a fixed rate below both sides' capacity,
 * the CPU per message of two builds compares like with like on a shared machine, where a slower run would otherwise
 * batch less and so spend more per message), BENCH_CPU_PROF=1
 * (V8 profile of the API process into BENCH_PROFILE_DIR, default $TMPDIR/herald-bench-profiles), BENCH_PG_STAT=1 (the
 * statements per message).
 */
import autocannon from 'autocannon';
import nodemailer, { type Transporter } from 'nodemailer';
import MailComposer from 'nodemailer/lib/mail-composer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport';
import { printTopStatements, startCluster } from './lib/cluster';
import { benchProject, prepareEngineSchema, startHeraldChild } from './lib/herald';
import { cpuProfileArgs, cpuMs, freePort, machine, machineBusyMs, runBench, spawnChild } from './lib/proc';
import { startSink } from './lib/sink';

const DURATION = Number(process.env.BENCH_DURATION ?? 15);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8);
/** Messages per second offered over the pool (0: as fast as the pool goes). */
const RATE = Number(process.env.BENCH_SMTP_RATE ?? 0);

const HTML = `<html><body><h1>Hello Ada</h1><p>Your order <b>#100042</b> has shipped and should arrive within three working days.</p>
<p>You can follow it at any time from your account page. If anything is wrong with it, reply to this email and we will sort it out.</p>
<p>Thank you for shopping with us.</p></body></html>`;

let counter = 0;
const nextRecipient = () => `customer-${counter++}@example.org`;

interface Cpu { api: number; pg: number; client: number; machine: number }
interface Measured { name: string; perSecond: number; p50: number; p99: number; ok: number; failed: number; cpu: Cpu }
const perMessage = (c: Cpu, n: number): Cpu => ({ api: c.api / n, pg: c.pg / n, client: c.client / n, machine: c.machine / n });

/** Keeps CONNECTIONS messages in flight over the pool for `seconds`; latencies of the accepted ones. */
/**
 * The message, built once (MailComposer) and sent with a distinct envelope recipient each time: the client's CPU, on
 * this machine shared with the server, goes to the SMTP dialogue rather than to composing MIME again for each message.
 */
let message: Buffer;

async function driveSmtp(transport: Transporter, seconds: number, rate: number): Promise<{ ok: number; failed: number; latencies: number[]; ms: number }> {
  const until = performance.now() + seconds * 1000;
  const latencies: number[] = [];
  let failed = 0;
  const started = performance.now();
  let slot = 0;
  const lane = async () => {
    while (performance.now() < until) {
      if (rate > 0) {
        // The next slot of the schedule, whichever lane is free; a run behind it sends at once.
        const due = started + (slot++ * 1000) / rate;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        if (performance.now() >= until) break;
      }
      const t0 = performance.now();
      try {
        await transport.sendMail({ envelope: { from: 'orders@example.com', to: [nextRecipient()] }, raw: message });
        latencies.push(performance.now() - t0);
      } catch {
        failed++;
      }
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, lane));
  return { ok: latencies.length, failed, latencies, ms: performance.now() - started };
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;

runBench('bench:smtp', 10 * 60_000, async () => {
  const cluster = await startCluster('smtp');
  const sink = await startSink();
  try {
    console.log(`machine: ${machine(cluster.version)}`);
    console.log(`load: ${CONNECTIONS} connections each way${RATE > 0 ? `, ${RATE} SMTP messages/s offered` : ''}, warm-up ${WARMUP} s, measure ${DURATION} s, one distinct new recipient per message\n`);
    const project = await benchProject();
    await prepareEngineSchema(cluster, sink.url);
    const smtpPort = await freePort();
    const herald = startHeraldChild('herald api', cluster, 'api', { PORT: '0', API_RATE_LIMIT_PER_MINUTE: '1000000000', SMTP_SUBMISSION_PORT: String(smtpPort), SMTP_SUBMISSION_HOST: '127.0.0.1' },
      cpuProfileArgs());
    const httpPort = (await herald.ready).port as number;
    const results: Measured[] = [];

    message = await new MailComposer({ from: 'Bench Shop <orders@example.com>', to: 'Customer <customer@example.org>', subject: 'Your order #100042 has shipped', html: HTML }).compile().build();
    const pgPid = cluster.postmasterPid();
    /** nodemailer's pool against `port` as an app configures it: a warm-up, then the measure, with the CPU of each process. */
    const measureSmtp = async (name: string, port: number, serverPid: number, rate: number): Promise<Measured> => {
      const transport = nodemailer.createTransport({
        host: '127.0.0.1', port, secure: false, requireTLS: true, tls: { rejectUnauthorized: false },
        auth: { user: 'bench', pass: project.secretKey }, pool: true, maxConnections: CONNECTIONS, maxMessages: 1000, // SMTP_SESSION_MAX_MESSAGES: a pool reconnects before the cap (README)
      } as SMTPTransport.Options);
      process.stdout.write(`${name}: warm-up ${WARMUP} s … `);
      await driveSmtp(transport, WARMUP, rate);
      await printTopStatements(cluster, 1, 0);
      const cpu0 = { api: cpuMs(serverPid), pg: cpuMs(pgPid, true), client: cpuMs(process.pid), machine: machineBusyMs() };
      const smtp = await driveSmtp(transport, DURATION, rate);
      const cpu = { api: cpuMs(serverPid) - cpu0.api, pg: cpuMs(pgPid, true) - cpu0.pg, client: cpuMs(process.pid) - cpu0.client, machine: machineBusyMs() - cpu0.machine };
      transport.close();
      const sorted = [...smtp.latencies].sort((a, b) => a - b);
      const m = { name, perSecond: smtp.ok / (smtp.ms / 1000), p50: pct(sorted, 0.5), p99: pct(sorted, 0.99), ok: smtp.ok, failed: smtp.failed, cpu: perMessage(cpu, smtp.ok) };
      console.log(`${Math.round(m.perSecond)} messages/s`);
      await printTopStatements(cluster, smtp.ok);
      return m;
    };

    // The floor first: what the dialogue alone costs here (a bare smtp-server that stores nothing, in its own process),
    // always as fast as it goes: its messages/s say how loaded the machine is.
    const floorChild = spawnChild('smtp floor', 'bench/lib/smtp-floor-child.ts', {});
    const floor = await measureSmtp('floor (bare smtp-server)', (await floorChild.ready).port as number, floorChild.pid, 0);
    await floorChild.stop();
    results.push(await measureSmtp('smtp', smtpPort, herald.pid, RATE));
    if (process.env.BENCH_HTTP === '0') {
      const [s] = results;
      console.log('\n| way in | messages/s | p50 ms | p99 ms | accepted | refused or failed | CPU ms per message: API | postgres | client (bench) | machine busy |');
      console.log('|---|---|---|---|---|---|---|---|---|---|');
      for (const r of [s!, floor]) console.log(`| ${r.name} | ${Math.round(r.perSecond)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.ok} | ${r.failed} | ${r.cpu.api.toFixed(2)} | ${r.cpu.pg.toFixed(2)} | ${r.cpu.client.toFixed(2)} | ${r.cpu.machine.toFixed(2)} |`);
      console.log(`\nsmtp / floor: ${(s!.perSecond / floor.perSecond).toFixed(2)}`);
      await herald.stop();
      return;
    }

    const body = () => JSON.stringify({ from: 'Bench Shop <orders@example.com>', to: nextRecipient(), subject: 'Your order #100042 has shipped', body: HTML });
    const drive = (seconds: number) => autocannon({
      url: `http://127.0.0.1:${httpPort}/v1/send`, method: 'POST', connections: CONNECTIONS, duration: seconds, timeout: 30,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${project.secretKey}` },
      requests: [{ setupRequest: (req) => ({ ...req, body: body() }) }],
    });
    process.stdout.write(`http: warm-up ${WARMUP} s … `);
    await drive(WARMUP);
    await printTopStatements(cluster, 1, 0);
    const cpu1 = { api: cpuMs(herald.pid), pg: cpuMs(pgPid, true), client: cpuMs(process.pid), machine: machineBusyMs() };
    const http = await drive(DURATION);
    const httpCpu = { api: cpuMs(herald.pid) - cpu1.api, pg: cpuMs(pgPid, true) - cpu1.pg, client: cpuMs(process.pid) - cpu1.client, machine: machineBusyMs() - cpu1.machine };
    results.push({ name: 'http /v1/send', perSecond: http['2xx'] / http.duration, p50: http.latency.p50, p99: http.latency.p99, ok: http['2xx'], failed: http.non2xx + http.errors, cpu: perMessage(httpCpu, http['2xx']) });
    console.log(`${Math.round(results[1]!.perSecond)} req/s\n`);
    await printTopStatements(cluster, http['2xx']);

    console.log('| way in | messages/s | p50 ms | p99 ms | accepted | refused or failed | CPU ms per message: API | postgres | client (bench) | machine busy |');
    console.log('|---|---|---|---|---|---|---|---|---|---|');
    for (const r of results) console.log(`| ${r.name} | ${Math.round(r.perSecond)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.ok} | ${r.failed} | ${r.cpu.api.toFixed(2)} | ${r.cpu.pg.toFixed(2)} | ${r.cpu.client.toFixed(2)} | ${r.cpu.machine.toFixed(2)} |`);
    console.log(`| ${floor.name} | ${Math.round(floor.perSecond)} | ${floor.p50.toFixed(1)} | ${floor.p99.toFixed(1)} | ${floor.ok} | ${floor.failed} | ${floor.cpu.api.toFixed(2)} | ${floor.cpu.pg.toFixed(2)} | ${floor.cpu.client.toFixed(2)} | ${floor.cpu.machine.toFixed(2)} |`);
    const [s, h] = results;
    const stored = (await cluster.knex('emails').whereNotNull('raw_message_id').count('* as n').first()) as { n: string };
    console.log(`\nratio smtp / http: ${(s!.perSecond / h!.perSecond).toFixed(2)}; smtp / floor: ${(s!.perSecond / floor.perSecond).toFixed(2)}; ${stored.n} submitted emails stored (every 250 answered, warm-up included)`);
    console.log(`target: ${Math.round(s!.perSecond)} messages/s ≥ 500 with ${CONNECTIONS} connections: ${s!.perSecond >= 500 ? 'met' : 'MISSED'}`);
    await herald.stop();
  } finally {
    await sink.close();
    await cluster.stop();
  }
});
