/**
 * Herald against its own OpenAPI document, attacked by schemathesis (a property-based API tester this project did not
 * write): `npm run conformance`, run by `.ci/run` after the tests.
 *
 * Starts Herald as `npm start` does (embedded PostgreSQL and engine, API and worker) in a fresh temporary DATA_DIR,
 * with its mail going to a loopback SMTP sink and a project whose example.com is verified. Then schemathesis (pinned,
 * installed into .tools/ by scripts/schemathesis.js) reads GET /openapi.json and runs every operation:
 * - phases: examples, coverage, fuzzing, and stateful (the document's `links`: create, then get, patch and delete);
 * - bounded: CONFORMANCE_MAX_EXAMPLES test cases per operation (default 20), a fixed seed (CONFORMANCE_SEED, default 1)
 *   so that a run can be reproduced, and CONFORMANCE_MAX_TIME seconds in all (default 180: fuzzing and stateful tests
 *   repeat until it is spent);
 * - checks: not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance.
 * The exit code is schemathesis's: any failure fails CI. Its output is printed with every line prefixed
 * (`schemathesis│ `): its last line has the shape of a pytest closing line (`==== 2 warnings in 180.03s ====`) that names
 * no test, and tools that read runners' closing lines would take the run for one that executed nothing. The run's own
 * count follows, in the plain form `conformance: N passed, N failed, N skipped` (operations, from the JUnit report,
 * which goes to artifacts/schemathesis/).
 *
 * Exclusions (each with its reason) are listed in EXCLUDED below; there are none unless listed.
 */
import { spawn } from 'node:child_process';
import readline from 'node:readline';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../config';
import { startHerald } from '../bin/runtime';
import { createProject } from '../projects/service';
import { addDomain } from '../domains/rows';
import { startSink } from '../bench/lib/sink';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ensureSchemathesis } = require('./schemathesis.js') as { ensureSchemathesis(): string };

/** Operations left out of the run, each with its reason: `--exclude-path-regex` patterns. */
const EXCLUDED: { pattern: string; reason: string }[] = [];

const ROOT = path.resolve(__dirname, '..');

async function main(): Promise<number> {
  const cli = ensureSchemathesis();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-conformance-'));
  // As root, PostgreSQL runs as the postgres user, which must be able to enter the directory.
  fs.chmodSync(dataDir, 0o755);
  const sink = await startSink();
  const config = loadConfig({
    ...process.env,
    PORT: '0',
    DATA_DIR: dataDir,
    SMTP_URL: sink.url,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    ENGINE: 'embedded',
    API_RATE_LIMIT_PER_MINUTE: '100000000',
    SMTP_SUBMISSION_PORT: '0',
    SMTP_INBOUND_PORT: '0',
  });
  const herald = await startHerald(config, { api: true, worker: true });
  try {
    const base = `http://127.0.0.1:${(herald.server!.address() as AddressInfo).port}`;
    const project = await createProject('Conformance');
    await addDomain(project.id, 'example.com', true);

    const reportDir = path.join(ROOT, 'artifacts', 'schemathesis');
    fs.rmSync(reportDir, { recursive: true, force: true }); // the count below reads this run's report, not an older one
    const args = [
      'run', `${base}/openapi.json`,
      '--header', `Authorization: Bearer ${project.secretKey}`,
      '--checks', 'not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance',
      '--phases', 'examples,coverage,fuzzing,stateful',
      '--max-examples', process.env.CONFORMANCE_MAX_EXAMPLES ?? '20',
      '--seed', process.env.CONFORMANCE_SEED ?? '1',
      '--max-time', process.env.CONFORMANCE_MAX_TIME ?? '180',
      // One worker: with two threads, hypothesis' parsing of lambda sources trips CPython 3.11's thread-unsafe AST
      // recursion check ("AST constructor recursion depth mismatch"), a runtime error of the tool, not of Herald.
      '--workers', '1',
      '--request-timeout', '30',
      '--generation-database', 'none',
      // File uploads (POST /contacts/imports, /preview) take a body of a media type schemathesis has no generator for
      // (text/csv, application/x-ndjson): it discards most of what it draws for them, and its health check then stops
      // the operation as "filtered too much". A limit of the generator, not a finding about Herald: not a failure.
      '--suppress-health-check', 'filter_too_much',
      '--report', 'junit', '--report-dir', reportDir,
      '--no-color',
      ...EXCLUDED.flatMap((e) => ['--exclude-path-regex', e.pattern]),
    ];
    console.log(`schemathesis ${args.slice(0, 2).join(' ')} (project ${project.id}; ${EXCLUDED.length} exclusions)`);
    const code = await new Promise<number>((resolve) => {
      // In the temporary directory: schemathesis keeps a cache (.schemathesis/) in its working directory.
      const run = spawn(cli, args, { cwd: dataDir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
      for (const [from, to] of [[run.stdout, process.stdout], [run.stderr, process.stderr]] as const) {
        readline.createInterface({ input: from, crlfDelay: Infinity }).on('line', (line) => to.write(`schemathesis│ ${line}\n`));
      }
      run.on('close', (exit) => resolve(exit ?? 1));
    });
    const count = junitCount(reportDir);
    console.log(count
      ? `conformance: ${count.passed} passed, ${count.failed} failed, ${count.skipped} skipped`
      : 'conformance: no JUnit report was written');
    return count ? code : code || 1;
  } finally {
    await herald.stop();
    await sink.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The newest JUnit report's operation counts (schemathesis writes one `<testsuite>` with a test case per operation). */
function junitCount(reportDir: string): { passed: number; failed: number; skipped: number } | undefined {
  const reports = fs.existsSync(reportDir) ? fs.readdirSync(reportDir).filter((f) => /^junit-.*\.xml$/.test(f)).sort() : [];
  const newest = reports.at(-1);
  if (!newest) return undefined;
  const suite = /<testsuite\b([^>]*)>/.exec(fs.readFileSync(path.join(reportDir, newest), 'utf8'));
  if (!suite) return undefined;
  const attr = (name: string) => Number(new RegExp(`\\b${name}="(\\d+)"`).exec(suite[1]!)?.[1] ?? 0);
  const failed = attr('failures') + attr('errors');
  const skipped = attr('skipped');
  return { passed: attr('tests') - failed - skipped, failed, skipped };
}

main().then((code) => process.exit(code), (err: Error) => {
  console.error(`conformance: ${err.stack ?? err.message}`);
  process.exit(1);
});
