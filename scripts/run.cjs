#!/usr/bin/env node
// Runs one of Herald's entry points compiled to JavaScript:   node scripts/run.cjs bin/worker.ts [args…]
//
// `npm start`, `npm run api`, `npm run worker`, `npm run cli`, the Docker image and the tests' child processes start
// Herald this way, not through tsx's loader: a process that loads its ~400 modules through tsx spends ~1 CPU-s more to
// start (bin/start.ts: 3.5 against 2.6 CPU-s to its first /health answer, `npm run bench:startup`), and the tests start
// about a hundred of them.
// The sources are transpiled file by file with esbuild (the same transform tsx applies on the fly: CommonJS, no
// bundling, so every module keeps its file, its __dirname and its names) into dist/server/<hash>/, where <hash> is
// that of every source file: a build is made once per change of the sources, in a temporary directory renamed into
// place, so processes started side by side never see half of one, and a running process's build is never rewritten.
// Each build holds the sources too (the Temporal workflow bundler reads workflows/*.ts, the thread bootstraps sit
// beside them) and links to what the code finds beside its own directory: node_modules, package.json, docs/, the
// console's dist/web.
//
//   node scripts/run.cjs --build    makes the build when missing and prints its directory (the Dockerfile's step)
'use strict';
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const BUILDS = path.join(ROOT, 'dist', 'server');
/** Top-level directories that are not the server's code. */
const NOT_SERVER = new Set(['node_modules', 'test', 'bench', 'web', 'dist', 'docs', 'artifacts', 'coverage', 'scratch']);
/** What a build links to in the working tree, beside its copy of the code. */
const LINKED = ['node_modules', 'package.json', 'tsconfig.json', 'docs', path.join('dist', 'web')];
/** Builds kept when a new one is made: the newest, beside any a process started a moment ago may still load from. */
const KEEP = 3;

/** The server's files, relative to the root, sorted. */
function sourceFiles() {
  const files = [];
  const walk = (rel) => {
    for (const e of fs.readdirSync(path.join(ROOT, rel), { withFileTypes: true })) {
      const r = path.join(rel, e.name);
      if (e.isDirectory()) walk(r);
      else if (e.isFile()) files.push(r);
    }
  };
  for (const e of fs.readdirSync(ROOT, { withFileTypes: true })) {
    if (e.isDirectory() && !e.name.startsWith('.') && !NOT_SERVER.has(e.name)) walk(e.name);
  }
  return files.sort();
}

/** The build directory for the sources as they are now, made when missing. */
function serverBuild() {
  const files = sourceFiles();
  const hash = createHash('sha256');
  hash.update(fs.readFileSync(__filename)).update(require('esbuild/package.json').version);
  for (const f of files) hash.update(f).update('\0').update(fs.readFileSync(path.join(ROOT, f)));
  const dir = path.join(BUILDS, hash.digest('hex').slice(0, 16));
  if (fs.existsSync(dir)) return dir;

  fs.mkdirSync(BUILDS, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(BUILDS, '.tmp-'));
  fs.chmodSync(tmp, 0o755); // mkdtemp's 0700 would keep the image's unprivileged user out
  try {
    for (const f of files) {
      fs.mkdirSync(path.join(tmp, path.dirname(f)), { recursive: true });
      fs.copyFileSync(path.join(ROOT, f), path.join(tmp, f));
    }
    require('esbuild').buildSync({
      entryPoints: files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')).map((f) => path.join(ROOT, f)),
      outdir: tmp,
      outbase: ROOT,
      format: 'cjs',
      platform: 'node',
      target: `node${process.versions.node.split('.')[0]}`,
      sourcemap: true,
      logLevel: 'error',
    });
    for (const l of LINKED) {
      fs.mkdirSync(path.dirname(path.join(tmp, l)), { recursive: true });
      fs.symlinkSync(path.join(ROOT, l), path.join(tmp, l));
    }
    try {
      fs.renameSync(tmp, dir);
    } catch (err) {
      // Another process made the same build meanwhile: its copy is the same.
      if (!fs.existsSync(dir)) throw err;
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
  const others = fs.readdirSync(BUILDS).filter((d) => !d.startsWith('.') && path.join(BUILDS, d) !== dir)
    .map((d) => ({ d, t: fs.statSync(path.join(BUILDS, d)).mtimeMs })).sort((a, b) => b.t - a.t);
  for (const { d } of others.slice(KEEP - 1)) fs.rmSync(path.join(BUILDS, d), { recursive: true, force: true });
  // A build killed mid-way leaves its temporary directory: gone an hour later (one being made now is younger).
  for (const d of fs.readdirSync(BUILDS).filter((e) => e.startsWith('.tmp-'))) {
    const p = path.join(BUILDS, d);
    try {
      if (Date.now() - fs.statSync(p).mtimeMs > 3_600_000) fs.rmSync(p, { recursive: true, force: true });
    } catch {
      // another process removed it first
    }
  }
  return dir;
}

/** The compiled file of an entry point (`bin/worker.ts`) in `build` (by default the current one, made when missing). */
function compiledEntry(script, build = serverBuild()) {
  return path.join(build, path.relative(ROOT, path.resolve(ROOT, script)).replace(/\.ts$/, '.js'));
}

module.exports = { serverBuild, compiledEntry };

if (require.main === module) {
  const [script, ...args] = process.argv.slice(2);
  if (!script) {
    console.error('usage: node scripts/run.cjs <bin/entry.ts> [args…] | --build');
    process.exit(2);
  }
  if (script === '--build') {
    console.log(serverBuild());
  } else {
    const entry = compiledEntry(script);
    // Stack traces name the TypeScript sources' lines, as under tsx.
    process.setSourceMapsEnabled(true);
    process.argv = [process.argv[0], entry, ...args];
    require(entry);
  }
}
