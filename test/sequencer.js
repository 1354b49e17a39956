// Jest's order of test files (jest.config.js, testSequencer). Jest starts the longest files first from
// the durations of its previous run on this machine; a fresh clone has none, and Jest then goes by file
// size, a rough guess (build-swap, among the slowest, is only the 46th largest file), which leaves workers
// idle at the end. Here a file without a duration of its own takes the one in test/durations.json (seconds,
// from a full run; `node test/sequencer.js <jest --json report>` rewrites it). Files in neither (new ones)
// go first, as Jest puts them, since nothing says they are short.
'use strict';
const { readFileSync, writeFileSync } = require('node:fs');
const { join, relative } = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

const ROOT = join(__dirname, '..');
const RECORDED = join(__dirname, 'durations.json');

class LongestFirst extends Sequencer {
  sort(tests) {
    const recorded = JSON.parse(readFileSync(RECORDED, 'utf8'));
    const seconds = (test) => {
      const ms = this.time(test);
      return ms != null ? ms / 1000 : recorded[relative(ROOT, test.path)];
    };
    const rank = (test) => (this.hasFailed(test) ? 0 : seconds(test) == null ? 1 : 2);
    for (const test of tests) test.duration = seconds(test) == null ? undefined : seconds(test) * 1000;
    return [...tests].sort(
      (a, b) => rank(a) - rank(b) || (b.duration ?? 0) - (a.duration ?? 0) || (a.path < b.path ? -1 : 1),
    );
  }
}

module.exports = LongestFirst;

// `node test/sequencer.js report.json`: records the durations of a full run (`npx jest --json
// --outputFile=report.json`) in test/durations.json, rounded to whole seconds.
if (require.main === module) {
  const report = JSON.parse(readFileSync(process.argv[2], 'utf8'));
  const durations = Object.fromEntries(
    report.testResults
      .map((r) => [relative(ROOT, r.name), Math.max(1, Math.round((r.endTime - r.startTime) / 1000))])
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)),
  );
  writeFileSync(RECORDED, `${JSON.stringify(durations, null, 2)}\n`);
}
