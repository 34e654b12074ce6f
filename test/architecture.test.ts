import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { cycles, type ImportGraph } from '../scripts/importGraph';

/**
 * The layers hold in the code that runs: dependency-cruiser reads every value import of the product (not test/,
 * bench/, scripts/ or the generated client; `import type` binds nothing at run time), and neither the files nor the
 * top-level folders they collapse to may form a cycle. `npm run --silent deps` prints the same graph.
 */
const root = path.resolve(__dirname, '..');
let graph: ImportGraph;

beforeAll(() => {
  // dependency-cruiser is ESM only: it runs in a child process, which answers the graph as JSON.
  const out = execFileSync(process.execPath, ['--import', 'tsx', 'scripts/importGraph.ts', '--json'], { cwd: root, encoding: 'utf8' });
  graph = JSON.parse(out) as ImportGraph;
});

test('the cruise sees the product and its value imports, and leaves out type-only ones', () => {
  expect(Object.keys(graph.folders)).toEqual(expect.arrayContaining(['api', 'engine', 'worker', 'workflows', 'config', 'domains']));
  expect(Object.keys(graph.files).some((f) => f.startsWith('test/') || f.startsWith('bench/') || f.startsWith('client/'))).toBe(false);
  expect(graph.files['worker/deliveryQueue.ts']).toContain('sending/delivery.ts');
  // engine/types.ts names the workflows' input types only (`import type`): no arrow.
  expect(graph.files['engine/types.ts']).toEqual([]);
});

test('no circle of files', () => {
  expect(cycles(graph.files)).toEqual([]);
});

test('no cycle of top-level folders', () => {
  expect(cycles(graph.folders)).toEqual([]);
});

test('configuration sits at the bottom, and the engine port knows no business', () => {
  expect(graph.folders.config).toEqual([]);
  // The port imports the workflows it runs, the neutral errors (core/errors.ts, db/errors.ts), logs and metrics.
  expect(graph.folders.engine!.filter((f) => !['core', 'db', 'logging', 'metrics', 'workflows'].includes(f))).toEqual([]);
  expect(Object.entries(graph.files).filter(([f]) => f.startsWith('engine/')).flatMap(([, deps]) => deps).filter((d) => d.startsWith('db/'))).toEqual(['db/errors.ts']);
});

test('cycles() finds a planted cycle, and only it', () => {
  expect(cycles({ a: ['b'], b: ['c'], c: ['a'], d: ['a'], e: [] })).toEqual([['a', 'b', 'c']]);
  expect(cycles({ a: ['a'] })).toEqual([['a']]);
  expect(cycles({ a: ['b'], b: [] })).toEqual([]);
});
