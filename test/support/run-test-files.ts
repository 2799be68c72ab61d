/**
 * Runs test files with node:test, one after another, each in a process of its own with
 * `--test-force-exit` (a file that leaves a handle open must not stall the run), shows them
 * with the spec reporter, checks that every test each file declared was reported
 * (test-tally.ts) and prints the totals. bin/run-tests.js starts it as
 * `node --import tsx test/support/run-test-files.ts FILE...`; node:test hands the `--import tsx`
 * on to the files' processes.
 *
 * Each file is a run of its own (node:test's `run()`), so what a run reports belongs to that
 * file whatever module declared the test. This process does not force its own exit: it reads
 * every event a file's process delivered before it looks at the counts.
 *
 * Exit status 0 when every test passed and every declared test was reported, else 1.
 */
import { once } from 'node:events';
import { resolve } from 'node:path';
import { run } from 'node:test';
import { spec, type TestEvent } from 'node:test/reporters';
import { isRunSummary, RunTally } from './test-tally.ts';

const files = process.argv.slice(2).map((f) => resolve(f));
if (files.length === 0) {
  console.error('usage: node --import tsx test/support/run-test-files.ts FILE...');
  process.exit(2);
}

const reporter = new spec();
reporter.pipe(process.stdout);
const interrupt = new AbortController();
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => interrupt.abort());

const tally = new RunTally();
/** Runs of a file after the first, when its report came up short. */
const MAX_RERUNS = 2;
/** A line of the runner's own, in order with the reporter's output. */
const note = (message: string): void =>
  void reporter.write({ type: 'test:diagnostic', data: { message, nesting: 0, file: undefined } } as unknown as TestEvent);
const t0 = Date.now();
for (const file of files) {
  if (interrupt.signal.aborted) break;
  let fileTally = tally.file(file);
  for (let attempt = 0; ; attempt++) {
    const events = run({ files: [file], concurrency: 1, forceExit: true, signal: interrupt.signal });
    for await (const event of events as AsyncIterable<TestEvent>) {
      fileTally.add(event);
      if (!isRunSummary(event)) reporter.write(event);
    }
    // --test-force-exit can end a file's process with its last results still in the pipe to
    // this one (nodejs/node#64833). A file that failed nothing but came up short runs again, at
    // most twice; the tally kept is the last run's, so a file counts only when it reported whole.
    const short = fileTally.difference();
    if (short === undefined || fileTally.failed || attempt >= MAX_RERUNS || interrupt.signal.aborted) break;
    note(`${short}; running it again (--test-force-exit drops results at times: nodejs/node#64833)`);
    fileTally = tally.rerun(fileTally);
  }
}
reporter.end();
await once(reporter, 'end');

const differences = tally.differences();
const lines = [
  ...differences.map((d) => `✖ ${d}`),
  differences.length ? `✖ ${differences.length} of ${tally.files.length} files did not report every test they declared` : '',
  interrupt.signal.aborted ? '✖ interrupted' : '',
  `ℹ ${tally.summary()} in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
].filter(Boolean);
process.stdout.write(`${lines.join('\n')}\n`);
process.exitCode = tally.ok && !interrupt.signal.aborted ? 0 : 1;
