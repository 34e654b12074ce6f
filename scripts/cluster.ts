/**
 * Herald's cluster mode on this machine, without Docker: a Temporal dev server (the pinned CLI of scripts/temporal.js,
 * installed into .tools/ when missing) with its Web UI, one `ENGINE=temporal` API process and N worker processes, all on
 * the embedded PostgreSQL under DATA_DIR (the first process starts it; the others attach). The same processes as
 * docker-compose.yml's `api` and `worker` services; Ctrl-C stops them all.
 *
 *   npm run cluster                 # 2 workers
 *   npm run cluster -- --workers 4
 *
 * Environment: the usual Herald variables (PORT, DATA_DIR, SMTP_URL, SEND_RATE_PER_SECOND, …), plus TEMPORAL_PORT
 * (default 7233) and TEMPORAL_UI_PORT (default 8233). Temporal's state is kept in DATA_DIR/temporal.db.
 * The banner comes once every worker polls the task queue (under its EXECUTOR_ID, cluster-worker-<n>); a worker that
 * exits first (e.g. it refuses to join a database run at another SEND_RATE_PER_SECOND) stops the cluster, exit code 1.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { WORKFLOW_TASK_QUEUE } from '../workflows/policy';
import { startDevServer } from './temporalDevServer';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ensureTemporal } = require('./temporal.js') as { ensureTemporal(): string };

const ROOT = path.resolve(__dirname, '..');
const arg = process.argv.indexOf('--workers');
const WORKERS = Number(arg > 0 ? process.argv[arg + 1] : process.env.WORKERS ?? 2);
const dataDir = path.resolve(process.env.DATA_DIR ?? path.join(ROOT, '.data'));
const port = process.env.PORT ?? '3000';

function herald(script: string, env: Record<string, string>, name: string): ChildProcess {
  const child = spawn(process.execPath, [...(script === 'bin/worker.ts' ? ['--max-old-space-size=160'] : []), path.join(ROOT, 'scripts', 'run.cjs'), script], {
    // Workers as `npm run worker` starts them (package.json): a capped heap and two malloc arenas.
    cwd: ROOT, env: { ...process.env, ...(script === 'bin/worker.ts' ? { MALLOC_ARENA_MAX: '2' } : {}), ...env }, stdio: ['ignore', 'inherit', 'inherit'],
  });
  child.on('exit', (code, signal) => { if (!stopping) console.error(`${name} exited (${code ?? signal})`); });
  return child;
}

let stopping = false;

/**
 * Waits until a poller of every worker (its Temporal identity is its EXECUTOR_ID) is on the task queue, so that the
 * banner comes once the cluster runs; throws when a worker exits first (a refusal names its reason above).
 */
async function workersPolling(address: string, namespace: string, ids: string[], workers: ChildProcess[]): Promise<void> {
  const connection = await Connection.connect({ address, connectTimeout: '5s' });
  try {
    const client = new Client({ connection, namespace });
    const deadline = Date.now() + 180_000;
    for (;;) {
      const dead = workers.findIndex((w) => w.exitCode !== null || w.signalCode !== null);
      if (dead !== -1) throw new Error(`worker ${dead + 1} (${ids[dead]}) exited before it polled Temporal; see its message above`);
      const { pollers } = await client.workflowService.describeTaskQueue({
        namespace, taskQueue: { name: WORKFLOW_TASK_QUEUE }, taskQueueType: proto.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      });
      const polling = new Set((pollers ?? []).map((p) => p.identity));
      if (ids.every((id) => polling.has(id))) return;
      if (Date.now() > deadline) throw new Error(`workers ${ids.filter((id) => !polling.has(id)).join(', ')} did not poll Temporal within 3 minutes`);
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    await connection.close();
  }
}

async function main(): Promise<void> {
  if (!Number.isInteger(WORKERS) || WORKERS < 1) throw new Error('--workers must be a whole number ≥ 1');
  fs.mkdirSync(dataDir, { recursive: true });
  const cli = ensureTemporal();
  const temporal = await startDevServer({
    cli,
    port: Number(process.env.TEMPORAL_PORT ?? 7233),
    uiPort: Number(process.env.TEMPORAL_UI_PORT ?? 8233),
    dbFile: path.join(dataDir, 'temporal.db'),
    logFile: path.join(dataDir, 'temporal.log'),
    namespaces: process.env.TEMPORAL_NAMESPACE && process.env.TEMPORAL_NAMESPACE !== 'default' ? [process.env.TEMPORAL_NAMESPACE] : [],
  });
  // The console links each campaign to its workflow in this server's UI (TEMPORAL_UI_URL), unless told another one.
  const uiUrl = process.env.TEMPORAL_UI_URL || temporal.uiUrl;
  const env = { ENGINE: 'temporal', TEMPORAL_ADDRESS: temporal.address, DATA_DIR: dataDir, PORT: port, ...(uiUrl ? { TEMPORAL_UI_URL: uiUrl } : {}) };
  const children: ChildProcess[] = [];
  const stop = async (code = 0) => {
    if (stopping) return;
    stopping = true;
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map((c) => (c.exitCode !== null || c.signalCode !== null ? undefined : new Promise((r) => c.once('exit', r)))));
    await temporal.stop();
    process.exit(code);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());

  // The API first: it starts (or attaches to) the embedded PostgreSQL and runs the migrations; then the workers.
  children.push(herald('bin/api.ts', env, 'api'));
  for (let i = 0; i < 600; i++) {
    if (await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const ids = Array.from({ length: WORKERS }, (_, i) => `cluster-worker-${i + 1}`);
  const workers = ids.map((id, i) => herald('bin/worker.ts', { ...env, EXECUTOR_ID: id }, `worker ${i + 1}`));
  children.push(...workers);
  const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
  try {
    await workersPolling(temporal.address, namespace, ids, workers);
  } catch (err) {
    console.error(`npm run cluster: ${(err as Error).message}`);
    await stop(1);
    return;
  }
  console.log(`
Herald cluster: API on http://localhost:${port}, ${WORKERS} worker process(es), Temporal at ${temporal.address}
Temporal UI: ${temporal.uiUrl}/namespaces/${namespace}/workflows
  the workers (pollers of task queue ${WORKFLOW_TASK_QUEUE}): ${ids.join(', ')}
  find a campaign's workflow:  HeraldCampaignId="<campaign id>"   (or open campaign-<id>)
  every campaign:              HeraldKind="campaign"
  the domain re-check:         Schedules tab, domain-checks
Ctrl-C stops everything; data stays in ${dataDir}.
`);
}

main().catch((err: Error) => {
  console.error(`npm run cluster: ${err.message}`);
  process.exit(1);
});
