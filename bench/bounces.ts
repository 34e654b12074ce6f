/**
 * Bounce processing: DSNs per second that the inbound listener records, end to end.
 *
 *   npx tsx bench/bounces.ts          (npm run bench:bounces)
 *
 * Starts its own embedded PostgreSQL and one Herald API process on it exactly as `npm run api` runs it, with its
 * inbound listener (SMTP_INBOUND_PORT) and BOUNCE_DOMAIN. The project has BENCH_EMAILS (default 20,000) sent emails to
 * distinct addresses. Remote MTAs (nodemailer, a pool of BENCH_CONNECTIONS = 32 connections: bounces come from many
 * servers at once; no AUTH, STARTTLS) then deliver one DSN per email to its VERP address: three in four hard bounces (5.1.1: email BOUNCED, address
 * suppressed), one in four soft (4.2.2: recorded). A DSN counts when the listener answered 250, i.e. once recorded.
 * The floor beside it, in the same run: the same MTA delivering the same messages to a bare smtp-server that only
 * reads them (what SMTP and the parse-free path cost on this machine).
 *
 * Environment: BENCH_EMAILS (default 20000), BENCH_CONNECTIONS (default 32).
 */
import net from 'node:net';
import nodemailer, { type Transporter } from 'nodemailer';
import { SMTPServer } from 'smtp-server';
import { bounceAddress } from '../bounces/token';
import { startCluster } from './lib/cluster';
import { BENCH_SECRET, benchProject, prepareEngineSchema, queueEmails, startHeraldChild } from './lib/herald';
import { cpuMs, freePort, machine, runBench } from './lib/proc';
import { startSink } from './lib/sink';

const EMAILS = Number(process.env.BENCH_EMAILS ?? 20_000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const BOUNCE_DOMAIN = 'bounces.bench.test';

function dsn(recipient: string, hard: boolean): Buffer {
  const status = hard ? '5.1.1' : '4.2.2';
  return Buffer.from([
    'From: MAILER-DAEMON@mx.example.org', 'Subject: Undelivered Mail Returned to Sender', 'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="B"', '',
    '--B', 'Content-Type: text/plain', '', 'Your message could not be delivered.', '',
    '--B', 'Content-Type: message/delivery-status', '', 'Reporting-MTA: dns; mx.example.org', '',
    `Final-Recipient: rfc822; ${recipient}`, `Action: ${hard ? 'failed' : 'delayed'}`, `Status: ${status}`,
    `Diagnostic-Code: smtp; ${hard ? '550' : '452'} ${status} mailbox unavailable`, '',
    '--B', 'Content-Type: text/rfc822-headers', '', 'From: Bench Shop <orders@example.com>', `To: ${recipient}`, 'Subject: Your order #100042 has shipped', '',
    '--B--', '',
  ].join('\r\n'));
}

/** Delivers every job over the pool, CONNECTIONS at a time; answers accepted count and elapsed ms. */
async function deliver(transport: Transporter, jobs: { to: string; raw: Buffer }[]): Promise<{ ok: number; failed: number; ms: number }> {
  let next = 0;
  let ok = 0;
  let failed = 0;
  const started = performance.now();
  const lane = async () => {
    for (let i = next++; i < jobs.length; i = next++) {
      try {
        await transport.sendMail({ envelope: { from: '', to: [jobs[i]!.to] }, raw: jobs[i]!.raw });
        ok++;
      } catch {
        failed++;
      }
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, lane));
  return { ok, failed, ms: performance.now() - started };
}

const mta = (port: number) => nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, tls: { rejectUnauthorized: false }, pool: true, maxConnections: CONNECTIONS, maxMessages: Infinity });

runBench('bench:bounces', 10 * 60_000, async () => {
  const cluster = await startCluster('bounces');
  const sink = await startSink();
  const floor = new SMTPServer({ authOptional: true, disabledCommands: ['AUTH', 'STARTTLS'], logger: false, onData(stream, _s, cb) { stream.on('data', () => undefined); stream.on('end', () => cb()); } });
  try {
    console.log(`machine: ${machine(cluster.version)}`);
    console.log(`load: ${EMAILS} DSNs (3 in 4 hard), ${CONNECTIONS} connections\n`);
    const project = await benchProject();
    await prepareEngineSchema(cluster, sink.url);
    const { ids } = await queueEmails(cluster, project.id, EMAILS, 'bounce');
    await cluster.knex('emails').whereIn('id', ids).update({ status: 'SENT', sent_at: cluster.knex.fn.now() });
    await cluster.knex.raw('ANALYZE');
    const rows: { id: string; to_email: string }[] = await cluster.knex('emails').whereIn('id', ids).select('id', 'to_email');
    const secret = Buffer.from(BENCH_SECRET, 'utf8');
    const jobs = rows.map((r, i) => ({ to: bounceAddress(secret, r.id, BOUNCE_DOMAIN), raw: dsn(r.to_email, i % 4 !== 0) }));

    const inboundPort = await freePort();
    const herald = startHeraldChild('herald api', cluster, 'api', { PORT: '0', SMTP_INBOUND_PORT: String(inboundPort), SMTP_INBOUND_HOST: '127.0.0.1', BOUNCE_DOMAIN });
    await herald.ready;
    await new Promise<void>((r) => floor.listen(0, '127.0.0.1', r));
    const floorPort = (floor.server.address() as net.AddressInfo).port;

    process.stdout.write('floor (a bare smtp-server that reads the messages) … ');
    const floorT = mta(floorPort);
    const f = await deliver(floorT, jobs);
    floorT.close();
    console.log(`${Math.round(f.ok / (f.ms / 1000))} messages/s`);

    process.stdout.write('herald inbound … ');
    const cpu0 = cpuMs(herald.pid);
    const heraldT = mta(inboundPort);
    const h = await deliver(heraldT, jobs);
    heraldT.close();
    const cpu = cpuMs(herald.pid) - cpu0;
    const perSecond = h.ok / (h.ms / 1000);
    console.log(`${Math.round(perSecond)} DSNs/s\n`);

    const bounced = (await cluster.knex('events').where({ project_id: project.id, name: 'email.bounced' }).count('* as n').first()) as { n: string };
    const suppressed = (await cluster.knex('suppressions').where({ project_id: project.id }).count('* as n').first()) as { n: string };
    const statuses = await cluster.knex('emails').where('project_id', project.id).groupBy('status').select('status', cluster.knex.raw('count(*)::int AS n'));
    console.log('| receiver | messages/s | accepted | refused or failed | receiver CPU ms per message |');
    console.log('|---|---|---|---|---|');
    console.log(`| floor (bare smtp-server) | ${Math.round(f.ok / (f.ms / 1000))} | ${f.ok} | ${f.failed} | – |`);
    console.log(`| herald inbound (parse, map, record) | ${Math.round(perSecond)} | ${h.ok} | ${h.failed} | ${(cpu / h.ok).toFixed(2)} |`);
    console.log(`\nratio herald / floor: ${(perSecond / (f.ok / (f.ms / 1000))).toFixed(2)}`);
    console.log(`checks: ${bounced.n} email.bounced events, ${suppressed.n} addresses suppressed, emails by status ${JSON.stringify(Object.fromEntries(statuses.map((s: { status: string; n: number }) => [s.status, s.n])))}`);
    console.log(`target: ${Math.round(perSecond)} DSNs/s ≥ 500: ${perSecond >= 500 ? 'met' : 'MISSED'}`);
    await herald.stop();
  } finally {
    await new Promise<void>((r) => floor.close(() => r()));
    await sink.close();
    await cluster.stop();
  }
});
