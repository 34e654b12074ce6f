/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }],
    // uuid and marked ship ES modules only: Node 20 loads them with require(esm), Jest's module registry does not.
    '/node_modules/(uuid|marked)/.+\\.js$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!uuid/|marked/)'],
  // One PostgreSQL cluster per run; each test file gets its own database cloned from a migrated template.
  globalSetup: '<rootDir>/test/support/globalSetup.ts',
  globalTeardown: '<rootDir>/test/support/globalTeardown.ts',
  // A test file fails when pg warns of concurrent queries on one client, in Jest or in a child it started.
  setupFilesAfterEnv: ['<rootDir>/test/support/pgWarningGuard.ts'],
  reporters: ['default', '<rootDir>/test/support/summaryReporter.js'],
  testTimeout: 60000,
  maxWorkers: 2,
};
