import { execFileSync } from 'node:child_process';
import path from 'node:path';

/**
 * The layer rules of eslint.config.mjs refuse what they are meant to refuse, and let a legitimate import through (so
 * that a rule that refuses nothing, or everything, fails here). Each case is a line of code linted by ESLint's Node
 * API as if it were a file at `file`, with the repository's own config.
 */
const root = path.resolve(__dirname, '..');

interface Case { file: string; code: string }

// ESLint loads its ESM config with import(), which Jest's module registry cannot: the cases are linted in one child
// process.
const LINT_CASES = `
const { ESLint } = require('eslint');
const path = require('node:path');
const cases = JSON.parse(require('node:fs').readFileSync(0, 'utf8'));
const eslint = new ESLint({ cwd: process.cwd() });
(async () => {
  const out = [];
  for (const c of cases) {
    const [result] = await eslint.lintText(c.code, { filePath: path.join(process.cwd(), c.file) });
    out.push(result.messages.map((m) => m.ruleId ?? m.message));
  }
  process.stdout.write(JSON.stringify(out));
})();
`;

function lint(cases: Case[]): string[][] {
  return JSON.parse(execFileSync(process.execPath, ['-e', LINT_CASES], { cwd: root, input: JSON.stringify(cases), encoding: 'utf8' })) as string[][];
}

/** A layer rule's violation: refused by one of the import rules. */
const refused = (rules: string[]) => rules.some((r) => /no-restricted-(imports|syntax)$/.test(r));

// Each refused case has a legitimate twin beside it in the same file or folder.
const refusedCases: [string, Case][] = [
  ['(a) a type-only import from api/ into workflows/', { file: 'workflows/x.ts', code: "import type { AppDeps } from '../api/app';\nexport type T = AppDeps;\n" }],
  ['(a) the same from a nested workflows/ file', { file: 'workflows/sub/x.ts', code: "import type { AppDeps } from '../../api/app';\nexport type T = AppDeps;\n" }],
  ['(b) a dynamic import() of api/ in the business', { file: 'campaigns/x.ts', code: "export const load = () => import('../api/app');\n" }],
  ['(b) a dynamic import() of Koa in the business', { file: 'sending/x.ts', code: "export const load = () => import('koa');\n" }],
  ['(b) a dynamic import() of api/ in worker/', { file: 'worker/x.ts', code: 'export const load = () => import(`../api/${"app"}`);\n' }],
  ['(b) a dynamic import() of api/ in workflows/', { file: 'workflows/x.ts', code: "export const load = () => import('../api/app');\n" }],
  ['(c) Koa in db/', { file: 'db/x.ts', code: "import Koa from 'koa';\nexport const app = new Koa();\n" }],
  ['(c) api/ in db/', { file: 'db/queries/x.ts', code: "import { createApp } from '../../api/app';\nexport { createApp };\n" }],
  ['db/ importing the engine', { file: 'db/x.ts', code: "import { createEmbeddedEngine } from '../engine/embedded';\nexport { createEmbeddedEngine };\n" }],
  ['a value import into workflows/ from outside it', { file: 'workflows/x.ts', code: "import { seal } from '../core/sealed';\nexport { seal };\n" }],
  ['Koa in worker/', { file: 'worker/x.ts', code: "import Koa from 'koa';\nexport const app = new Koa();\n" }],
  ['api/ in worker/', { file: 'worker/x.ts', code: "import { createApp } from '../api/app';\nexport { createApp };\n" }],
  ['activities/ in worker/', { file: 'worker/x.ts', code: "import { createActivities } from '../activities';\nexport { createActivities };\n" }],
  ['the business starting worker loops', { file: 'sending/x.ts', code: "import { startDeliveryQueue } from '../worker/deliveryQueue';\nexport { startDeliveryQueue };\n" }],
  ['business SQL in engine/', { file: 'engine/x.ts', code: "import { getDomain } from '../db/queries/domains';\nexport { getDomain };\n" }],
  ['a model in engine/', { file: 'engine/x.ts', code: "import { Email } from '../db/models/Email';\nexport { Email };\n" }],
  ['a business module in engine/', { file: 'engine/x.ts', code: "import { dispatchCampaign } from '../campaigns/dispatch';\nexport { dispatchCampaign };\n" }],
  ['api/ importing activities/', { file: 'api/x.ts', code: "import { createActivities } from '../activities';\nexport { createActivities };\n" }],
  ['a route importing queries', { file: 'api/routes/x.ts', code: "import { getDomain } from '../../db/queries/domains';\nexport { getDomain };\n" }],
];

const acceptedCases: [string, Case][] = [
  ['a type-only import from outside into workflows/', { file: 'workflows/x.ts', code: "import type { Step } from '../automations/steps';\nexport type S = Step;\n" }],
  ['a value import inside workflows/', { file: 'workflows/x.ts', code: "import { WAKE_TOPIC } from './policy';\nexport const topic = WAKE_TOPIC;\n" }],
  ['a dynamic import() of a library in the business', { file: 'campaigns/x.ts', code: "export const load = () => import('liquidjs');\n" }],
  ['a dynamic import() of a library in engine/', { file: 'engine/x.ts', code: "export const load = () => import('@temporalio/worker');\n" }],
  ['db/ importing core/ and its own queries', { file: 'db/x.ts', code: "import { notFound } from '../core/errors';\nimport { getDomain } from './queries/domains';\nexport { notFound, getDomain };\n" }],
  ['worker/ importing the business and the engine port', { file: 'worker/x.ts', code: "import { outcomeOf } from '../sending/delivery';\nimport type { Engine } from '../engine/types';\nexport { outcomeOf };\nexport type E = Engine;\n" }],
  ['engine/ importing workflows/, core/ and db/errors', { file: 'engine/x.ts', code: "import { workflows } from '../workflows/registry';\nimport { AudienceError } from '../core/errors';\nimport { isDataError } from '../db/errors';\nimport { Worker } from '@temporalio/worker';\nexport { workflows, AudienceError, isDataError, Worker };\n" }],
  ['api/ importing Koa and the business', { file: 'api/x.ts', code: "import Koa from 'koa';\nimport { automationService } from '../automations/automations';\nexport { Koa, automationService };\n" }],
  ['a route importing a model as a type', { file: 'api/routes/x.ts', code: "import type { Domain } from '../../db/models/Domain';\nexport type D = Domain;\n" }],
  ['bin/ starting the worker loops and the API', { file: 'bin/x.ts', code: "import { startDeliveryQueue } from '../worker/deliveryQueue';\nimport { createApp } from '../api/app';\nexport { startDeliveryQueue, createApp };\n" }],
];

let results: string[][];
beforeAll(() => {
  results = lint([...refusedCases, ...acceptedCases].map(([, c]) => c));
});

test.each(refusedCases.map(([name], i) => [name, i] as const))('refused: %s', (_name, i) => {
  expect(refused(results[i]!)).toBe(true);
});

test.each(acceptedCases.map(([name], i) => [name, i] as const))('accepted: %s', (_name, i) => {
  expect(results[refusedCases.length + i]).toEqual([]);
});
