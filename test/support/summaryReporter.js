// Prints one plain closing line ("N passed, N failed, N skipped") that CI tools read in any language.
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    process.stdout.write(`\njest: ${results.numPassedTests} passed, ${failed} failed, ${results.numPendingTests + results.numTodoTests} skipped\n`);
  }
}
module.exports = SummaryReporter;
