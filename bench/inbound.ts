/**
 * Inbound mail (issue 31): messages per second that Herald's inbound listener takes for an inbound domain (parse,
 * authenticate, store, queue the `email.received` webhook) beside a bare smtp-server that only reads the same
 * messages, in one run.
 *
 *   npx tsx bench/inbound.ts          (npm run bench:inbound)
 *
 * Starts its own embedded PostgreSQL, a loopback DNS server (the tests' test/support/dns.ts) that publishes the
 * sender's SPF, DKIM key and DMARC policy, and one Herald API process exactly as `npm run api` runs it, with its inbound
 * listener (SMTP_INBOUND_PORT) and DNS_SERVERS at that server. The project has a VERIFIED inbound domain whose one route
 * (`*@in.bench.test`) delivers to a webhook endpoint: each message is parsed (postal-mime), checked (mailauth: SPF,
 * DKIM, DMARC, ARC), stored in one transaction with its raw bytes and attachments, and its webhook delivery queued
 * (no worker runs: the delivery is not part of the measure). Remote MTAs (nodemailer, a pool of BENCH_CONNECTIONS
 * connections, STARTTLS as offered, no AUTH) deliver DKIM-signed messages, each to a distinct recipient from a distinct
 * envelope sender at the signing domain (the listener's limit per sender is not what is measured), for
 * BENCH_DURATION seconds at each size: ~10 KB (text and HTML) and ~1 MB (a text part and a 750 KB attachment). The
 * floor beside it: the same MTA and messages to a bare smtp-server in a process of its own (bench/lib/smtp-floor-child.ts
 * with FLOOR_NO_AUTH=1) that reads each message and answers 250. A message counts when it was answered 250.
 *
 * Environment: BENCH_DURATION (s per size and side, default 15), BENCH_WARMUP (s, default 2), BENCH_CONNECTIONS (default
 * 8), BENCH_SIZES (default "10k,1m"), BENCH_CPU_PROF=1 (V8 profile of the Herald process into BENCH_PROFILE_DIR), BENCH_PG_STAT=1
 * (the statements per message). The Herald process gets this environment: INBOUND_ANALYSIS_THREADS=2 measures the
 * worker threads for large messages (inbound/analysis.ts). Each measure prints the DNS queries it caused, the CPU that
 * other processes took meanwhile, the steal and the load average; the table gives the CPU per message of the receiver,
 * of PostgreSQL and of the sending MTA (this process), from which the ceiling on this machine is worked out
 * (BENCHMARKS.md section 32).
 */
import { generateKeyPairSync } from 'node:crypto';
import os from 'node:os';
import nodemailer, { type Transporter } from 'nodemailer';
import MailComposer from 'nodemailer/lib/mail-composer';
import { createWebhook } from '../webhooks/endpoints';
import { startDnsServer } from '../test/support/dns';
import { printTopStatements, startCluster } from './lib/cluster';
import { BENCH_SECRET, benchProject, prepareEngineSchema, startHeraldChild } from './lib/herald';
import { cpuProfileArgs, cpuMs, freePort, machine, machineBusyMs, runBench, spawnChild, stealSince } from './lib/proc';
import { startSink } from './lib/sink';

const DURATION = Number(process.env.BENCH_DURATION ?? 15);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8);
const SIZES = (process.env.BENCH_SIZES ?? '10k,1m').split(',').map((s) => s.trim()).filter(Boolean);
const DOMAIN = 'in.bench.test';
const SENDER_DOMAIN = 'sender.example';

let counter = 0;
const nextRecipient = () => `user-${counter++}@${DOMAIN}`;
/**
 * A distinct envelope sender per message, as a provider's MTA writes them (VERP-style bounce addresses at its own
 * domain: SPF is checked for that domain all the same): the listener's limit per envelope sender (600 a minute, the
 * default) is not what is measured here. With one sender, every message past the 600th of a minute was answered 451
 * at MAIL FROM and the run measured the limit.
 */
const nextSender = () => `bounces+${counter}@${SENDER_DOMAIN}`;

