/**
 * Bundles Herald's Temporal workflows (workflows/temporal.ts) with the SDK's bundler and writes the code to the file
 * given, atomically (a temp file renamed): engine/workflowBundle.ts runs it in a child process so that webpack's memory
 * never stays in a worker.   tsx scripts/bundleWorkflows.ts <out.js>
 */
import fs from 'node:fs';
import { bundleWorkflowCode } from '@temporalio/worker';

const out = process.argv[2];
if (!out) {
  console.error('usage: tsx scripts/bundleWorkflows.ts <out.js>');
  process.exit(2);
}
const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
bundleWorkflowCode({ workflowsPath: require.resolve('../workflows/temporal'), logger: quiet }).then(({ code }) => {
  const tmp = `${out}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, code);
  fs.renameSync(tmp, out);
}, (err: Error) => {
  console.error(`bundling the workflows failed: ${err.stack ?? err.message}`);
  process.exit(1);
});
