/**
 * Outbound webhook delivery throughput, and a dead endpoint beside a live one (issue 16, point 3), in one run.
 *
 *   npx tsx bench/webhooks.ts          (npm run bench:webhooks)
 *
 * Starts its own embedded PostgreSQL, one Herald worker process exactly as `npm run worker` runs it (the embedded
 * engine; its webhook queue is worker/webhookQueue.ts, default settings but WEBHOOK_ALLOW_PRIVATE=127.0.0.1), and a
 * loopback HTTP receiver in this process that answers 204 (and checks one signature in a hundred with
 * `standardwebhooks`). Deliveries come from the contacts' outbox trigger: one INSERT of BENCH_MESSAGES contacts into a project
 * whose endpoints want `contact.created`, i.e. a backlog as a burst of sign-ups would leave it.
 *
 * 1. live alone: one endpoint; time from the INSERT's commit until every delivery is SUCCEEDED (outcome committed).
 * 2. live beside dead: the same, with a second endpoint of the same project whose receiver never answers (a hang:
 *    each request holds its socket until WEBHOOK_TIMEOUT_MS, 10 s) and gets the same number of messages.
 * 3. live alone again (a fresh project): (2) is compared with the mean of (1) and (3), the machine's load drifting.
 *
 * 0. Before them, what the contacts' outbox triggers cost the hot paths when no endpoint wants the event (triggerCost).
 *    Events have no trigger: their outbox rows are written by EVENT_EFFECTS (db/queries/events.ts).
 *
 * Environment: BENCH_MESSAGES (default 10000), WEBHOOK_ENDPOINT_CONCURRENCY (the worker's, default 32), BENCH_JSON=file.
 */
import fs from 'node:fs';
import http from 'node:http';
import { Webhook } from 'standardwebhooks';
import { createWebhook } from '../webhooks/endpoints';
import { startCluster, type BenchCluster } from './lib/cluster';
import { BENCH_SECRET, benchProject, startHeraldChild } from './lib/herald';
import { cpuMs, machine, machineBusyMs, runBench, sleep } from './lib/proc';
import { startSink } from './lib/sink';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 10_000);

interface Receiver {
  url: string;
  count(path: string): number;
  secrets: Map<string, string>;
  badSignatures: number;
  checked: number;
  close(): void;
}

async function startReceiver(): Promise<Receiver> {
  const counts = new Map<string, number>();
  const secrets = new Map<string, string>();
  const hanging = new Set<http.ServerResponse>();
  const r = { badSignatures: 0, checked: 0 } as Receiver;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      if (path === '/dead') {
        hanging.add(res);
        res.once('close', () => hanging.delete(res));
        return;
      }
      const n = (counts.get(path) ?? 0) + 1;
      counts.set(path, n);
      if (n % 100 === 1) {
        r.checked++;
        try {
          new Webhook(secrets.get(path)!).verify(Buffer.concat(chunks).toString('utf8'), req.headers as Record<string, string>);
        } catch {
          r.badSignatures++;
        }
      }
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(r, {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    count: (path: string) => counts.get(path) ?? 0,
    secrets,
    close: () => { for (const h of hanging) h.destroy(); server.closeAllConnections(); server.close(); },
  });
}

interface Phase {
  name: string;
  messages: number;
  seconds: number;
  perSecond: number;
  workerCpuMsPerDelivery: number;
  postgresCpuMsPerDelivery: number;
  machineBusyMsPerDelivery: number;
  deadAttempts?: number;
}

