import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { stopAllClustersSync } from './cluster';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');

/** Where BENCH_CPU_PROF=1 writes the children's V8 profiles: BENCH_PROFILE_DIR, else the temporary directory's herald-bench-profiles. */
export const PROFILE_DIR = process.env.BENCH_PROFILE_DIR ?? path.join(os.tmpdir(), 'herald-bench-profiles');

/** A child's node options for a V8 profile into PROFILE_DIR (written when it exits) under BENCH_CPU_PROF=1; none otherwise. */
export const cpuProfileArgs = (): string[] => (process.env.BENCH_CPU_PROF === '1' ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : []);

/** A benchmark child: a TypeScript entry run by `node --import tsx`, talking to the parent over IPC. */
export interface Child {
  name: string;
  process: ChildProcess;
  pid: number;
  /** The child's first `{ type: 'ready', ... }` message. */
  ready: Promise<Record<string, unknown>>;
  /** Waits for the next message of a type. */
  next(type: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  send(msg: Record<string, unknown>): void;
  /** SIGTERM, then SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

const children = new Set<Child>();

/** Herald's configuration variables are cleared: each child gets exactly the ones the benchmark sets. */
function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const k of ['PORT', 'DATA_DIR', 'DATABASE_URL', 'SMTP_URL', 'ENGINE', 'TEMPORAL_ADDRESS', 'LOG_LEVEL', 'API_RATE_LIMIT_PER_MINUTE',
    'SEND_RATE_PER_SECOND', 'EXECUTOR_ID', 'SECRET_KEY', 'PUBLIC_URL']) delete base[k];
  return { ...base, ...env };
}

/** `root`: the working tree the script is run from (REPO_ROOT; another checkout to measure older code in the same run). */
export function spawnChild(name: string, script: string, env: Record<string, string>, nodeArgs: string[] = [], root = REPO_ROOT): Child {
  const cp = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', path.join(root, script)], {
    cwd: root,
    env: childEnv(env),
    stdio: ['ignore', process.env.BENCH_CHILD_STDOUT === '1' ? 'inherit' : 'ignore', 'inherit', 'ipc'],
  });
  const inbox: Record<string, unknown>[] = [];
  let waiters: { type: string; resolve: (m: Record<string, unknown>) => void; reject: (e: Error) => void }[] = [];
  let exited: Error | undefined;
  cp.on('message', (m: Record<string, unknown>) => {
    const w = waiters.find((x) => x.type === m.type);
    if (w) {
      waiters = waiters.filter((x) => x !== w);
      w.resolve(m);
    } else {
      inbox.push(m);
    }
  });
  cp.on('exit', (code, signal) => {
    exited = new Error(`${name} exited (code ${code}, signal ${signal})`);
    for (const w of waiters) w.reject(exited);
    waiters = [];
    children.delete(child);
  });
  const next = (type: string, timeoutMs = 120_000) => {
    const i = inbox.findIndex((m) => m.type === type);
    if (i >= 0) return Promise.resolve(inbox.splice(i, 1)[0]!);
    if (exited) return Promise.reject(exited);
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${name}: no "${type}" message within ${timeoutMs} ms`)), timeoutMs);
      waiters.push({
        type,
        resolve: (m) => { clearTimeout(timer); resolve(m); },
        reject: (e) => { clearTimeout(timer); reject(e); },
      });
    });
  };
  const child: Child = {
    name,
    process: cp,
    pid: cp.pid!,
    ready: next('ready', 120_000),
    next,
    send: (msg) => { cp.send(msg); },
    stop: (graceMs = 15_000) => new Promise<void>((resolve) => {
      if (cp.exitCode !== null || cp.signalCode !== null) { resolve(); return; }
      const timer = setTimeout(() => cp.kill('SIGKILL'), graceMs);
      cp.once('exit', () => { clearTimeout(timer); resolve(); });
      cp.kill('SIGTERM');
    }),
  };
  child.ready.catch(() => undefined);
  children.add(child);
  return child;
}

function killAllChildrenSync(): void {
  for (const c of children) {
    try { c.process.kill('SIGKILL'); } catch { /* gone */ }
  }
  children.clear();
}

/**
 * Runs a benchmark's main function bounded in time: on the deadline, SIGINT or SIGTERM, every child is killed and
 * every cluster stopped before the process exits.
 */
export function runBench(name: string, timeoutMs: number, main: () => Promise<void>): void {
  const started = Date.now();
  const abort = (why: string) => {
    console.error(`\n${name}: ${why}; cleaning up`);
    killAllChildrenSync();
    stopAllClustersSync();
    process.exit(1);
  };
  const watchdog = setTimeout(() => abort(`did not finish within ${timeoutMs / 1000} s`), timeoutMs);
  watchdog.unref();
  process.once('SIGINT', () => abort('interrupted'));
  process.once('SIGTERM', () => abort('terminated'));
  main().then(() => {
    console.log(`\n${name}: done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    process.exit(0);
  }, (err: unknown) => {
    console.error(err);
    killAllChildrenSync();
    stopAllClustersSync();
    process.exit(1);
  });
}

