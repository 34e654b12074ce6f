import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import type { Browser } from 'playwright-core';
import { buildWeb } from '../../scripts/buildWeb';
import { findChromium, launchChromium, CHROMIUM_HOW } from '../../test/support/chromium';
import type { BenchCluster } from './cluster';
import { startHeraldChild } from './herald';
import { freePort, REPO_ROOT, stealSince, type Child } from './proc';

/**
 * Console pages loaded in Chromium beside a static page of the same size, served by the same Herald process in the same
 * run (bench/consolePages.ts, bench/campaignPage.ts): what they share.
 *
 * A load: a new browser context each time (an empty HTTP cache and a new connection: every load is a first visit,
 * nothing revalidated), the session cookie of a POST /auth/login put in it, a page, `page.goto`. Content is detected
 * in the page, by an init script (a MutationObserver, set before any of the page's own scripts): the first moment
 * every selector of the page matches an element the browser reports visible (`checkVisibility`), and the time is
 * `performance.now()` in the first animation frame after it (the frame that paints it), on the page's own clock whose
 * zero is the start of the navigation. Node's clock from before `goto` to the detection is kept beside it (it adds the
 * DevTools protocol's round trips).
 *
 * The baseline, a static page per console page: its "same size" is what the browser fetched for that console page,
 * read from the browser's Resource Timing in a warm-up load: index.html's bytes, and each script and stylesheet of
 * /app/assets (the first load and the page's chunks). The static page is a directory beside the console's (a
 * temporary one) with an index.html padded to the console's byte count, holding the page's visible content as HTML,
 * the same stylesheets byte for byte, and the same scripts with their text turned into one comment (the same bytes
 * plus four, compressed again as scripts/buildWeb.ts compresses them: brotli 11 and gzip 9), loaded as classic
 * scripts in <head> so that nothing shows before every byte has arrived (a static page of that size shows its content
 * once it has it; a console page must also run its code and ask the API). It is served by the same Herald process on
 * the same port, by the console's own file server (`consoleApp` of api/console.ts, the same headers, cache and
 * precompressed encodings), under /bench-static/<page>/ (bench/lib/herald-child.ts, BENCH_STATIC_DIR). Why a route of
 * the benchmark's and not a file in dist/web: every /app path but /app/assets is the console's index.html, so a static
 * page cannot be served there without changing what is measured; the same code serving it keeps it honest.
 *
 * Rounds: `warmup` then `loads` of each page and of its static page, interleaved (console then static in even rounds,
 * static then console in odd ones), so both share whatever load the machine has in that second. Median and p90 of
 * each; the ratio is median ÷ static median (the bar: ≤ 3).
 */
export interface PageCase {
  name: string;
  slug: string;
  path: (i: number) => string;
  /** Every one must match a visible element: the page's content. */
  ready: string[];
  /** The static page's visible content (HTML), with `data-bench-content` on the element waited for. */
  twin: string;
}

interface Resource { name: string; type: string; start: number; end: number; transfer: number; encoded: number; decoded: number }
export interface Load { browserMs: number; domMs: number; nodeMs: number; resources: Resource[]; responseEnd: number }
interface TwinBytes { html: number; js: number; css: number; transferred: number }

export interface PageRow {
  page: string; median: number; p90: number; staticMedian: number; staticP90: number; ratio: number; nodeMedian: number; staticNodeMedian: number; bytes: TwinBytes;
}

export const VIEWPORT = { width: 1280, height: 800 };

export const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
export const median = (xs: number[]) => pct([...xs].sort((a, b) => a - b), 50);

/** The init script: marks `__benchContent` at the first animation frame after every selector matches a visible element. */
const detector = (selectors: string[]) => `(() => {
  const selectors = ${JSON.stringify(selectors)};
  const shown = (el) => el && (el.checkVisibility ? el.checkVisibility() : el.getClientRects().length > 0);
  let done = false;
  const check = () => {
    if (done || !selectors.every((s) => shown(document.querySelector(s)))) return;
    done = true;
    window.__benchDom = performance.now();
    requestAnimationFrame(() => { window.__benchContent = performance.now(); });
  };
  new MutationObserver(check).observe(document, { childList: true, subtree: true, attributes: true });
  document.addEventListener('DOMContentLoaded', check);
  addEventListener('load', check);
})();`;

const READ_TIMINGS = `(() => {
  const nav = performance.getEntriesByType('navigation')[0];
  return {
    browserMs: window.__benchContent, domMs: window.__benchDom, responseEnd: nav ? nav.responseEnd : 0,
    resources: performance.getEntriesByType('resource').map((r) => ({ name: r.name, type: r.initiatorType, start: r.startTime, end: r.responseEnd,
      transfer: r.transferSize, encoded: r.encodedBodySize, decoded: r.decodedBodySize })),
  };
})()`;

/** A row of a table (the twin of a list page's first row): a link the page's data makes. */
export const rowTwin = (text: string) => `<div class="table-wrap"><table class="table"><tbody><tr><td class="truncate"><a class="row-link" data-bench-content href="#">${text}</a></td></tr></tbody></table></div>`;

