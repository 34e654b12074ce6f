const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');

// Prints one plain closing line ("N passed, N failed, N skipped") that CI tools read in any language, and writes each
// test file's seconds to artifacts/test-durations.json (test/support/sequencer.js orders a cache-less run by them).
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    process.stdout.write(`\njest: ${results.numPassedTests} passed, ${failed} failed, ${results.numPendingTests + results.numTodoTests} skipped\n`);
    // Merged into what earlier runs wrote, so that a run of a few files updates their entries and keeps the rest.
    const file = path.join(ROOT, 'artifacts', 'test-durations.json');
    const seconds = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : {};
    for (const r of results.testResults) seconds[path.relative(ROOT, r.testFilePath)] = Math.round((r.perfStats.end - r.perfStats.start) / 1000);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `${JSON.stringify(Object.fromEntries(Object.entries(seconds).sort((a, b) => b[1] - a[1])), null, 1)}\n`);
  }
}
module.exports = SummaryReporter;
