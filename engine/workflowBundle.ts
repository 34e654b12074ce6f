import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const WORKFLOWS = path.resolve(__dirname, '..', 'workflows');

/**
 * The Temporal workflow bundle (workflows/temporal.ts and what it imports), built by the SDK's bundler in a child
 * process and kept in the system's temp directory under a hash of its sources: the worker loads the finished code.
 * Why not let Worker.create bundle in-process: webpack grows the worker's resident memory by ~95 MB for the rest of
 * its life (137 → 231 MB measured), which broke the 300 MB a worker may use through a 100k campaign. A second worker
 * on the host, or a restart, reuses the file.
 */
export async function workflowBundlePath(): Promise<string> {
  const hash = createHash('sha256');
  for (const file of fs.readdirSync(WORKFLOWS).filter((f) => f.endsWith('.ts')).sort()) {
    hash.update(file).update(fs.readFileSync(path.join(WORKFLOWS, file)));
  }
  hash.update(JSON.parse(fs.readFileSync(require.resolve('@temporalio/workflow/package.json'), 'utf8')).version as string);
  const file = path.join(os.tmpdir(), `herald-workflows-${hash.digest('hex').slice(0, 16)}.js`);
  if (fs.existsSync(file)) return file;
  // Compiled (scripts/run.cjs's build) the bundler's script is JavaScript beside this file's; from the sources, tsx runs it.
  const compiled = __filename.endsWith('.js');
  const script = path.resolve(__dirname, '..', 'scripts', `bundleWorkflows${compiled ? '.js' : '.ts'}`);
  await run(process.execPath, [...(compiled ? [] : ['--import', 'tsx']), script, file], { maxBuffer: 16 * 1024 * 1024 });
  return file;
}
