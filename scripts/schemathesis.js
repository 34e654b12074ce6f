#!/usr/bin/env node
// Finds schemathesis (a property-based API tester this project did not write; it attacks Herald through its OpenAPI
// document: scripts/conformance.ts) and installs the pinned version into the ignored `.tools/schemathesis` venv when
// it is missing.
//
//   node scripts/schemathesis.js ensure     installs it when missing, prints its path
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { pipInstall, venv } = require('./venv');

const VERSION = '4.32.5';
const CLI = path.join(venv('schemathesis').bin, 'schemathesis');

function isPinned() {
  if (!fs.existsSync(CLI)) return false;
  try {
    return execFileSync(CLI, ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 60_000 }).includes(`version ${VERSION}`);
  } catch {
    return false;
  }
}

function ensureSchemathesis() {
  if (!isPinned()) pipInstall('schemathesis', [`schemathesis==${VERSION}`]);
  if (!isPinned()) throw new Error(`schemathesis ${VERSION} is still missing after pip install (see above)`);
  return CLI;
}

module.exports = { VERSION, ensureSchemathesis };

if (require.main === module) {
  try {
    console.log(ensureSchemathesis());
  } catch (err) {
    console.error(`scripts/schemathesis.js: ${err.message}`);
    process.exit(1);
  }
}
