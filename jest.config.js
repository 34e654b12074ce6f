/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }],
    // uuid, marked, openid-client (with oauth4webapi and jose) and oidc-provider (the tests' OpenID provider) ship ES
    // modules only: Node 20 loads them with require(esm) or import(), Jest's module registry does not.
    '/node_modules/(uuid|marked|openid-client|oauth4webapi|jose|oidc-provider)/.+\\.js$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!uuid/|marked/|openid-client/|oauth4webapi/|jose/|oidc-provider/)'],
  // One PostgreSQL cluster per run; each test file gets its own database cloned from a migrated template.
  globalSetup: '<rootDir>/test/support/globalSetup.ts',
  globalTeardown: '<rootDir>/test/support/globalTeardown.ts',
  // A test file fails when pg warns of concurrent queries on one client, in Jest or in a child it started.
  setupFilesAfterEnv: ['<rootDir>/test/support/pgWarningGuard.ts', '<rootDir>/test/support/asyncContexts.ts'],
  reporters: ['default', '<rootDir>/test/support/summaryReporter.js'],
  // Longest files first, from recorded durations when Jest's cache has none (a fresh clone in CI).
  testSequencer: '<rootDir>/test/support/sequencer.js',
  testTimeout: 60000,
  // Three on two cores. With two, the cores idled ~45 % of a CI run (files wait on browsers' pages, Temporal's timers
  // and SMTP); a whole run with three on a quiet machine (2026-11-28, 18:40-19:10 UTC) took 1,809 s of Jest against
  // 2,134 s with two, every test passing. An earlier try with three on a machine loaded by other suites (load 12-16)
  // timed tests out: the bounds in the tests are for this machine's own load, not for a neighbour's.
  maxWorkers: 3,
};