export interface ConsoleServer {
  base: string;
  /** A signed-in admin's session token (the herald_session cookie). */
  token: string;
  /** Where the static pages go (served under /bench-static/). */
  staticRoot: string;
  children: Child[];
  /** Stops the Herald child and removes the static pages. */
  stop(): Promise<void>;
}

/**
 * The console built from web/ (scripts/buildWeb.ts) and served by a real Herald API process (as `npm run api`) in a
 * child, with the benchmark's static pages beside it; `email` (with `password`) signed in. PUBLIC_URL is the address
 * the browser uses (a session's sign-in must come from its origin).
 */
export async function serveConsole(cluster: BenchCluster, email: string, password: string): Promise<ConsoleServer> {
  await buildWeb({ quiet: true });
  const staticRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-static-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const herald = startHeraldChild('herald api', cluster, 'api', {
    PORT: String(port), PUBLIC_URL: base, API_RATE_LIMIT_PER_MINUTE: '1000000000', LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn', BENCH_STATIC_DIR: staticRoot,
  });
  const stop = async () => {
    await herald.stop();
    fs.rmSync(staticRoot, { recursive: true, force: true });
  };
  try {
    await herald.ready;
    const login = await fetch(`${base}/auth/login`, { method: 'POST', headers: { 'Content-Type': 'application/json', Origin: base }, body: JSON.stringify({ email, password }) });
    if (login.status !== 200) throw new Error(`sign-in: ${login.status} ${await login.text()}`);
    const token = login.headers.getSetCookie().find((c) => c.startsWith('herald_session='))?.split(';')[0]!.slice('herald_session='.length);
    if (!token) throw new Error('no session cookie');
    return { base, token, staticRoot, children: [herald], stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Loads each page `warmup + loads` times beside its static page (interleaved), and answers every load of both. */
export async function measurePages(server: ConsoleServer, pages: PageCase[], opts: { loads: number; warmup: number }): Promise<{
  results: Map<string, { console: Load[]; twin: Load[] }>; twins: Map<string, { url: string; bytes: TwinBytes }>; steal: number;
}> {
  const chromiumPath = findChromium();
  if (!chromiumPath) throw new Error(`no Chromium: ${CHROMIUM_HOW}`);
  const { base, token, staticRoot } = server;
  const indexBytes = Buffer.from(await (await fetch(`${base}/app`)).arrayBuffer()).length;
  const browser: Browser = await launchChromium(chromiumPath);
  try {
    const load = async (url: string, selectors: string[]): Promise<Load> => {
      const context = await browser.newContext({ viewport: VIEWPORT, locale: 'en-GB', timezoneId: 'Europe/Paris', reducedMotion: 'reduce' });
      try {
        await context.addCookies([{ name: 'herald_session', value: token, url: base, httpOnly: true, sameSite: 'Lax' }]);
        await context.addInitScript({ content: detector(selectors) });
        const page = await context.newPage();
        const errors: string[] = [];
        page.on('pageerror', (e) => errors.push(e.message));
        // The init script is offered to every frame, the email preview's sandboxed document (/app/preview) too, which
        // refuses it and says so.
        page.on('console', (m) => { if (m.type() === 'error' && !/^Blocked script execution in '(about:srcdoc|[^']*\/app\/preview[^']*)'/.test(m.text())) errors.push(m.text()); });
        const started = performance.now();
        await page.goto(url, { waitUntil: 'commit', timeout: 60_000 });
        // A function (not a string, which the page's CSP refuses to evaluate), polled from outside the page's policy.
        await page.waitForFunction(() => (globalThis as { __benchContent?: number }).__benchContent !== undefined, undefined, { timeout: 60_000, polling: 20 });
        const nodeMs = performance.now() - started;
        const t = await page.evaluate(READ_TIMINGS) as Omit<Load, 'nodeMs'>;
        if (errors.length) throw new Error(`${url}: the page logged ${errors.join('; ')}`);
        return { ...t, nodeMs };
      } finally {
        await context.close();
      }
    };

    /** The static page of a console page, from what a load of it fetched of index.html and /app/assets. */
    const twins = new Map<string, { url: string; bytes: TwinBytes }>();
    const makeTwin = (p: PageCase, seen: Load) => {
      const dir = path.join(staticRoot, p.slug);
      fs.mkdirSync(path.join(dir, 'assets'), { recursive: true });
      const assets = [...new Set(seen.resources.filter((r) => new URL(r.name).pathname.startsWith('/app/assets/')).map((r) => new URL(r.name).pathname.slice('/app/assets/'.length)))];
      const bytes = { html: indexBytes, js: 0, css: 0, transferred: 0 };
      const tags: string[] = [];
      for (const name of assets) {
        const text = fs.readFileSync(path.join(REPO_ROOT, 'dist', 'web', 'assets', name), 'utf8');
        const out = name.endsWith('.js') ? `/*${text.replace(/\*\//g, '*_')}*/` : text;
        const file = path.join(dir, 'assets', name);
        fs.writeFileSync(file, out);
        fs.writeFileSync(`${file}.gz`, zlib.gzipSync(out, { level: 9 }));
        const br = zlib.brotliCompressSync(out, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: Buffer.byteLength(out) } });
        fs.writeFileSync(`${file}.br`, br);
        bytes.transferred += br.length;
        if (name.endsWith('.js')) { bytes.js += Buffer.byteLength(out); tags.push(`<script src="/bench-static/${p.slug}/assets/${name}"></script>`); }
        else { bytes.css += Buffer.byteLength(out); tags.unshift(`<link rel="stylesheet" href="/bench-static/${p.slug}/assets/${name}">`); }
      }
      let html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${p.name} · static</title>${tags.join('')}</head>`
        + `<body><main class="main"><h1>${p.name}</h1>${p.twin}</main></body></html>`;
      const pad = indexBytes - Buffer.byteLength(html);
      if (pad > 9) html = html.replace('</body>', `<!--${'x'.repeat(pad - 7)}--></body>`);
      fs.writeFileSync(path.join(dir, 'index.html'), html);
      bytes.html = Buffer.byteLength(html);
      twins.set(p.slug, { url: `${base}/bench-static/${p.slug}/`, bytes });
    };

    const steal0 = stealSince();
    const results = new Map<string, { console: Load[]; twin: Load[] }>(pages.map((p) => [p.slug, { console: [], twin: [] }]));
    for (let round = 0; round < opts.warmup + opts.loads; round++) {
      for (const p of pages) {
        const one = async (which: 'console' | 'twin') => {
          if (which === 'console') {
            const l = await load(`${base}${p.path(round)}`, p.ready);
            if (!twins.has(p.slug)) makeTwin(p, l);
            if (round >= opts.warmup) results.get(p.slug)!.console.push(l);
          } else {
            const l = await load(twins.get(p.slug)!.url, ['[data-bench-content]']);
            if (round >= opts.warmup) results.get(p.slug)!.twin.push(l);
          }
        };
        if (round % 2 === 0 || !twins.has(p.slug)) { await one('console'); await one('twin'); } else { await one('twin'); await one('console'); }
      }
      process.stdout.write(`round ${round + 1}/${opts.warmup + opts.loads}${round < opts.warmup ? ' (warm-up)' : ''}\n`);
    }
    return { results, twins, steal: stealSince(steal0.at).share };
  } finally {
    await browser.close().catch(() => undefined);
  }
}

/**
 * Prints the table (median, p90, the static page's, the ratio, Node's clock, the bytes) and, for each page, where the
 * time of the load nearest its median went: the document, each script and API call (start → end). Answers the rows.
 */
export function reportPages(pages: PageCase[], measured: Awaited<ReturnType<typeof measurePages>>): PageRow[] {
  const { results, twins } = measured;
  console.log('\n| page | median ms | p90 ms | static median ms | static p90 ms | ratio (median ÷ static median) | Node clock median ms, page / static | bytes (HTML + JS + CSS; brotli of assets) |');
  console.log('|---|---|---|---|---|---|---|---|');
  const summary: PageRow[] = [];
  for (const p of pages) {
    const r = results.get(p.slug)!;
    const c = r.console.map((l) => l.browserMs).sort((a, b) => a - b);
    const s = r.twin.map((l) => l.browserMs).sort((a, b) => a - b);
    const b = twins.get(p.slug)!.bytes;
    const row = { page: p.name, median: pct(c, 50), p90: pct(c, 90), staticMedian: pct(s, 50), staticP90: pct(s, 90), ratio: pct(c, 50) / pct(s, 50),
      nodeMedian: median(r.console.map((l) => l.nodeMs)), staticNodeMedian: median(r.twin.map((l) => l.nodeMs)), bytes: b };
    summary.push(row);
    console.log(`| ${p.name} | ${row.median.toFixed(0)} | ${row.p90.toFixed(0)} | ${row.staticMedian.toFixed(0)} | ${row.staticP90.toFixed(0)} | **${row.ratio.toFixed(2)}** | ${row.nodeMedian.toFixed(0)} / ${row.staticNodeMedian.toFixed(0)} | ${b.html.toLocaleString('en')} + ${b.js.toLocaleString('en')} + ${b.css.toLocaleString('en')} (${b.transferred.toLocaleString('en')}) |`);
  }
  for (const p of pages) {
    const loads = results.get(p.slug)!.console;
    const m = pct(loads.map((l) => l.browserMs).sort((a, b) => a - b), 50);
    const l = loads.reduce((a, b) => (Math.abs(b.browserMs - m) < Math.abs(a.browserMs - m) ? b : a));
    console.log(`\n${p.name}, the load nearest the median (${l.browserMs.toFixed(0)} ms): document ${l.responseEnd.toFixed(0)} ms, content in the DOM ${l.domMs.toFixed(0)} ms`);
    for (const r of [...l.resources].sort((a, b) => a.start - b.start)) {
      const u = new URL(r.name);
      console.log(`  ${r.start.toFixed(0).padStart(5)} → ${r.end.toFixed(0).padStart(5)} ms  ${r.type.padEnd(6)} ${u.pathname}${u.search}`);
    }
  }
  return summary;
}