/** A message as a mailbox provider sends it: DKIM-signed by the sender's domain, about `size` bytes. */
async function composeMessage(size: '10k' | '1m', privateKey: string): Promise<Buffer> {
  const paragraph = 'Thanks for the quick turnaround on the order. The parcel arrived this morning and everything is in it. ';
  const mail = size === '10k'
    ? { text: paragraph.repeat(40), html: `<p>${paragraph.repeat(40)}</p>` }
    : { text: paragraph.repeat(10), attachments: [{ filename: 'scan.pdf', contentType: 'application/pdf', content: Buffer.alloc(750 * 1024, 7) }] };
  const composer = new MailComposer({
    from: `Grace Hopper <grace@${SENDER_DOMAIN}>`, to: `support@${DOMAIN}`, subject: 'Re: Your order #100042 has shipped',
    inReplyTo: '<0197a12c-7b3e-7f04-a6d8-9c1e3a5b7d60@example.com>', ...mail,
  });
  const built = await composer.compile().build();
  // nodemailer's DKIM signer, as the sending MTA would sign.
  const { default: DKIM } = await import('nodemailer/lib/dkim') as unknown as { default: new (o: object) => { sign(input: Buffer): NodeJS.ReadableStream } };
  const stream = new DKIM({ domainName: SENDER_DOMAIN, keySelector: 'mail', privateKey }).sign(built);
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** Keeps CONNECTIONS messages in flight for `seconds`; answers accepted, refused and elapsed ms. */
async function drive(transport: Transporter, raw: Buffer, seconds: number): Promise<{ ok: number; failed: number; ms: number; firstError?: string }> {
  const until = performance.now() + seconds * 1000;
  let ok = 0;
  let failed = 0;
  let firstError: string | undefined;
  const started = performance.now();
  const lane = async () => {
    while (performance.now() < until) {
      try {
        await transport.sendMail({ envelope: { from: nextSender(), to: [nextRecipient()] }, raw });
        ok++;
      } catch (err) {
        failed++;
        firstError ??= (err as Error).message;
      }
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, lane));
  return { ok, failed, ms: performance.now() - started, firstError };
}

const mta = (port: number) => nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, tls: { rejectUnauthorized: false }, pool: true, maxConnections: CONNECTIONS, maxMessages: Infinity });

