/**
 * Builds the console (web/, Preact + TSX) into dist/web/, which api/console.ts serves at /app:
 *
 *   dist/web/index.html                the page every /app route answers; it loads the hashed entry and stylesheet
 *   dist/web/assets/<name>-<hash>.js   ES modules: the entry, one lazy chunk per page, shared chunks
 *   dist/web/assets/<name>-<hash>.css  the one stylesheet (web/styles/*.css, bundled)
 *   dist/web/assets/*.gz, *.br         each asset precompressed (node:zlib), served by Accept-Encoding
 *   dist/web/build.json                what the first load fetches (the weight test reads it) and esbuild's metafile
 *
 * Hashed names never change content, so the server gives them a year of cache; a new build writes new names. Files are
 * written atomically (temp file, rename) and old assets are left in place: a page loaded before a rebuild still finds
 * its chunks, and two builds at once (two test runs) cannot tear a file.
 *
 *   npm run build:web            (also run by `npm start` and by Jest's global setup)
 */
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { build, type Metafile } from 'esbuild';

const ROOT = path.resolve(__dirname, '..');
export const WEB_SOURCE = path.join(ROOT, 'web');
export const WEB_OUT = path.join(ROOT, 'dist', 'web');

/** Where the browser finds the assets (api/console.ts serves dist/web/assets/ there). */
export const ASSET_PREFIX = '/app/assets/';

export interface WebBuild {
  /** The entry module and the stylesheet index.html loads (file names in assets/). */
  entry: string;
  css: string | null;
  /** Every JavaScript file of the first load: the entry and what it imports statically (file names in assets/). */
  initialJs: string[];
  /** Every JavaScript file of the build (the pages' lazy chunks among them). */
  allJs: string[];
  /** Each page's route and the scripts its lazy chunk needs beyond the first load (api/console.ts preloads them). */
  routes: PageRoute[];
  metafile: Metafile;
}

export interface PageRoute {
  /** The route's path as the route table has it (`/app/emails/:id`). */
  path: string;
  /** Its page's chunk and the chunks that one imports, not in the first load (file names in assets/). */
  js: string[];
}

const gzip = promisify(zlib.gzip);
const brotli = promisify(zlib.brotliCompress);

function writeAtomically(file: string, data: string | Buffer): void {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, data);
  fs.renameSync(tmp, file);
}

const escapeAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/** A small mark for the tab, as a data: URI (CSP `img-src data:`): no request, no 404 in the console. */
const FAVICON = `data:image/svg+xml,${encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#4f46e5"/><path d="M9 9h4v5.5h6V9h4v14h-4v-5.5h-6V23H9z" fill="#fff"/></svg>')}`;

/** index.html: no inline script or style (the console's CSP allows neither); everything it loads is a hashed asset. */
export function indexHtml(entry: string, css: string | null, preload: string[] = [entry]): string {
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="color-scheme" content="light dark">',
    '<title>Herald</title>',
    `<link rel="icon" href="${escapeAttr(FAVICON)}">`,
    css ? `<link rel="stylesheet" href="${ASSET_PREFIX}${css}">` : '',
    ...preload.map((file) => `<link rel="modulepreload" href="${ASSET_PREFIX}${file}">`),
    `<script type="module" src="${ASSET_PREFIX}${entry}"></script>`,
    '</head>',
    '<body>',
    '<div id="app"></div>',
    '<noscript>The Herald console needs JavaScript. The same API is at <a href="/docs">/docs</a>.</noscript>',
    '</body>',
    '</html>',
    '',
  ].filter((line) => line !== '').join('\n');
}

/** The JavaScript a first load fetches: the entry and, transitively, its static imports (not the lazy pages). */
function initialChunks(metafile: Metafile, entryOut: string): string[] {
  const seen = new Set<string>();
  const visit = (out: string) => {
    if (seen.has(out)) return;
    seen.add(out);
    for (const imp of metafile.outputs[out]?.imports ?? []) if (imp.kind === 'import-statement' && !imp.external) visit(imp.path);
  };
  visit(entryOut);
  return [...seen];
}

/**
 * The route table's pages (web/pages/index.tsx) and the chunk each one's lazy module became: a route line
 * `{ path: '…', component: Name` whose `Name` is declared as `const Name = lazy(() => import('./Module'))`, each at the
 * start of its line. Read from
 * the source, since the route table is code for the browser; a lazy page whose chunk the build did not write fails
 * the build, and test/api/console.test.ts checks that every route of the table is found.
 */
