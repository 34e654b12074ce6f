/**
 * The value-import graph of Herald's product code, read by dependency-cruiser: files, and the same collapsed to
 * top-level folders. Type-only imports are left out: they vanish at compilation and bind no module to another at run
 * time. `npm run --silent deps` prints the folder graph and any cycle; test/architecture.test.ts asserts there is no
 * circle of files and no cycle of folders.
 *
 * dependency-cruiser is ESM only, and this repository compiles to CommonJS: the test runs this script as a child
 * process (`--json`) rather than importing the library into Jest.
 */
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '..');

/** Everything but the product: tests, benchmarks, tooling, the generated client, documentation. */
const NOT_PRODUCT = new Set(['test', 'bench', 'scripts', 'client', 'docs', 'node_modules', 'coverage', 'dist', 'scratch', 'artifacts']);

export function productFolders(): string[] {
  return fs.readdirSync(root, { withFileTypes: true })
    .filter((d) => d.isDirectory() && !d.name.startsWith('.') && !NOT_PRODUCT.has(d.name))
    .map((d) => d.name).sort();
}

export interface ImportGraph {
  /** file → the files it imports values from (product files only). */
  files: Record<string, string[]>;
  /** folder → the folders it imports values from (arrows between different folders only). */
  folders: Record<string, string[]>;
}

/** `withTypes`: count `import type` too (for a look at the type circles; the layers are about values). */
export async function importGraph(withTypes = false): Promise<ImportGraph> {
  const { cruise } = await import('dependency-cruiser');
  const folders = productFolders();
  const result = await cruise(folders, {
    baseDir: root,
    tsPreCompilationDeps: true, // to see `import type` at all, and so tell it apart
    doNotFollow: { path: 'node_modules' },
  });
  if (typeof result.output === 'string') throw new Error('dependency-cruiser answered text, not modules');
  const inProduct = (file: string) => folders.includes(file.split('/')[0]!) && /\.(ts|cjs|js)$/.test(file);
  const files: Record<string, string[]> = {};
  for (const mod of result.output.modules) {
    if (!inProduct(mod.source)) continue;
    files[mod.source] = [...new Set(mod.dependencies
      .filter((d) => (withTypes || !d.dependencyTypes.includes('type-only')) && !d.coreModule && !d.couldNotResolve && inProduct(d.resolved))
      .map((d) => d.resolved))].sort();
  }
  return { files, folders: collapse(files) };
}

const folderOf = (file: string) => file.split('/')[0]!;

export function collapse(files: Record<string, string[]>): Record<string, string[]> {
  const out: Record<string, Set<string>> = {};
  for (const [file, deps] of Object.entries(files)) {
    const from = (out[folderOf(file)] ??= new Set());
    for (const dep of deps) if (folderOf(dep) !== folderOf(file)) from.add(folderOf(dep));
  }
  return Object.fromEntries(Object.entries(out).sort().map(([k, v]) => [k, [...v].sort()]));
}

/** The strongly connected components of more than one node (Tarjan): each is a cycle, or several knotted together. */
export function cycles(graph: Record<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next); low.set(v, next); next++;
    stack.push(v); onStack.add(v);
    for (const w of graph[v] ?? []) {
      if (!index.has(w)) { visit(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)); }
      else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do { w = stack.pop()!; onStack.delete(w); component.push(w); } while (w !== v);
      if (component.length > 1 || (graph[v] ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of Object.keys(graph)) if (!index.has(v)) visit(v);
  return found;
}

/** The arrows whose two ends lie in one cycle: each of them points back up the layers the other arrows set. */
export function arrowsInCycles(graph: Record<string, string[]>): string[] {
  const knots = cycles(graph);
  return Object.entries(graph).flatMap(([from, tos]) => tos
    .filter((to) => knots.some((k) => k.includes(from) && k.includes(to)))
    .map((to) => `${from} → ${to}`));
}

if (require.main === module) {
  void importGraph(process.argv.includes('--with-types')).then((graph) => {
    if (process.argv.includes('--json')) {
      process.stdout.write(JSON.stringify(graph));
      return;
    }
    const arrows = Object.values(graph.folders).reduce((n, tos) => n + tos.length, 0);
    for (const [from, tos] of Object.entries(graph.folders)) console.log(`${from.padEnd(12)} → ${tos.join(' ')}`);
    console.log(`\n${arrows} arrows between folders`);
    console.log(`folder cycles: ${JSON.stringify(cycles(graph.folders))}`);
    console.log(`arrows inside folder cycles (${arrowsInCycles(graph.folders).length}): ${arrowsInCycles(graph.folders).join(', ')}`);
    console.log(`circles of files: ${JSON.stringify(cycles(graph.files))}`);
  });
}