runBench('bench:inbound', 15 * 60_000, async () => {
  const cluster = await startCluster('inbound');
  const sink = await startSink();
  const dns = await startDnsServer();
  try {
    console.log(`machine: ${machine(cluster.version)}; load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
    console.log(`load: ${CONNECTIONS} connections, ${SIZES.join(' and ')} messages, warm-up ${WARMUP} s, measure ${DURATION} s per size and side, a distinct recipient per message\n`);
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pub = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
    dns.set(SENDER_DOMAIN, { TXT: ['v=spf1 ip4:127.0.0.1 -all'], MX: [`mx.${SENDER_DOMAIN}`] });
    dns.set(`mail._domainkey.${SENDER_DOMAIN}`, { TXT: [`v=DKIM1; k=rsa; p=${pub}`] });
    dns.set(`_dmarc.${SENDER_DOMAIN}`, { TXT: ['v=DMARC1; p=reject'] });

    const project = await benchProject();
    const endpoint = await createWebhook({ knex: cluster.knex, secret: Buffer.from(BENCH_SECRET, 'utf8') }, project.id, { url: 'https://hooks.example.com/inbound', events: ['email.sent'] });
    const [domain] = await cluster.knex('inbound_domains').insert({ project_id: project.id, domain: DOMAIN, status: 'VERIFIED', verified_at: new Date() }).returning('id');
    await cluster.knex('inbound_routes').insert({ project_id: project.id, domain_id: domain.id, kind: 'domain', local_part: null, action: 'webhook', endpoint_id: endpoint.id });
    await prepareEngineSchema(cluster, sink.url);

    const inboundPort = await freePort();
    const herald = startHeraldChild('herald api', cluster, 'api', {
      PORT: '0', SMTP_INBOUND_PORT: String(inboundPort), SMTP_INBOUND_HOST: '127.0.0.1', DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2000', DNS_TRIES: '2',
    }, cpuProfileArgs());
    await herald.ready;
    const floorChild = spawnChild('inbound floor', 'bench/lib/smtp-floor-child.ts', { FLOOR_NO_AUTH: '1' });
    const floorPort = (await floorChild.ready).port as number;

    const rows: string[] = [];
    const ratios: string[] = [];
    for (const size of SIZES) {
      if (size !== '10k' && size !== '1m') throw new Error(`BENCH_SIZES: ${size} is not 10k or 1m`);
      const raw = await composeMessage(size, privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
      const measure = async (name: string, port: number, pid: number) => {
        const t = mta(port);
        process.stdout.write(`${size} ${name}: warm-up … `);
        await drive(t, raw, WARMUP);
        await printTopStatements(cluster, 1, 0);
        const dns0 = dns.queries.length;
        const cpu0 = cpuMs(pid);
        const pg0 = cpuMs(cluster.postmasterPid(), true);
        // The sending MTA (nodemailer, this process) is part of what the machine spends per message on either side.
        const client0 = process.cpuUsage();
        const busy0 = machineBusyMs();
        const steal0 = stealSince();
        const r = await drive(t, raw, DURATION);
        const cpu = cpuMs(pid) - cpu0;
        const pg = cpuMs(cluster.postmasterPid(), true) - pg0;
        const clientUsage = process.cpuUsage(client0);
        const client = (clientUsage.user + clientUsage.system) / 1000;
        // Whatever else ran on the machine meanwhile (other engineers' tests and benchmarks): the CPU left to the measure.
        const others = Math.max(0, machineBusyMs() - busy0 - cpu - pg - client);
        const steal = stealSince(steal0.at).share;
        t.close();
        const perSecond = r.ok / (r.ms / 1000);
        // mailauth's lookups go through a 60 s cache (inbound/auth.ts): a measure of one sender asks DNS a few times, not per message.
        console.log(`${Math.round(perSecond)} messages/s${r.failed ? ` (${r.failed} refused or failed, first: ${r.firstError})` : ''}, ${dns.queries.length - dns0} DNS queries; `
          + `other processes ${(others / r.ms).toFixed(2)} CPUs, steal ${(steal * 100).toFixed(1)} %, load average ${os.loadavg()[0]!.toFixed(1)}`);
        await printTopStatements(cluster, r.ok);
        const per = (ms: number) => (r.ok ? ms / r.ok : 0);
        return { perSecond, ...r, cpuPerMessage: per(cpu), pgPerMessage: per(pg), clientPerMessage: per(client) };
      };
      const f = await measure('floor (bare smtp-server)', floorPort, floorChild.pid);
      const h = await measure('herald inbound', inboundPort, herald.pid);
      const row = (name: string, m: typeof f) => `| ${size} (${Math.round(raw.length / 1024)} KB) | ${name} | ${Math.round(m.perSecond)} | ${m.ok} | ${m.failed} | ${m.cpuPerMessage.toFixed(2)} | ${m.pgPerMessage.toFixed(2)} | ${m.clientPerMessage.toFixed(2)} |`;
      rows.push(row('floor (bare smtp-server, reads)', f));
      rows.push(row('herald inbound (parse, authenticate, store, queue webhook)', h));
      const ratio = h.perSecond / f.perSecond;
      ratios.push(`${size}: herald / floor ${ratio.toFixed(2)} (target ≥ 0.5: ${ratio >= 0.5 ? 'met' : 'MISSED'})`);
    }
    console.log('\n| message | receiver | messages/s | accepted | refused or failed | receiver CPU ms per message | postgres CPU ms per message | sending MTA (client) CPU ms per message |');
    console.log('|---|---|---|---|---|---|---|---|');
    for (const r of rows) console.log(r);
    console.log(`\n${ratios.join('\n')}`);

    // Every 250 stored and its webhook queued; what mailauth said of the (signed, SPF-listed) sender.
    const stored = (await cluster.knex('inbound_messages').where('project_id', project.id).count('* as n').first()) as { n: string };
    const queued = (await cluster.knex('webhook_deliveries').where({ project_id: project.id, endpoint_id: endpoint.id, type: 'email.received' }).count('* as n').first()) as { n: string };
    const auth = await cluster.knex('inbound_messages').where('project_id', project.id).groupByRaw("auth->'spf'->>'result', auth->'dmarc'->>'result', auth->'dkim'->0->>'result'")
      .select(cluster.knex.raw("auth->'spf'->>'result' AS spf, auth->'dkim'->0->>'result' AS dkim, auth->'dmarc'->>'result' AS dmarc, count(*)::int AS n"));
    console.log(`checks: ${stored.n} messages stored (warm-ups included), ${queued.n} webhook deliveries queued; authentication ${JSON.stringify(auth)}`);
    await floorChild.stop();
    await herald.stop();
  } finally {
    await dns.close();
    await sink.close();
    await cluster.stop();
  }
});
