import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { memorySettings } from '../db/embedded';
import {
  childEnv, killGroup, livePostmasterPid, runHerald, spawnHerald, stopClusterIfRunning, waitFor, type RunResult,
} from './support/processes';

/**
 * The embedded PostgreSQL shared between Herald processes (issue 2, points 3 and 7): without DATABASE_URL,
 * the server (`npm start`) and the operator CLI reach the same cluster under DATA_DIR/pg, the one that
 * starts it does not start a second one, and the last process out stops it.
 */

const dataDirs: string[] = [];
const children = new Set<ChildProcess>();

function freshDataDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-embedded-'));
  // As root, PostgreSQL runs as the `postgres` user, which must be able to enter the directory.
  fs.chmodSync(dir, 0o755);
  dataDirs.push(dir);
  return dir;
}

const embeddedEnv = (dataDir: string, extra: Record<string, string | undefined> = {}) =>
  childEnv({ DATA_DIR: dataDir, DATABASE_URL: undefined, ...extra });

const cli = (dataDir: string, args: string[], extra: Record<string, string | undefined> = {}): Promise<RunResult> =>
  runHerald('bin/cli.ts', args, embeddedEnv(dataDir, extra));

async function cliJson<T>(dataDir: string, ...args: string[]): Promise<T> {
  const res = await cli(dataDir, args);
  if (res.code !== 0) throw new Error(`herald ${args.join(' ')} exited ${res.code}: ${res.stderr}`);
  return JSON.parse(res.stdout) as T;
}

interface LogLine { msg?: string; port?: number; [k: string]: unknown }

const jsonLines = (text: string): LogLine[] => text.split('\n').filter((l) => l.startsWith('{')).map((l) => {
  try {
    return JSON.parse(l) as LogLine;
  } catch {
    return {};
  }
});

interface Server {
  child: ChildProcess;
  port: number;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  request(method: string, urlPath: string, key?: string, body?: unknown): Promise<{ status: number; body: { error?: { code?: string } } & Record<string, unknown> }>;
}

/** `npm start` on DATA_DIR (PORT=0), returning once it logs "Herald API listening". */
async function startServer(dataDir: string, script = 'bin/start.ts'): Promise<Server> {
  const child = spawnHerald(script, [], embeddedEnv(dataDir, { PORT: '0', LOG_LEVEL: 'info' }));
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (s: string) => { stdout += s; });
  child.stderr!.setEncoding('utf8').on('data', (s: string) => { stderr += s; });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('close', (code, signal) => { children.delete(child); resolve({ code, signal }); });
  });
  const port = await waitFor('the server to listen', () => {
    const line = jsonLines(stdout).find((l) => l.msg === 'Herald API listening');
    if (line) return line.port!;
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`the server exited (${child.exitCode ?? child.signalCode}) before listening\nstdout: ${stdout}\nstderr: ${stderr}`);
    }
    return undefined;
  }, 60_000);
  const request: Server['request'] = async (method, urlPath, key, body) => {
    const headers: Record<string, string> = {};
    if (key) headers.Authorization = `Bearer ${key}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(`http://127.0.0.1:${port}${urlPath}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : {} };
  };
  return { child, port, stdout: () => stdout, stderr: () => stderr, exited, request };
}

/** SIGTERM to the server, then its exit. */
async function stopServer(server: Server) {
  server.child.kill('SIGTERM');
  return server.exited;
}

