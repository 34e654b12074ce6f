// Runs the longest test files first, so that the run does not end with one worker still in a long file while the other
// idles. Jest's own sequencer does this from the durations in its cache, but CI starts from a fresh clone with no cache
// and falls back to file size, which put the 79-line 10,000-recipient campaign test (400 s in a loaded run) last.
// A file's duration comes from Jest's cache when it has one, else from test/support/durations.json: the seconds of
// each file in a whole run, written by the summary reporter to artifacts/test-durations.json (copy it over to refresh).
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

const ROOT = path.resolve(__dirname, '..', '..');
const recorded = require('./durations.json');

class LongestFirst extends Sequencer {
  time(test) {
    return super.time(test) ?? (recorded[path.relative(ROOT, test.path)] ?? 0) * 1000;
  }
}

module.exports = LongestFirst;