async function phase(cluster: BenchCluster, receiver: Receiver, workerPid: number, name: string, projectId: string, live: { id: string; path: string }, tag: string, deadEndpoint?: string): Promise<Phase> {
  const liveEndpoint = live.id;
  const livePath = live.path;
  const before = { worker: cpuMs(workerPid), pg: cpuMs(cluster.postmasterPid(), true), machine: machineBusyMs() };
  const started = performance.now();
  await cluster.knex.raw(`INSERT INTO contacts (project_id, email, subscribed, data)
    SELECT ?::uuid, ? || '-' || g || '@example.org', true, jsonb_build_object('n', g) FROM generate_series(1, ?::int) g`, [projectId, tag, MESSAGES]);
  // The receiver's count first (free), then the committed outcomes (a count over the endpoint's rows: only for the tail,
  // so that the measurement does not load PostgreSQL).
  while (receiver.count(livePath) < MESSAGES) await sleep(10);
  for (;;) {
    const { rows } = await cluster.knex.raw("SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = ? AND status = 'SUCCEEDED'", [liveEndpoint]);
    if (rows[0].n >= MESSAGES) break;
    await sleep(20);
  }
  const seconds = (performance.now() - started) / 1000;
  const after = { worker: cpuMs(workerPid), pg: cpuMs(cluster.postmasterPid(), true), machine: machineBusyMs() };
  const deadAttempts = deadEndpoint
    ? (await cluster.knex.raw('SELECT count(*)::int AS n FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = ?', [deadEndpoint])).rows[0].n
    : undefined;
  return {
    name, messages: MESSAGES, seconds, perSecond: MESSAGES / seconds,
    workerCpuMsPerDelivery: (after.worker - before.worker) / MESSAGES,
    postgresCpuMsPerDelivery: (after.pg - before.pg) / MESSAGES,
    machineBusyMsPerDelivery: (after.machine - before.machine) / MESSAGES,
    ...(deadAttempts !== undefined ? { deadAttempts } : {}),
  };
}

/**
 * What the contacts' outbox triggers cost the hot paths, where no endpoint wants the event (the common case):
 * single-row statements as `/v1/send` and `/v1/track` run them (an INSERT of a new contact, an UPDATE of one), each in
 * its own transaction, with the triggers enabled and disabled, alternating rounds, in one database.
 * Answers µs per statement, median of the rounds.
 */
async function triggerCost(cluster: BenchCluster, projectId: string): Promise<{ statement: string; withUs: number; withoutUs: number }[]> {
  const { knex } = cluster;
  const N = 1000;
  const ROUNDS = 6;
  let seq = 0;
  const statements: [string, () => Promise<unknown>][] = [
    ['INSERT a contact', () => knex.raw("INSERT INTO contacts (project_id, email, data) VALUES (?, ?, '{}')", [projectId, `t-${seq++}@example.org`])],
    ['UPDATE a contact (data changes)', () => knex.raw("UPDATE contacts SET data = jsonb_build_object('n', ?::int), updated_at = now() WHERE project_id = ? AND email = 't-0@example.org'", [seq++, projectId])],
  ];
  const triggers = async (on: boolean) => {
    const verb = on ? 'ENABLE' : 'DISABLE';
    await knex.raw(`ALTER TABLE contacts ${verb} TRIGGER webhook_outbox_contacts_created`);
    await knex.raw(`ALTER TABLE contacts ${verb} TRIGGER webhook_outbox_contacts_updated`);
  };
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const out: { statement: string; withUs: number; withoutUs: number }[] = [];
  for (const [statement, run] of statements) {
    const times: Record<'on' | 'off', number[]> = { on: [], off: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const on of round % 2 ? [true, false] : [false, true]) {
        await triggers(on);
        const started = performance.now();
        for (let i = 0; i < N; i++) await run();
        times[on ? 'on' : 'off'].push(((performance.now() - started) * 1000) / N);
      }
    }
    out.push({ statement, withUs: median(times.on), withoutUs: median(times.off) });
  }
  await triggers(true);
  return out;
}

