import os from 'node:os';
import path from 'node:path';
import { Piscina } from 'piscina';
import { RENDER_BUDGET, type Renderer, type RenderJobResult } from './render';

// A hard stop for a thread that is still busy well past the budget that liquidjs enforces from within.
const ABORT_AFTER_MS = RENDER_BUDGET.requestMs + 4_000;
// A render thread's heap: the caps keep a job's output to tens of MB; this bounds what a template builds on the way.
const THREAD_HEAP_MB = 256;

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
export function createRenderPool(threads = defaultRenderThreads()): RenderPool {
  let pool: Piscina | undefined;
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
    async render(job, tenant = '') {
      pool ??= start();
      await enter(tenant);
      try {
        return await (pool.run(job, { signal: AbortSignal.timeout(ABORT_AFTER_MS) }) as Promise<RenderJobResult>);
      } catch (err) {
        const e = err as { code?: string; name?: string };
        if (e.code === 'ERR_WORKER_OUT_OF_MEMORY' || e.name === 'AbortError' || e.name === 'TimeoutError') {
          return { failed: { index: 0, part: 'body', code: 'too_complex', message: 'rendering needs more time or memory than allowed' } };
        }
        throw err;
      } finally {
        leave(tenant);
      }
    },
    async close() {
      const p = pool;
      pool = undefined;
      await p?.destroy();
    },
  };
}

/**
 * One thread per core, at least 2 (so that a tenant at its limit leaves one to the others) and at most 4. Idle
 * threads cost nothing for long: they stop after a minute.
 */
export function defaultRenderThreads(): number {
  return Math.max(2, Math.min(4, os.availableParallelism()));
}
