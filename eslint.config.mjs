// Flat config: typescript-eslint's recommended rules over every TypeScript file.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

// A dynamic import() of api/ or of Koa: no-restricted-imports sees static imports only.
const API_OR_KOA = String.raw`/(^|\/)api(\/|$)|^(koa|koa-.*|@koa\/.*)$/`;
const DYNAMIC_HTTP_IMPORTS = [
  { selector: `ImportExpression[source.value=${API_OR_KOA}]`, message: 'Only api/ (and bin/) load api/ or Koa, dynamically or not.' },
  { selector: `ImportExpression[source.quasis.0.value.raw=${API_OR_KOA}]`, message: 'Only api/ (and bin/) load api/ or Koa, dynamically or not.' },
];
const ACTIVITIES_FROM_API = { group: ['**/activities', '**/activities/**'], message: 'api/ calls the business module, not activities/.' };
// A pattern, not a glob: `**/worker` would also refuse @temporalio/worker.
const WORKER = { regex: String.raw`^(\.{1,2}/)+worker(/|$)`, message: 'The worker loops are started by bin/ alone.' };
/** The business modules: what the engine port must not know. */
const BUSINESS = ['activities', 'audience', 'automations', 'bounces', 'campaigns', 'contacts', 'domains', 'emails', 'events',
  'mail', 'outbound', 'projects', 'sending', 'smtp', 'templates', 'tracking', 'verify', 'webhooks', 'worker'];

export default tseslint.config(
  { ignores: ['node_modules/', '.data/', 'dist/', 'coverage/', 'scratch/', '.tools/', 'artifacts/', '.cache/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node, ...globals.jest } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  // The layers (README, "Layers"). Flat config merges blocks rule by rule: a later block that sets a rule replaces
  // its options for the files both match. So the bans that hold everywhere use ESLint's own no-restricted-imports
  // and no-restricted-syntax, set here alone, and each folder's own bans use @typescript-eslint/no-restricted-imports:
  // neither kind can undo the other (a folder block used to drop the HTTP ban, and a type-only allowance to let an
  // `import type` from api/ through). test/lint.test.ts plants a violation of each rule and a legitimate import.
  //
  // The business knows no HTTP: only api/, and the entry points, tests and benchmarks that assemble or drive the app,
  // import from api/ or name Koa, by a static import (type-only too) or a dynamic import(). Nothing but bin/ starts
  // the worker loops.
  {
    files: ['**/*.ts'],
    ignores: ['api/**', 'bin/**', 'test/**', 'bench/**', 'web/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { group: ['**/api', '**/api/**'], message: 'Only api/ (and the entry points in bin/) import from api/: call the business module instead.' },
        { group: ['koa', 'koa-*', '@koa/*'], message: 'Koa belongs to api/ alone.' },
        WORKER,
      ] }],
      'no-restricted-syntax': ['error', ...DYNAMIC_HTTP_IMPORTS],
    },
  },
  // The console (web/): TSX for the browser, a client of the API (web/api.ts over the typed client's types); of the
  // server's code it imports projects/roles.ts (the permission names) and campaigns/abRules.ts (an A/B test's arithmetic: the
  // composer's counts are the engine's). It writes no HTML (the email preview's srcdoc,
  // a string, is the one exception). Its `./api` is web/api.ts, hence web/ is outside the ban on importing api/.
  {
    files: ['web/**/*.ts', 'web/**/*.tsx'],
    languageOptions: { globals: { ...globals.browser } },
    rules: {
      'no-restricted-syntax': ['error',
        { selector: "JSXAttribute[name.name='dangerouslySetInnerHTML']", message: 'The console writes no HTML: build elements (the email preview\'s srcdoc is the one exception, a string).' },
        { selector: "MemberExpression[property.name=/^(innerHTML|outerHTML)$/]", message: 'The console writes no HTML through innerHTML/outerHTML.' },
        { selector: "CallExpression[callee.property.name='insertAdjacentHTML']", message: 'The console writes no HTML.' }],
    },
  },
  // The API calls the business, never an engine's activities (they are the engines' wrappers over the same business).
  {
    files: ['api/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: [ACTIVITIES_FROM_API, WORKER] }],
    },
  },
  // A route validates, calls one business function and shapes the answer: the queries, the models' writes and the
  // engine are the business module's (types may be named, to shape the answer).
  {
    files: ['api/routes/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: [
        { group: ['**/db/queries/**', '**/db/models/**', '**/db/pages', '**/engine/**', '**/workflows/**'], allowTypeImports: true, message: 'A route calls its business module (sending/, campaigns/, audience/…), which owns the queries and the engine.' },
        ACTIVITIES_FROM_API, WORKER,
      ] }],
    },
  },
  // Engine workflows are deterministic and bundled for Temporal: from outside workflows/ they take types only, and
  // import nothing at run time (no import()). The ban on api/ above holds for their type imports too.
  {
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: [
        { group: ['../*', '../**'], allowTypeImports: true, message: 'workflows/ imports only types from outside workflows/ (import type).' },
      ] }],
      'no-restricted-syntax': ['error', ...DYNAMIC_HTTP_IMPORTS, { selector: 'ImportExpression', message: 'Workflow code is bundled and replayed: no dynamic import().' }],
    },
  },
  // The database layer knows no engine (nor HTTP, above).
  {
    files: ['db/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: [
        { group: ['**/engine', '**/engine/**', '**/activities', '**/activities/**'], message: 'db/ knows no engine (engine/, activities/).' },
      ] }],
    },
  },
  // engine/ is the workflow-engine port and its two adapters: it runs workflows/ and knows no business, neither its
  // SQL (db/queries, db/models) nor its modules. Business work reaches an engine as activities, built by bin/.
  {
    files: ['engine/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: [
        { group: ['**/db/queries', '**/db/queries/**', '**/db/models', '**/db/models/**', '**/db/pages', '**/db/owned', '**/db/batch'], message: 'engine/ runs workflows: the business SQL is in the business modules and worker/.' },
        { regex: String.raw`^(\.{1,2}/)+(${BUSINESS.join('|')})(/|$)`, message: 'engine/ is the port and its adapters: it knows no business module.' },
      ] }],
    },
  },
  // worker/ holds the loops every worker process runs (delivery queue, webhook queue, execution dispatcher): business
  // work outside the engines, so it calls the business modules, never an engine's activities (and knows no HTTP, above).
  {
    files: ['worker/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: [
        { group: ['**/activities', '**/activities/**'], message: 'worker/ calls the business modules, not the engines\' activities.' },
      ] }],
    },
  },
  // Plain CommonJS scripts (tooling, Jest reporter) use require().
  { files: ['**/*.js', '**/*.cjs'], rules: { '@typescript-eslint/no-require-imports': 'off' } },
);
