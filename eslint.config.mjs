// Flat config: typescript-eslint's recommended rules over every TypeScript file.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['node_modules/', '.data/', 'dist/', 'coverage/', 'scratch/', '.tools/', 'artifacts/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node, ...globals.jest } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  // The layers (README, "Layers"): the business knows no HTTP. Only api/ itself, and the entry points, tests and
  // benchmarks that assemble or drive the app, import from api/ or name Koa.
  {
    files: ['**/*.ts'],
    ignores: ['api/**', 'bin/**', 'test/**', 'bench/**'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: [
        { group: ['**/api', '**/api/**'], message: 'Only api/ (and the entry points in bin/) import from api/: call the business module instead.' },
        { group: ['koa', 'koa-*', '@koa/*'], message: 'Koa belongs to api/ alone.' },
      ] }],
    },
  },
  // The API calls the business, never an engine's activities (they are the engines' wrappers over the same business).
  {
    files: ['api/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: [
        { group: ['**/activities', '**/activities/**'], message: 'api/ calls the business module, not activities/.' },
      ] }],
    },
  },
  // A route validates, calls one business function and shapes the answer: the queries, the models' writes and the
  // engine are the business module's (types may be named, to shape the answer).
  {
    files: ['api/routes/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: [
        { group: ['**/db/queries/**', '**/db/models/**', '**/db/pages', '**/engine/**', '**/workflows/**'], allowTypeImports: true, message: 'A route calls its business module (sending/, campaigns/, audience/…), which owns the queries and the engine.' },
        { group: ['**/activities', '**/activities/**'], message: 'api/ calls the business module, not activities/.' },
      ] }],
    },
  },
  // Workflow code is deterministic and bundled for Temporal: from outside workflows/ it takes types only.
  {
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: [
        { group: ['../*', '../**'], allowTypeImports: true, message: 'workflows/ imports only types from outside workflows/ (import type).' },
        { group: ['**/api', '**/api/**'], message: 'Only api/ imports from api/.' },
      ] }],
    },
  },
  // The database layer knows no HTTP and no engine.
  {
    files: ['db/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: [
        { group: ['**/api', '**/api/**', '**/engine', '**/engine/**', '**/activities', '**/activities/**'], message: 'db/ knows no HTTP (api/) and no engine (engine/, activities/).' },
      ] }],
    },
  },
  // Plain CommonJS scripts (tooling, Jest reporter) use require().
  { files: ['**/*.js', '**/*.cjs'], rules: { '@typescript-eslint/no-require-imports': 'off' } },
);