function pageRoutes(metafile: Metafile, initial: Set<string>): PageRoute[] {
  const table = fs.readFileSync(path.join(WEB_SOURCE, 'pages', 'index.tsx'), 'utf8');
  const modules = new Map([...table.matchAll(/^const (\w+) = lazy\(\(\) => import\('\.\/([\w/]+)'\)\)/gm)].map((m) => [m[1]!, m[2]!]));
  const chunkOf = (module: string) => {
    const source = path.relative(ROOT, path.join(WEB_SOURCE, 'pages', `${module}.tsx`));
    const out = Object.keys(metafile.outputs).find((o) => metafile.outputs[o]!.entryPoint === source && o.endsWith('.js'));
    if (!out) throw new Error(`the build wrote no chunk for the page ${source}`);
    return out;
  };
  const routes: PageRoute[] = [];
  for (const [, route, component] of table.matchAll(/^\s*\{ path: '([^']+)', component: (\w+)/gm)) {
    const module = modules.get(component!);
    if (!module) continue; // not a lazy page of its own (a placeholder made in the table)
    routes.push({ path: route!, js: initialChunks(metafile, chunkOf(module)).filter((o) => !initial.has(o)) });
  }
  return routes;
}

export async function buildWeb(opts: { outDir?: string; quiet?: boolean } = {}): Promise<WebBuild> {
  const outDir = opts.outDir ?? WEB_OUT;
  const assets = path.join(outDir, 'assets');
  fs.mkdirSync(assets, { recursive: true });
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: { main: path.join(WEB_SOURCE, 'main.tsx') },
    outdir: assets,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'browser',
    target: ['es2022', 'chrome111', 'firefox113', 'safari16.4'],
    minify: true,
    sourcemap: false,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    entryNames: '[name]-[hash]',
    chunkNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    legalComments: 'none',
    metafile: true,
    write: false,
    tsconfig: path.join(WEB_SOURCE, 'tsconfig.json'),
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: opts.quiet ? 'silent' : 'warning',
  });
  const relative = (file: string) => path.relative(assets, path.resolve(ROOT, file));
  await Promise.all(result.outputFiles.map(async (file) => {
    const contents = Buffer.from(file.contents);
    writeAtomically(file.path, contents);
    writeAtomically(`${file.path}.gz`, await gzip(contents, { level: 9 }));
    writeAtomically(`${file.path}.br`, await brotli(contents, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: contents.length } }));
  }));

  const metafile = result.metafile!;
  const entrySource = path.relative(ROOT, path.join(WEB_SOURCE, 'main.tsx'));
  const entryOut = Object.keys(metafile.outputs).find((out) => metafile.outputs[out]!.entryPoint === entrySource && out.endsWith('.js'));
  if (!entryOut) throw new Error('esbuild wrote no entry module');
  const cssOut = metafile.outputs[entryOut]!.cssBundle;
  const initial = initialChunks(metafile, entryOut);
  const built: WebBuild = {
    entry: relative(entryOut),
    css: cssOut ? relative(cssOut) : null,
    initialJs: initial.map(relative),
    allJs: Object.keys(metafile.outputs).filter((out) => out.endsWith('.js')).map(relative),
    routes: pageRoutes(metafile, new Set(initial)).map((r) => ({ path: r.path, js: r.js.map(relative) })),
    metafile,
  };
  writeAtomically(path.join(outDir, 'build.json'), JSON.stringify(built));
  writeAtomically(path.join(outDir, 'index.html'), indexHtml(built.entry, built.css, built.initialJs));
  return built;
}

if (require.main === module) {
  const started = Date.now();
  buildWeb().then((b) => {
    const gz = (f: string) => fs.statSync(path.join(WEB_OUT, 'assets', `${f}.gz`)).size;
    const first = b.initialJs.reduce((sum, f) => sum + gz(f), 0);
    console.log(`console built in ${Date.now() - started} ms: dist/web (${b.allJs.length} scripts; first load ${(first / 1024).toFixed(1)} KB of JavaScript gzipped)`);
  }, (err: Error) => {
    console.error(`building the console failed: ${err.message}`);
    process.exit(1);
  });
}
