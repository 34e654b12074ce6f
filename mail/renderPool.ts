import os from 'node:os';
import path from 'node:path';
import { Piscina } from 'piscina';
import { LRUCache } from 'lru-cache';
import { RENDER_BUDGET, RenderBudget, renderJob, type Renderer, type RenderJob, type RenderJobResult } from './render';

// A hard stop for a thread that is still busy well past the budget that liquidjs enforces from within.
const ABORT_AFTER_MS = RENDER_BUDGET.requestMs + 4_000;
// A render thread's heap: the caps keep a job's output to tens of MB; this bounds what a template builds on the way.
const THREAD_HEAP_MB = 256;

/**
 * The inline attempt: all the jobs of one call together get this much of the API's own loop. Most transactional
 * templates render in microseconds, and a thread's round trip costs more than that (a fifth of /v1/send's
 * throughput on two cores). Whatever does not fit is rendered on a thread with the full budgets, so the loop is never
 * held longer than this per call, and templates that did not fit once go straight to a thread after.
 */
const INLINE = { ms: 5, chars: 1_000_000, memory: 2_000_000, templateChars: 100_000 };

/**
 * A template goes straight to a thread only once it has passed the inline budget this many times in a row, each time
 * with most of the budget to itself. Passing it once says little: a process's first render of a template compiles it
 * with cold code (over 5 ms where the next ones take 0.05), and a GC pause or the machine's other load can stretch any
 * render. Remembered after one such render, a cheap template was rendered on a thread for the rest of the process's life
 * (bench/send.ts, BENCH_CPU_PROF=1: after the first second of load, every render on a thread).
 */
const COSTLY_AFTER = 3;

export interface RenderPool {
  render: Renderer;
  close(): Promise<void>;
}

/**
 * Template rendering off the API's event loop (piscina worker threads). A template is user input: even within its
 * budget a render can hold a thread for a second, and on the loop that second would stall every other request of
 * every project. Threads are started on first use and stopped when idle; a thread that runs out of memory or past the
 * hard stop is replaced, and its job answers `too_complex`.
 *
 * One tenant (project) has at most `threads - 1` jobs on the threads at once; its other jobs wait their turn here,
 * so one project's costly templates leave a thread to everyone else.
 */
export function createRenderPool(threads = defaultRenderThreads(), inlineBudget: { ms?: number } = {}): RenderPool {
  // The inline attempt's time budget: 5 ms in Herald; a test of which templates go straight to a thread gives it more,
  // so that a machine's load never decides for it (its templates pass the budget in characters, deterministically).
  const inline = { ...INLINE, ...inlineBudget };
  let pool: Piscina | undefined;
  /**
   * Templates (subject and body) that passed the inline attempt's budget COSTLY_AFTER times in a row, for a minute: a
   * template judged costly on a bad minute (a machine under load) is tried inline again after, at the price of at most
   * COSTLY_AFTER inline attempts a minute for one that is costly indeed.
   */
  const costly = new LRUCache<string, true>({ max: 1000, ttl: 60_000 });
  /** Templates that passed it fewer times than that since they last fitted: how many times. */
  const strikes = new LRUCache<string, number>({ max: 1000 });
  const perTenant = Math.max(1, threads - 1);
  const tenants = new Map<string, { running: number; waiting: (() => void)[] }>();
  const enter = async (tenant: string) => {
    const t = tenants.get(tenant) ?? { running: 0, waiting: [] };
    tenants.set(tenant, t);
    if (t.running >= perTenant) await new Promise<void>((resolve) => t.waiting.push(resolve));
    t.running++;
  };
  const leave = (tenant: string) => {
    const t = tenants.get(tenant)!;
    t.running--;
    const next = t.waiting.shift();
    if (next) next();
    else if (t.running === 0) tenants.delete(tenant);
  };
  const start = () => new Piscina({
    // A CommonJS bootstrap: it registers tsx in the thread, so the thread runs mail/render.ts under Jest and tsx alike.
    filename: path.join(__dirname, 'renderThread.cjs'),
    minThreads: 0,
    maxThreads: threads,
    idleTimeout: 60_000,
    resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB },
  });
  return {
    async render(jobs, tenant = '') {
      const results: (RenderJobResult | undefined)[] = jobs.map(() => undefined);
      const budget = new RenderBudget(inline.ms, inline.chars, inline.memory);
      jobs.forEach((job, i) => {
        const key = `${job.markdown ? 'md' : 'html'}\u0000${job.subject}\u0000${job.body}`;
        if (key.length > inline.templateChars || costly.has(key) || budget.remainingMs() === 0) return;
        // A job that starts with less than half the call's time left may pass it because of the jobs before it.
        const ownTime = budget.remainingMs() >= inline.ms / 2;
        const outcome = renderJob(job, budget);
        // A syntax error is final; a budget passed here may well fit the full budgets of a thread.
        if ('failed' in outcome && outcome.failed.code !== 'invalid_template') {
          if (!ownTime) return;
          const n = (strikes.get(key) ?? 0) + 1;
          if (n < COSTLY_AFTER) strikes.set(key, n);
          else { strikes.delete(key); costly.set(key, true); }
        } else {
          if (strikes.size) strikes.delete(key);
          results[i] = outcome;
        }
      });
      const rest = jobs.filter((_, i) => !results[i]);
      if (rest.length) {
        const rendered = await onThreads(rest, tenant);
        let k = 0;
        results.forEach((r, i) => { if (!r) results[i] = rendered[k++]; });
      }
      return results as RenderJobResult[];
    },
    async close() {
      const p = pool;
      pool = undefined;
      await p?.destroy();
    },
  };

  async function onThreads(jobs: RenderJob[], tenant: string): Promise<RenderJobResult[]> {
    pool ??= start();
    await enter(tenant);
    try {
      // Each job has its own budget, so a task of several takes up to their sum.
      const signal = AbortSignal.timeout(ABORT_AFTER_MS + RENDER_BUDGET.requestMs * (jobs.length - 1));
      return await (pool.run(jobs, { signal }) as Promise<RenderJobResult[]>);
    } catch (err) {
      const e = err as { code?: string; name?: string };
      if (e.code === 'ERR_WORKER_OUT_OF_MEMORY' || e.name === 'AbortError' || e.name === 'TimeoutError') {
        return jobs.map(() => ({ failed: { index: 0, part: 'body' as const, code: 'too_complex' as const, message: 'rendering needs more time or memory than allowed' } }));
      }
      throw err;
    } finally {
      leave(tenant);
    }
  }
}

/**
 * One thread per core, at least 2 (so that a tenant at its limit leaves one to the others) and at most 4. Idle
 * threads cost nothing for long: they stop after a minute.
 */
export function defaultRenderThreads(): number {
  return Math.max(2, Math.min(4, os.availableParallelism()));
}
