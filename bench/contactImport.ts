/**
 * Contact import against its floor (issue 30, "Performance"):
 *
 *   npx tsx bench/contactImport.ts            (1,000,000 rows; BENCH_ROWS=20000 for a quick check)
 *
 * Starts its own embedded PostgreSQL and one Herald process (API + worker, embedded engine), writes a CSV of BENCH_ROWS
 * rows with 5 data columns, and measures in the same run:
 * - the floor: a raw `COPY` of the same file into a staging table and one INSERT … SELECT of it into `contacts` (another
 *   project), the least any import of that file into that table can cost;
 * - the import: POST /contacts/imports with the file streamed from disk, until COMPLETED (upload and merge apart), alone
 *   on the machine as the floor was;
 * - the worker's RSS, sampled every 250 ms from the upload to the end;
 * Herald runs as deployed (docker-compose.yml): an API process, and a worker process started with the flags that
 * `npm run worker` gives it (MALLOC_ARENA_MAX, --max-old-space-size), as bench/campaign.ts measures its worker.
 * BENCH_ONE_PROCESS=1 runs both in one process without those flags instead (the shape of §29's first figures).
 * - POST /v1/send latency (p50, p99) idle, then while a second import of the file (into another project) runs, sends
 *   timed one after another; that import's own speed beside the sends is printed too;
 * - a third import, its worker SIGKILLed at half the rows and started again: it must end with exactly the file's
 *   contacts, no duplicates (BENCH_KILL=0 leaves it out; not in one process).
 * Prints a table for BENCHMARKS.md. With BENCH_PG_STAT=1, also the statements that took the import's time, per batch.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { from as copyFrom } from 'pg-copy-streams';
import { pipeline } from 'node:stream/promises';
import { printTopStatements, startCluster } from './lib/cluster';
import { benchProject, prepareEngineSchema, startHeraldChild } from './lib/herald';
import { machine, runBench, sleep, type Child } from './lib/proc';
import { startSink } from './lib/sink';
import { createProject } from '../projects/service';
import { IMPORT_BATCH_ROWS } from '../contacts/imports/batches';

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const ONE_PROCESS = process.env.BENCH_ONE_PROCESS === '1';

function writeFile(file: string): Promise<void> {
  const out = fs.createWriteStream(file);
  const plans = ['free', 'pro', 'team', 'enterprise'];
  async function* rows() {
    yield 'email,first_name,last_name,plan,seats,signed_up\n';
    for (let i = 0; i < ROWS; i += 1000) {
      let chunk = '';
      for (let j = i; j < Math.min(ROWS, i + 1000); j++) {
        chunk += `user${j}@example.org,First${j % 977},Last${j % 1013},${plans[j % 4]},${(j % 50) + 1},2024-${String((j % 12) + 1).padStart(2, '0')}-${String((j % 28) + 1).padStart(2, '0')}\n`;
      }
      yield chunk;
    }
  }
  return pipeline(rows, out);
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

function post(port: number, pathname: string, headers: Record<string, string>, body: Buffer | fs.ReadStream): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: pathname, method: 'POST', headers }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => { text += c.toString(); });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    if (Buffer.isBuffer(body)) req.end(body);
    else body.pipe(req);
  });
}

function get(port: number, pathname: string, headers: Record<string, string>): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: pathname, headers }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => { text += c.toString(); });
      res.on('end', () => resolve(JSON.parse(text).data));
    }).on('error', reject);
  });
}

runBench('bench:contact-import', 60 * 60_000, async () => {
  const cluster = await startCluster('contact-import');
  const sink = await startSink();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-import-'));
  const file = path.join(dir, 'contacts.csv');
  let herald: Child | undefined;
  let api: Child | undefined;
  try {
    console.log(`machine: ${machine(cluster.version)}`);
    await writeFile(file);
    const bytes = fs.statSync(file).size;
    console.log(`file: ${ROWS} rows, 5 data columns, ${(bytes / 1e6).toFixed(1)} MB`);

    // The floor: COPY into staging, one INSERT … SELECT into contacts, in one transaction.
    const floorProject = await createProject('Floor');
    const floorStart = Date.now();
    await cluster.knex.transaction(async (trx) => {
      await trx.raw('CREATE TEMPORARY TABLE raw_import (email text, first_name text, last_name text, plan text, seats text, signed_up text) ON COMMIT DROP');
      const conn = await trx.client.acquireConnection() as { query(s: unknown): NodeJS.WritableStream };
      await pipeline(fs.createReadStream(file), conn.query(copyFrom('COPY raw_import FROM STDIN (FORMAT csv, HEADER true)')));
      await trx.raw(`INSERT INTO contacts (id, project_id, email, subscribed, data)
        SELECT herald_uuidv7(), ?, email, true, jsonb_build_object('first_name', first_name, 'last_name', last_name, 'plan', plan, 'seats', seats::numeric, 'signed_up', signed_up)
        FROM raw_import`, [floorProject.id]);
    });
    const floorMs = Date.now() - floorStart;

    await prepareEngineSchema(cluster, sink.url);
    const project = await benchProject(cluster);
    const env = { SMTP_URL: sink.url, LOG_LEVEL: 'warn', SEND_RATE_PER_SECOND: '100000', IMPORT_MAX_BYTES: String(4 * 1024 ** 3), API_RATE_LIMIT_PER_MINUTE: '1000000' };
    // A worker as `npm run worker` starts it (its flags), under the one executor id: a restarted worker recovers the
    // killed one's workflows.
    const startWorker = (workerEnv: Record<string, string>, name: string) => {
      const script = (JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.worker!;
      const arena = /MALLOC_ARENA_MAX=(\d+)/.exec(script);
      return startHeraldChild(name, cluster, 'worker', { ...workerEnv, EXECUTOR_ID: 'bench-import', ...(arena ? { MALLOC_ARENA_MAX: arena[1]! } : {}) }, script.match(/--max-old-space-size=\d+/g) ?? []);
    };
    let port: number;
    if (ONE_PROCESS) {
      herald = startHeraldChild('herald', cluster, 'all', { ...env, EXECUTOR_ID: 'bench-import' });
      port = (await herald.ready).port as number;
    } else {
      herald = startWorker(env, 'herald worker');
      await herald.ready;
      // After the worker: two processes creating DBOS's schema at once collide (see bench/campaign.ts).
      api = startHeraldChild('herald api', cluster, 'api', { ...env, PORT: '0' });
      port = (await api.ready).port as number;
    }
    const auth = { Authorization: `Bearer ${project.secretKey}` };
    const send = async () => {
      const t0 = process.hrtime.bigint();
      const res = await post(port, '/v1/send', { ...auth, 'Content-Type': 'application/json' }, Buffer.from(JSON.stringify({ to: 'p99@example.org', from: 'hi@example.com', subject: 'Hi', body: '<p>hi</p>' })));
      if (res.status !== 200) throw new Error(`send: ${res.status} ${res.body}`);
      return Number(process.hrtime.bigint() - t0) / 1e6;
    };
    for (let i = 0; i < 20; i++) await send(); // warm
    const idle: number[] = [];
    for (let i = 0; i < 200; i++) idle.push(await send());

    const columns = JSON.stringify([{ column: 'email', to: 'email' }, { column: 'first_name', to: 'data' }, { column: 'last_name', to: 'data' }, { column: 'plan', to: 'data' },
      { column: 'seats', to: 'data', type: 'number' }, { column: 'signed_up', to: 'data', type: 'date' }]);
    // The worker's RSS before the import, after the sends above: what the import adds is the difference.
    herald.send({ type: 'mem' });
    const idleRss = ((await herald.next('mem')).rss as number) / 1024 / 1024;
    const rss: number[] = [];
    const heap: number[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        herald!.send({ type: 'mem' });
        const mem = await herald!.next('mem');
        rss.push((mem.rss as number) / 1024 / 1024);
        heap.push((mem.heapUsed as number) / 1024 / 1024);
        await sleep(250);
      }
    })();
    // One import of the file into a project of its own, until it ends; with `sending`, /v1/send is timed one request
    // after another meanwhile (each answer then the import's status), otherwise its status is asked every 200 ms.
    const runImport = async (key: string, sending: boolean) => {
      const headers = { Authorization: `Bearer ${key}` };
      const start = Date.now();
      const uploaded = await post(port, `/contacts/imports?columns=${encodeURIComponent(columns)}`, { ...headers, 'Content-Type': 'text/csv', 'Content-Length': String(bytes) }, fs.createReadStream(file));
      if (uploaded.status !== 202) throw new Error(`upload: ${uploaded.status} ${uploaded.body}`);
      const uploadMs = Date.now() - start;
      const id = JSON.parse(uploaded.body).data.id as string;
      const during: number[] = [];
      let status: Record<string, unknown>;
      for (;;) {
        if (sending) during.push(await send());
        else await sleep(200);
        status = await get(port, `/contacts/imports/${id}`, headers);
        if (!['QUEUED', 'RUNNING'].includes(status.status as string)) break;
      }
      return { ms: Date.now() - start, uploadMs, during, status };
    };
    // The speed bar compares the import with its floor, each alone on the machine; the latency bar times sends while
    // another import runs (its speed then is the import's under that load: printed too).
    if (cluster.pgStat) await cluster.knex.raw('SELECT pg_stat_statements_reset()');
    const alone = await runImport(project.secretKey, false);
    const loadedProject = await createProject('Import beside sends');
    const loaded = await runImport(loadedProject.secretKey, true);
    const { ms: importMs, uploadMs, status } = alone;
    const during = loaded.during;
    sampling = false;
    await sampler;
    console.log(`import: ${JSON.stringify(status.rows)} ${status.status}; beside the sends: ${JSON.stringify(loaded.status.rows)} ${loaded.status.status} in ${(loaded.ms / 1000).toFixed(1)} s (${(floorMs / loaded.ms).toFixed(2)} × the floor)`);
    console.log(`Herald: ${ONE_PROCESS ? 'API and worker in one process' : 'API and worker processes (the worker as npm run worker starts it)'}`);

    // Issue 30's crash: a third import of the file, its worker SIGKILLed once half the rows are read and started again;
    // the import must end COMPLETED with exactly the file's contacts. (In one process the API would die with it: skipped.)
    if (!ONE_PROCESS && process.env.BENCH_KILL !== '0') {
      const crashProject = await createProject('Import killed at half');
      const headers = { Authorization: `Bearer ${crashProject.secretKey}` };
      const uploaded = await post(port, `/contacts/imports?columns=${encodeURIComponent(columns)}`, { ...headers, 'Content-Type': 'text/csv', 'Content-Length': String(bytes) }, fs.createReadStream(file));
      if (uploaded.status !== 202) throw new Error(`upload: ${uploaded.status} ${uploaded.body}`);
      const id = JSON.parse(uploaded.body).data.id as string;
      let read = 0;
      while (read < ROWS / 2) {
        await sleep(100);
        read = ((await get(port, `/contacts/imports/${id}`, headers)).rows as { read: number }).read;
      }
      herald!.process.kill('SIGKILL');
      const killedAt = Date.now();
      herald = startWorker(env, 'herald worker (restarted)');
      await herald.ready;
      let end: Record<string, unknown>;
      for (;;) {
        end = await get(port, `/contacts/imports/${id}`, headers);
        if (!['QUEUED', 'RUNNING'].includes(end.status as string)) break;
        await sleep(200);
      }
      const [counted] = (await cluster.knex.raw('SELECT count(*)::int AS n, count(DISTINCT email)::int AS distinct FROM contacts WHERE project_id = ?', [crashProject.id])).rows as { n: number; distinct: number }[];
      const exact = end.status === 'COMPLETED' && counted!.n === ROWS && counted!.distinct === ROWS;
      console.log(`killed at half: worker SIGKILLed with ${read} of ${ROWS} rows read; ${end.status} ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill; ${counted!.n} contacts (${counted!.distinct} distinct): ${exact ? 'exactly the file\'s' : 'NOT the file\'s'}`);
      if (!exact) throw new Error('the import killed at half did not end with exactly the file\'s contacts');
    }
    console.log(`worker RSS idle before the import ${idleRss.toFixed(0)} MB, max during ${Math.max(...rss).toFixed(0)} MB (V8 heap used max ${Math.max(...heap).toFixed(0)} MB)`);
    if (cluster.pgStat) {
      console.log(`statements per batch of ${IMPORT_BATCH_ROWS} rows (upload included):`);
      await printTopStatements(cluster, 2 * Math.ceil(ROWS / IMPORT_BATCH_ROWS), 12);
    }
    console.log('\n| rows | raw COPY + INSERT (floor) | import alone (upload + merge) | of which upload | import ÷ floor speed | beside sends: import ÷ floor | worker RSS max | /v1/send p50 / p99 idle | during an import |');
    console.log('|---|---|---|---|---|---|---|---|---|');
    console.log(`| ${ROWS} | ${(floorMs / 1000).toFixed(1)} s | ${(importMs / 1000).toFixed(1)} s | ${(uploadMs / 1000).toFixed(1)} s | ${(floorMs / importMs).toFixed(2)} × | ${(floorMs / loaded.ms).toFixed(2)} × | ${Math.max(...rss).toFixed(0)} MB | ${pct(idle, 50).toFixed(1)} / ${pct(idle, 99).toFixed(1)} ms | ${pct(during, 50).toFixed(1)} / ${pct(during, 99).toFixed(1)} ms (${during.length} sends) |`);
  } finally {
    await api?.stop();
    await herald?.stop();
    await sink.close?.();
    await cluster.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
