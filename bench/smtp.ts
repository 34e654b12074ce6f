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
 * Environment: BENCH_DURATION (s, default 15), BENCH_WARMUP (s, default 3), BENCH_CONNECTIONS (default 8).
 */
import autocannon from 'autocannon';
import nodemailer, { type Transporter } from 'nodemailer';
import MailComposer from 'nodemailer/lib/mail-composer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport';
import { startCluster } from './lib/cluster';
import { benchProject, prepareEngineSchema, startHeraldChild } from './lib/herald';
import { cpuMs, freePort, machine, runBench } from './lib/proc';
import { startSink } from './lib/sink';

const DURATION = Number(process.env.BENCH_DURATION ?? 15);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8);

const HTML = `<html><body><h1>Hello Ada</h1><p>Your order <b>#100042</b> has shipped and should arrive within three working days.</p>
<p>You can follow it at any time from your account page. If anything is wrong with it, reply to this email and we will sort it out.</p>
<p>Thank you for shopping with us.</p></body></html>`;

let counter = 0;
const nextRecipient = () => `customer-${counter++}@example.org`;

interface Measured { name: string; perSecond: number; p50: number; p99: number; ok: number; failed: number; serverCpuMsPerMessage: number }

/** Keeps CONNECTIONS messages in flight over the pool for `seconds`; latencies of the accepted ones. */
/**
 * The message, built once (MailComposer) and sent with a distinct envelope recipient each time: the client's CPU, on
 * this machine shared with the server, goes to the SMTP dialogue rather than to composing MIME again for each message.
 */
let message: Buffer;

async function driveSmtp(transport: Transporter, seconds: number): Promise<{ ok: number; failed: number; latencies: number[]; ms: number }> {
  const until = performance.now() + seconds * 1000;
  const latencies: number[] = [];
  let failed = 0;
  const started = performance.now();
  const lane = async () => {
    while (performance.now() < until) {
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
    console.log(`load: ${CONNECTIONS} connections each way, warm-up ${WARMUP} s, measure ${DURATION} s, one distinct new recipient per message\n`);
    const project = await benchProject();
    await prepareEngineSchema(cluster, sink.url);
    const smtpPort = await freePort();
    const herald = startHeraldChild('herald api', cluster, 'api', { PORT: '0', API_RATE_LIMIT_PER_MINUTE: '1000000000', SMTP_SUBMISSION_PORT: String(smtpPort), SMTP_SUBMISSION_HOST: '127.0.0.1' });
    const httpPort = (await herald.ready).port as number;
    const results: Measured[] = [];

    message = await new MailComposer({ from: 'Bench Shop <orders@example.com>', to: 'Customer <customer@example.org>', subject: 'Your order #100042 has shipped', html: HTML }).compile().build();
    const transport = nodemailer.createTransport({
      host: '127.0.0.1', port: smtpPort, secure: false, requireTLS: true, tls: { rejectUnauthorized: false },
      auth: { user: 'bench', pass: project.secretKey }, pool: true, maxConnections: CONNECTIONS, maxMessages: Infinity,
    } as SMTPTransport.Options);
    process.stdout.write(`smtp: warm-up ${WARMUP} s … `);
    await driveSmtp(transport, WARMUP);
    const cpu0 = cpuMs(herald.pid);
    const smtp = await driveSmtp(transport, DURATION);
    const smtpCpu = cpuMs(herald.pid) - cpu0;
    transport.close();
    const sorted = [...smtp.latencies].sort((a, b) => a - b);
    results.push({ name: 'smtp', perSecond: smtp.ok / (smtp.ms / 1000), p50: pct(sorted, 0.5), p99: pct(sorted, 0.99), ok: smtp.ok, failed: smtp.failed, serverCpuMsPerMessage: smtpCpu / smtp.ok });
    console.log(`${Math.round(results[0]!.perSecond)} messages/s`);

    const body = () => JSON.stringify({ from: 'Bench Shop <orders@example.com>', to: nextRecipient(), subject: 'Your order #100042 has shipped', body: HTML });
    const drive = (seconds: number) => autocannon({
      url: `http://127.0.0.1:${httpPort}/v1/send`, method: 'POST', connections: CONNECTIONS, duration: seconds, timeout: 30,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${project.secretKey}` },
      requests: [{ setupRequest: (req) => ({ ...req, body: body() }) }],
    });
    process.stdout.write(`http: warm-up ${WARMUP} s … `);
    await drive(WARMUP);
    const cpu1 = cpuMs(herald.pid);
    const http = await drive(DURATION);
    const httpCpu = cpuMs(herald.pid) - cpu1;
    results.push({ name: 'http /v1/send', perSecond: http['2xx'] / http.duration, p50: http.latency.p50, p99: http.latency.p99, ok: http['2xx'], failed: http.non2xx + http.errors, serverCpuMsPerMessage: httpCpu / http['2xx'] });
    console.log(`${Math.round(results[1]!.perSecond)} req/s\n`);

    console.log('| way in | messages/s | p50 ms | p99 ms | accepted | refused or failed | API process CPU ms per message |');
    console.log('|---|---|---|---|---|---|---|');
    for (const r of results) console.log(`| ${r.name} | ${Math.round(r.perSecond)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.ok} | ${r.failed} | ${r.serverCpuMsPerMessage.toFixed(2)} |`);
    const [s, h] = results;
    const stored = (await cluster.knex('emails').whereNotNull('raw_message_id').count('* as n').first()) as { n: string };
    console.log(`\nratio smtp / http: ${(s!.perSecond / h!.perSecond).toFixed(2)}; ${stored.n} submitted emails stored (every 250 answered, warm-up included)`);
    console.log(`target: ${Math.round(s!.perSecond)} messages/s ≥ 500 with ${CONNECTIONS} connections: ${s!.perSecond >= 500 ? 'met' : 'MISSED'}`);
    await herald.stop();
  } finally {
    await sink.close();
    await cluster.stop();
  }
});