/** What BENCHMARKS.md states about the machine. */
export function machine(pgVersion: string): string {
  const cpus = os.cpus();
  let nproc = String(os.availableParallelism());
  try { nproc = execFileSync('nproc', { encoding: 'utf8' }).trim(); } catch { /* keep Node's count */ }
  return [
    `date ${new Date().toISOString()}`,
    `nproc ${nproc} (${cpus[0]?.model ?? 'unknown CPU'})`,
    `memory ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
    `node ${process.version}`,
    `PostgreSQL ${pgVersion}`,
    `${os.type()} ${os.release()}`,
  ].join(', ');
}

const CLK_TCK = (() => {
  try { return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100; } catch { return 100; }
})();

function statOf(pid: number): { ppid: number; cpuMs: number; childrenMs: number } | undefined {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
    // rest[0] = state (field 3), so field n is rest[n - 3]: utime 14, stime 15, cutime 16, cstime 17.
    return { ppid: Number(rest[1]), cpuMs: ((Number(rest[11]) + Number(rest[12])) * 1000) / CLK_TCK, childrenMs: ((Number(rest[13]) + Number(rest[14])) * 1000) / CLK_TCK };
  } catch {
    return undefined;
  }
}

/**
 * CPU time (ms) used so far by a process, and by a process plus its children (PostgreSQL's backends): the live ones,
 * and those that exited and were reaped (a pool that closes its idle connections), whose time the parent's
 * cutime/cstime keep.
 */
export function cpuMs(pid: number, withChildren = false): number {
  const own = statOf(pid);
  let total = (own?.cpuMs ?? 0) + (withChildren ? own?.childrenMs ?? 0 : 0);
  if (withChildren) {
    for (const entry of fs.readdirSync('/proc')) {
      const p = Number(entry);
      if (!p || p === pid) continue;
      const s = statOf(p);
      if (s && s.ppid === pid) total += s.cpuMs;
    }
  }
  return total;
}

/**
 * CPU time (ms) of each child of `pid` (PostgreSQL's backends and background processes) by its process title
 * (`postgres: walwriter`, `postgres: herald herald 127.0.0.1(5123) idle`): where a cluster's CPU goes. Children that
 * exited meanwhile are missing (the parent's cutime has them, cpuMs counts them).
 */
export function childCpuMs(pid: number): Map<number, { title: string; cpuMs: number }> {
  const out = new Map<number, { title: string; cpuMs: number }>();
  for (const entry of fs.readdirSync('/proc')) {
    const p = Number(entry);
    if (!p || p === pid) continue;
    const s = statOf(p);
    if (!s || s.ppid !== pid) continue;
    let title = '';
    try { title = fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').replace(/\0/g, ' ').trim(); } catch { /* exited */ }
    out.set(p, { title, cpuMs: s.cpuMs });
  }
  return out;
}

/** Sum of all CPUs' busy time (ms) from /proc/stat, for the whole machine's utilisation. */
export function machineBusyMs(): number {
  const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = line;
  return ((user + nice + system + irq + softirq + steal) * 1000) / CLK_TCK;
}

/**
 * The share of the machine's CPU time that the hypervisor gave to other guests (steal) since `since` (a snapshot of
 * this function's `at`): on a shared virtual machine, time when this one wanted to run and could not.
 */
export function stealSince(since?: number[]): { at: number[]; share: number } {
  const at = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  if (!since) return { at, share: 0 };
  const d = at.map((v, i) => v - since[i]!);
  const total = d.reduce((a, b) => a + b, 0);
  return { at, share: total > 0 ? d[7]! / total : 0 };
}

/** A port free on loopback now, for a child that must be told its port (an SMTP listener). */
export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as net.AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