runBench('bench:webhooks', 15 * 60_000, async () => {
  const cluster = await startCluster('webhooks');
  const sink = await startSink();
  const receiver = await startReceiver();
  try {
    console.log(`machine: ${machine(cluster.version)}`);
    const deps = { knex: cluster.knex, secret: Buffer.from(BENCH_SECRET, 'utf8') };
    const worker = startHeraldChild('herald worker', cluster, 'worker', { EXECUTOR_ID: 'bench-webhooks', SMTP_URL: sink.url, WEBHOOK_ALLOW_PRIVATE: '127.0.0.1', ...(process.env.WEBHOOK_ENDPOINT_CONCURRENCY ? { WEBHOOK_ENDPOINT_CONCURRENCY: process.env.WEBHOOK_ENDPOINT_CONCURRENCY } : {}) });
    await worker.ready;

    // A project with an endpoint that wants only campaign.sent: the triggers find it and write nothing.
    const quiet = await benchProject();
    await createWebhook(deps, quiet.id, { url: `${receiver.url}/never`, events: ['campaign.sent'] });
    const costs = await triggerCost(cluster, quiet.id);

    const alone = await benchProject();
    const live1 = await createWebhook(deps, alone.id, { url: `${receiver.url}/live-alone`, events: ['contact.created'] });
    receiver.secrets.set('/live-alone', live1.secret);
    const p1 = await phase(cluster, receiver, worker.pid, 'live endpoint alone', alone.id, { id: live1.id, path: '/live-alone' }, 'alone');

    const beside = await benchProject();
    const live2 = await createWebhook(deps, beside.id, { url: `${receiver.url}/live-beside`, events: ['contact.created'] });
    receiver.secrets.set('/live-beside', live2.secret);
    const dead = await createWebhook(deps, beside.id, { url: `${receiver.url}/dead`, events: ['contact.created'] });
    const p2 = await phase(cluster, receiver, worker.pid, 'live endpoint beside a dead one', beside.id, { id: live2.id, path: '/live-beside' }, 'beside', dead.id);

    // The first phase again, on a fresh project: on a shared machine the load of other processes drifts, and the
    // phase beside the dead endpoint is compared with the mean of the two around it.
    const again = await benchProject();
    const live3 = await createWebhook(deps, again.id, { url: `${receiver.url}/live-again`, events: ['contact.created'] });
    receiver.secrets.set('/live-again', live3.secret);
    const p3 = await phase(cluster, receiver, worker.pid, 'live endpoint alone, again', again.id, { id: live3.id, path: '/live-again' }, 'again');

    if (receiver.count('/live-alone') < MESSAGES || receiver.count('/live-beside') < MESSAGES) throw new Error('the receiver got fewer requests than deliveries');
    if (receiver.badSignatures) throw new Error(`${receiver.badSignatures} of ${receiver.checked} signatures did not verify`);
    const f = (n: number, d = 0) => n.toFixed(d);
    console.log(`\n${MESSAGES} messages per endpoint; ${receiver.checked} signatures checked with standardwebhooks, all valid.`);
    console.log('\n| phase | deliveries | seconds | deliveries/s | CPU ms/delivery: worker | postgres | machine busy | dead endpoint\'s attempts meanwhile |');
    console.log('|---|---|---|---|---|---|---|---|');
    for (const p of [p1, p2, p3]) {
      console.log(`| ${p.name} | ${p.messages} | ${f(p.seconds, 1)} | ${f(p.perSecond)} | ${f(p.workerCpuMsPerDelivery, 2)} | ${f(p.postgresCpuMsPerDelivery, 2)} | ${f(p.machineBusyMsPerDelivery, 2)} | ${p.deadAttempts ?? '–'} |`);
    }
    console.log(`\nlive beside dead / mean of live alone before and after: ${(p2.perSecond / ((p1.perSecond + p3.perSecond) / 2)).toFixed(2)} of the throughput`);
    console.log('\nOutbox triggers on the hot paths, no endpoint wanting the event (µs per single-statement transaction, median of 3 alternating rounds each):');
    console.log('\n| statement | triggers enabled | disabled | difference |');
    console.log('|---|---|---|---|');
    for (const c of costs) console.log(`| ${c.statement} | ${f(c.withUs)} | ${f(c.withoutUs)} | ${f(c.withUs - c.withoutUs)} (${f(((c.withUs - c.withoutUs) / c.withoutUs) * 100, 1)} %) |`);
    if (process.env.BENCH_JSON) fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify({ phases: [p1, p2, p3], triggers: costs }, null, 2));
    await worker.stop(20_000);
  } finally {
    receiver.close();
    await sink.close();
    await cluster.stop();
  }
});
