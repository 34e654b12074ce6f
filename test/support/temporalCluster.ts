import type { ChildProcess } from 'node:child_process';
import { Client, Connection } from '@temporalio/client';
import request from 'supertest';
import { createProject, type CreatedProject } from '../../projects/service';
import { addDomain } from '../../domains/rows';
import { freePort } from '../../scripts/temporalDevServer';
import { TEST_SECRET } from './app';
import { createTestDatabase, type TestDatabase } from './db';
import { childEnv, exited, killGroup, spawnHerald, waitFor } from './processes';
import { startSmtpServer, type TestSmtpServer } from './smtp';
import type { TestTemporal } from './temporal';

/**
 * Herald's cluster mode as an operator runs it, on this machine: an `ENGINE=temporal` API process (bin/api.ts) and
 * worker processes (bin/worker.ts) on a test database, against the run's Temporal dev server (this file's namespace),
 * delivering to a real SMTP server. The test process holds only a Temporal client, to look at what the server has.
 */
/**
 * `n` subscribed contacts `<group>-<i>@example.org` with data.group = group, in one statement: the audience of a
 * FILTERED campaign on `data.group`.
 */
export async function addGroupContacts(c: Pick<HeraldCluster, 'db' | 'project'>, group: string, n: number): Promise<void> {
  await c.db.knex.raw(
    `INSERT INTO contacts (project_id, email, subscribed, data)
     SELECT ?::uuid, ?::text || '-' || g || '@example.org', true, jsonb_build_object('group', ?::text) FROM generate_series(1, ?::int) g`,
    [c.project.id, group, group, n],
  );
}

export interface HeraldCluster {
  db: TestDatabase;
  smtp: TestSmtpServer;
  project: CreatedProject;
  /** supertest against the API process. */
  http(): request.Agent;
  apiUrl: string;
  /** A Temporal client of the test's own (visibility queries, cancels as Temporal UI makes them). */
  client: Client;
  temporal: TestTemporal;
  /** The environment every Herald process of the cluster gets (plus `extra`). */
  env(extra?: Record<string, string>): NodeJS.ProcessEnv;
  /** Starts a worker process; `id` is its EXECUTOR_ID. Its stderr is kept for failure messages. */
  startWorker(id: string, env?: Record<string, string>): ChildProcess;
  /**
   * Waits until every running worker has started delivering (its workflow bundle built, its pollers and delivery queue
   * running): a worker's start costs a core for a second or two, which would disturb a measurement taken meanwhile.
   */
  workersReady(): Promise<void>;
  /** The worker processes started and not stopped since, by id (one may have exited by itself: see its exitCode). */
  workers(): Map<string, ChildProcess>;
  /** Stops every worker (SIGTERM, or SIGKILL) and waits until they have exited. */
  stopWorkers(signal?: NodeJS.Signals): Promise<void>;
  /** Starts (or restarts) the API process with these settings, and waits until it answers /health. */
  startApi(env?: Record<string, string>): Promise<void>;
}

/** Settings of a process; a function is read at each start (for values known only in a beforeAll, such as a server's address). */
export type ClusterEnv = Record<string, string> | (() => Record<string, string>);

export interface ClusterOptions {
  /** Worker processes started before the file's tests (default 2), with `workerEnv`. */
  workers?: number;
  workerEnv?: ClusterEnv;
  apiEnv?: ClusterEnv;
  /**
   * A Temporal server of the file's own instead of the run's dev server (its own dynamic config, or one the test
   * stops and starts): resolved first in the cluster's beforeAll, before any process starts. The file stops it.
   */
  temporal?: () => Promise<TestTemporal>;
}

const envOf = (env: ClusterEnv | undefined): Record<string, string> => (typeof env === 'function' ? env() : env ?? {});

