const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');

// Prints one plain closing line ("N passed, N failed, N skipped") that CI tools read in any language, and writes each
// test file's seconds to artifacts/test-durations.json (test/support/sequencer.js orders a cache-less run by them).
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    process.stdout.write(`\njest: ${results.numPassedTests} passed, ${failed} failed, ${results.numPendingTests + results.numTodoTests} skipped\n`);
    const seconds = results.testResults
      .map((r) => [path.relative(ROOT, r.testFilePath), Math.round((r.perfStats.end - r.perfStats.start) / 1000)])
      .sort((a, b) => b[1] - a[1]);
    fs.mkdirSync(path.join(ROOT, 'artifacts'), { recursive: true });
    fs.writeFileSync(path.join(ROOT, 'artifacts', 'test-durations.json'), `${JSON.stringify(Object.fromEntries(seconds), null, 1)}\n`);
  }
}
module.exports = SummaryReporter;