afterAll(() => {
  // Whatever happened above: nothing may be left running.
  for (const child of children) killGroup(child);
  for (const dir of dataDirs) {
    stopClusterIfRunning(path.join(dir, 'pg'));
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

interface Created { id: string; name: string; secretKey: string; publicKey: string }

test('the CLI alone on an empty DATA_DIR creates the cluster, works, and leaves no PostgreSQL running', async () => {
  const dataDir = freshDataDir();
  const pgDir = path.join(dataDir, 'pg');

  const res = await cli(dataDir, ['project', 'create', '--name', 'Solo']);
  expect(res.code).toBe(0);
  const created = JSON.parse(res.stdout) as Created; // stdout is only the JSON, even on the run that initialises the cluster
  expect(created).toMatchObject({ name: 'Solo' });
  expect(created.secretKey).toMatch(/^sk_[A-Za-z0-9]{40}$/);
  expect(fs.existsSync(path.join(pgDir, 'PG_VERSION'))).toBe(true);
  expect(livePostmasterPid(pgDir)).toBeUndefined();

  // The data is kept between runs, and again nothing is left running.
  const list = await cliJson<{ id: string; name: string }[]>(dataDir, 'project', 'list');
  expect(list.map((p) => p.id)).toEqual([created.id]);
  expect(livePostmasterPid(pgDir)).toBeUndefined();
});

test('a start that fails part-way (its port taken) exits 1 and leaves no PostgreSQL running', async () => {
  const dataDir = freshDataDir();
  const taken = net.createServer();
  await new Promise<void>((resolve) => taken.listen(0, resolve));
  try {
    const { port } = taken.address() as net.AddressInfo;
    const res = await runHerald('bin/start.ts', [], embeddedEnv(dataDir, { PORT: String(port), LOG_LEVEL: 'info' }));
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('Herald failed to start: listen EADDRINUSE');
    // It had started the cluster (and the worker): it stopped what it started, the cluster with it, before exiting.
    expect(fs.existsSync(path.join(dataDir, 'pg', 'PG_VERSION'))).toBe(true);
    expect(jsonLines(res.stdout).map((l) => l.msg)).toContain('stopping embedded PostgreSQL');
    expect(livePostmasterPid(path.join(dataDir, 'pg'))).toBeUndefined();
  } finally {
    await new Promise<void>((resolve) => taken.close(() => resolve()));
  }
});

describe('server and CLI on one DATA_DIR', () => {
  const dataDir = freshDataDir();
  const pgDir = path.join(dataDir, 'pg');
  let server: Server;
  let defaultSecretKey: string;
  let acme: Created;

  beforeAll(async () => { server = await startServer(dataDir); });
  afterAll(() => { if (server) killGroup(server.child); });

  test('the first start creates "Default" and prints its keys once', async () => {
    expect(server.stdout()).toContain('secret key: sk_');
    expect(server.stdout()).toContain('public key: pk_');
    defaultSecretKey = /secret key: (sk_[A-Za-z0-9]{40})/.exec(server.stdout())![1]!;
    expect((await server.request('GET', '/health')).status).toBe(200);
    expect((await server.request('GET', '/contacts', defaultSecretKey)).status).toBe(200);
  });

  test('the first start also prints a one-time setup link that creates the first account, an operator', async () => {
    const token = /\/app\/setup#token=([A-Za-z0-9_-]{43})/.exec(server.stdout())?.[1];
    expect(token).toBeDefined();
    const body = { token, email: 'operator@example.com', name: 'Operator', password: 'a long enough password' };
    const res = await server.request('POST', '/auth/setup', undefined, body);
    expect(res.status).toBe(201);
    expect((await server.request('POST', '/auth/setup', undefined, body)).status).toBe(409);
  });

  test('the CLI attaches to the server\'s cluster instead of starting a second one', async () => {
    const before = livePostmasterPid(pgDir);
    expect(before).toBeDefined();

    const res = await cli(dataDir, ['project', 'create', '--name', 'Acme'], { LOG_LEVEL: 'debug' });
    expect(res.code).toBe(0);
    acme = JSON.parse(res.stdout) as Created; // logs go to stderr: stdout stays one JSON object
    expect(acme).toMatchObject({ name: 'Acme' });
    const messages = jsonLines(res.stderr).map((l) => l.msg);
    expect(messages).toContain('attached to running embedded PostgreSQL');
    expect(messages).not.toContain('starting embedded PostgreSQL');
    expect(messages).not.toContain('stopping embedded PostgreSQL');

    expect(livePostmasterPid(pgDir)).toBe(before);
    expect((await server.request('GET', '/health')).status).toBe(200);
  });

  test('the key the CLI printed works against the running server', async () => {
    const res = await server.request('POST', '/contacts', acme.secretKey, { email: 'ops@acme.example' });
    expect(res.status).toBe(201);
  });

  test('project disable through the CLI takes effect on the running server: 403 PROJECT_DISABLED', async () => {
    const before = livePostmasterPid(pgDir);
    expect(await cliJson(dataDir, 'project', 'disable', acme.id)).toEqual({ id: acme.id, disabled: true });
    const res = await server.request('POST', '/contacts', acme.secretKey, { email: 'ops@acme.example' });
    expect(res.status).toBe(403);
    expect(res.body.error?.code).toBe('PROJECT_DISABLED');

    // The CLI has exited; the cluster it attached to is still the server's, and the server still answers.
    expect(livePostmasterPid(pgDir)).toBe(before);
    expect((await server.request('GET', '/health')).status).toBe(200);
    expect((await server.request('GET', '/contacts', defaultSecretKey)).status).toBe(200);
  });

  test('SIGTERM stops the server with exit code 0, and the cluster with it', async () => {
    const { code, signal } = await stopServer(server);
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    await waitFor('the cluster to stop', () => (livePostmasterPid(pgDir) === undefined ? true : undefined), 30_000);
    expect(jsonLines(server.stdout()).map((l) => l.msg)).toContain('stopping embedded PostgreSQL');
  });

  test('the stop wrote down which pages the buffers held (pg_prewarm), for the next start to read back', () => {
    const blocks = fs.readFileSync(path.join(pgDir, 'autoprewarm.blocks'), 'utf8').trim().split('\n');
    // A header (<<N>>), then one line per block: the first run's queries read the herald database's tables.
    expect(blocks[0]).toMatch(/^<<\d+>>$/);
    expect(blocks.length).toBeGreaterThan(10);
  });

  test('a second start on the same DATA_DIR prints no new keys and serves the same data', async () => {
    const again = await startServer(dataDir);
    try {
      // Sized for the machine (db/embedded.ts memorySettings), and the first run's pages read back into the buffers.
      const expected = await memorySettings();
      const settings = await pgQuery(pgDir, "SELECT name, setting, unit FROM pg_settings WHERE name IN ('shared_buffers', 'effective_cache_size', 'shared_preload_libraries')");
      const shown = Object.fromEntries(settings.map((r) => [r.name, r.unit === '8kB' ? `${(Number(r.setting) * 8) / 1024}MB` : r.setting]));
      expect(shown).toEqual({ shared_buffers: expected.shared_buffers, effective_cache_size: expected.effective_cache_size, shared_preload_libraries: 'pg_prewarm' });
      await waitFor('autoprewarm to read the pages back', () => (/autoprewarm successfully prewarmed [1-9]\d* of/.test(fs.readFileSync(path.join(dataDir, 'pg.log'), 'utf8')) ? true : undefined), 30_000);
      expect(again.stdout()).not.toContain('secret key:');
      expect(again.stdout()).not.toContain('Herald created the project');
      expect(again.stdout()).not.toContain('/app/setup#token=');
      // Kept between runs: the Default key from the first start works, Acme is still disabled.
      expect((await again.request('GET', '/contacts', defaultSecretKey)).status).toBe(200);
      const acmeRes = await again.request('GET', '/contacts', acme.secretKey);
      expect(acmeRes.status).toBe(403);
      expect(acmeRes.body.error?.code).toBe('PROJECT_DISABLED');
      const list = await cliJson<{ name: string }[]>(dataDir, 'project', 'list');
      expect(list.map((p) => p.name)).toEqual(['Default', 'Acme']);
    } finally {
      const { code } = await stopServer(again);
      expect(code).toBe(0);
    }
    await waitFor('the cluster to stop', () => (livePostmasterPid(pgDir) === undefined ? true : undefined), 30_000);
  });
});

/** Rows of one query on the cluster under `pgDir`, as its superuser. */
async function pgQuery(pgDir: string, sql: string): Promise<Record<string, string>[]> {
  const credentials = JSON.parse(fs.readFileSync(path.join(pgDir, 'herald-credentials.json'), 'utf8')) as { user: string; password: string };
  const pgPort = Number(fs.readFileSync(path.join(pgDir, 'postmaster.pid'), 'utf8').split('\n')[3]);
  const client = new pg.Client({ host: '127.0.0.1', port: pgPort, user: credentials.user, password: credentials.password, database: 'postgres' });
  await client.connect();
  try {
    return (await client.query(sql)).rows as Record<string, string>[];
  } finally {
    await client.end();
  }
}

describe('a server whose connection pool has gone idle', () => {
  const dataDir = freshDataDir();
  const pgDir = path.join(dataDir, 'pg');
  let server: Server;

  // API only (`npm run api`): a worker polls its queues all the time, so its pool never goes idle.
  beforeAll(async () => { server = await startServer(dataDir, 'bin/api.ts'); });
  afterAll(async () => {
    if (!server) return;
    if (server.child.exitCode === null) await stopServer(server);
  });

  /**
   * Regression: a running server whose knex pool has reaped its idle connections must still count as a user of
   * the cluster (it holds one presence connection for its lifetime). The test closes the server's pooled
   * connections, as the idle reaper would after 30 s, and runs the CLI.
   */
  test('the CLI does not stop the cluster under a running server that holds no pooled connection', async () => {
    const pid = livePostmasterPid(pgDir);
    expect(pid).toBeDefined();
    expect((await server.request('GET', '/health')).status).toBe(200);

    const credentials = JSON.parse(fs.readFileSync(path.join(pgDir, 'herald-credentials.json'), 'utf8')) as { user: string; password: string };
    const pgPort = Number(fs.readFileSync(path.join(pgDir, 'postmaster.pid'), 'utf8').split('\n')[3]);
    const admin = new pg.Client({ host: '127.0.0.1', port: pgPort, user: credentials.user, password: credentials.password, database: 'postgres' });
    await admin.connect();
    try {
      const pooled = "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' AND application_name = 'herald' AND pid <> pg_backend_pid()";
      await admin.query(`SELECT pg_terminate_backend(pid) FROM (${pooled}) s`);
      await waitFor('the pooled connections to close', async () => ((await admin.query(pooled)).rowCount === 0 ? true : undefined), 10_000);
    } finally {
      await admin.end();
    }

    const res = await cli(dataDir, ['project', 'list']);
    expect(res.code).toBe(0);
    expect(livePostmasterPid(pgDir)).toBe(pid);
    expect((await server.request('GET', '/health')).status).toBe(200);
  });
});