/** Registers beforeAll/afterAll for the file; read the fields inside tests. */
export function heraldCluster(temporal: TestTemporal, opts: ClusterOptions = {}): HeraldCluster {
  const workers = new Map<string, ChildProcess>();
  const ready = new Map<ChildProcess, Promise<void>>();
  let api: ChildProcess | undefined;
  let connection: Connection | undefined;
  const cluster = { temporal } as HeraldCluster;

  cluster.env = (extra = {}) => childEnv({
    ENGINE: 'temporal', TEMPORAL_ADDRESS: cluster.temporal.address, TEMPORAL_NAMESPACE: cluster.temporal.namespace,
    DATABASE_URL: cluster.db.url, SMTP_URL: cluster.smtp.url, SECRET_KEY: TEST_SECRET.toString('utf8'),
    PUBLIC_URL: 'http://herald.test', LOG_LEVEL: 'warn', API_RATE_LIMIT_PER_MINUTE: '1000000', ...extra,
  });
  cluster.startWorker = (id, env = {}) => {
    // At info, a worker logs "delivering mail" once it runs (bin/runtime.ts); its other info lines are few.
    const child = spawnHerald('bin/worker.ts', [], cluster.env({ EXECUTOR_ID: id, LOG_LEVEL: 'info', ...envOf(opts.workerEnv), ...env }));
    let stderr = '';
    const started = new Promise<void>((resolve, reject) => {
      let out = '';
      const onData = (c: Buffer) => {
        out = (out + c.toString()).slice(-4096);
        if (out.includes('"msg":"delivering mail"')) { child.stdout!.off('data', onData); child.stdout!.resume(); resolve(); }
      };
      child.stdout!.on('data', onData);
      child.once('exit', (code) => reject(new Error(`worker ${id} exited (${code}) before it started delivering: ${stderr}`)));
    });
    started.catch(() => undefined); // a worker stopped before anyone waited for it is no failure
    ready.set(child, started);
    child.stderr!.on('data', (c: Buffer) => { stderr = (stderr + c.toString()).slice(-20_000); });
    child.on('exit', (code) => { if (code && code < 128) console.error(`worker ${id} exited ${code}: ${stderr}`); });
    workers.set(id, child);
    return child;
  };
  cluster.workers = () => new Map(workers);
  cluster.workersReady = async () => {
    await Promise.all([...workers.values()].map((w) => ready.get(w)));
  };
  cluster.stopWorkers = async (signal = 'SIGTERM') => {
    const all = [...workers.values()];
    workers.clear();
    for (const w of all) killGroup(w, signal);
    await Promise.all(all.map(exited));
  };
  cluster.startApi = async (env = {}) => {
    if (api) {
      killGroup(api, 'SIGTERM');
      await exited(api);
    }
    const port = await freePort();
    let stderr = '';
    const child = spawnHerald('bin/api.ts', [], cluster.env({ PORT: String(port), ...envOf(opts.apiEnv), ...env }));
    child.stdout!.resume();
    child.stderr!.on('data', (c: Buffer) => { stderr = (stderr + c.toString()).slice(-20_000); });
    api = child;
    cluster.apiUrl = `http://127.0.0.1:${port}`;
    await waitFor('the API process to answer /health', async () => {
      if (child.exitCode !== null) throw new Error(`the API process exited ${child.exitCode}: ${stderr}`);
      const ok = await fetch(`${cluster.apiUrl}/health`).then((r) => r.ok, () => false);
      return ok ? true : undefined;
    }, 60_000, 100);
  };
  cluster.http = () => request.agent(cluster.apiUrl);

  beforeAll(async () => {
    if (opts.temporal) cluster.temporal = await opts.temporal();
    cluster.smtp = await startSmtpServer();
    cluster.db = await createTestDatabase();
    cluster.project = await createProject('Temporal cluster');
    await addDomain(cluster.project.id, 'example.com', true);
    connection = await Connection.connect({ address: cluster.temporal.address, connectTimeout: '5s' });
    cluster.client = new Client({ connection, namespace: cluster.temporal.namespace });
    await cluster.startApi();
    for (let i = 1; i <= (opts.workers ?? 2); i++) cluster.startWorker(`w${i}`);
  }, 120_000);

  afterAll(async () => {
    await cluster.stopWorkers('SIGKILL');
    if (api) {
      killGroup(api, 'SIGKILL');
      await exited(api);
    }
    await connection?.close();
    await cluster.smtp?.close();
    await cluster.db?.close();
  }, 60_000);

  return cluster;
}
