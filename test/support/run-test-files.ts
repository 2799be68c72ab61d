/**
 * Runs test files with node:test, each in a process of its own (the unit tests two at a time, the
 * rest one after another, since they share the stack), shows them
 * with the spec reporter, checks that every test each file declared was reported
 * (test-tally.ts) and prints the totals. A file whose tests have all reported but whose process
 * lingers (a handle left open) is stopped after LINGER_MS, and named. bin/run-tests.js starts it as
 * `node --import tsx test/support/run-test-files.ts FILE...`; node:test hands the `--import tsx`
 * on to the files' processes.
 *
 * Each file is a run of its own (node:test's `run()`), so what a run reports belongs to that
 * file whatever module declared the test. Nothing here forces an exit: `--test-force-exit` ends
 * a file's process with its last results still on their way to the runner (nodejs/node#64833;
 * on CI's Node 24 a file lost 25 of 63 results three runs in a row), so a lingering process is
 * stopped from here, once every result it declared is in.
 *
 * Exit status 0 when every test passed and every declared test was reported, else 1.
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve, sep } from 'node:path';
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
/** How long a file's process may live on, without a word, once every test it declared has reported. */
const LINGER_MS = 5_000;
const lingering: string[] = [];
/** A line of the runner's own, in order with the reporter's output. */
const diagnostic = (message: string): TestEvent =>
  ({ type: 'test:diagnostic', data: { message, nesting: 0, file: undefined } }) as unknown as TestEvent;
/**
 * The folder whose files may run side by side (TS_TEST_PARALLEL_DIR, default test/unit), and how
 * many at a time (TS_TEST_JOBS, default the number of cores, at most 2).
 */
const PARALLEL_DIR = resolve(process.env.TS_TEST_PARALLEL_DIR ?? 'test/unit') + sep;
const jobs = Math.max(1, Math.floor(Number(process.env.TS_TEST_JOBS) || Math.min(2, availableParallelism())));
const t0 = Date.now();

/**
 * Runs one file (again, when its report came up short) and hands its events to `write`: the
 * reporter itself for a file run alone, a buffer for one run beside another, so that each file's
 * lines stay together.
 */
async function runFile(file: string, write: (event: TestEvent) => void): Promise<void> {
  let fileTally = tally.file(file);
  for (let attempt = 0; ; attempt++) {
    const stop = new AbortController();
    const events = run({ files: [file], concurrency: 1, signal: AbortSignal.any([interrupt.signal, stop.signal]) });
    let timer: NodeJS.Timeout | undefined;
    for await (const event of events as AsyncIterable<TestEvent>) {
      if (stop.signal.aborted) continue; // the cancellation of a process whose every test had reported
      fileTally.add(event);
      if (!isRunSummary(event)) write(event);
      clearTimeout(timer);
      if (fileTally.complete) timer = setTimeout(() => stop.abort(), LINGER_MS);
    }
    clearTimeout(timer);
    if (stop.signal.aborted) lingering.push(fileTally.name());
    // A process that ends in the middle of a test (a `process.exit`) loses the rest. A file that
    // failed nothing but came up short runs again, at most twice; the tally kept is the last
    // run's, so a file counts only when it reported whole.
    const short = fileTally.difference();
    if (short === undefined || fileTally.failed || attempt >= MAX_RERUNS || interrupt.signal.aborted) break;
    write(diagnostic(`${short}; running it again`));
    fileTally = tally.rerun(fileTally);
  }
}

// Files under PARALLEL_DIR share nothing (no stack, no fixed ports, no files outside their own
// temp folders), so they run `jobs` at a time; every other file runs alone, after them.
// A file there that reads what others may change at the same time (the machine's native builds,
// the installed packages' links) says so in a line `// run alone: why`.
const runsAlone = (file: string): boolean => !file.startsWith(PARALLEL_DIR) || /^\/\/ run alone: /m.test(readFileSync(file, 'utf8'));
const side = files.filter((f) => !runsAlone(f));
const alone = files.filter(runsAlone);
let next = 0;
const worker = async (): Promise<void> => {
  while (next < side.length && !interrupt.signal.aborted) {
    const file = side[next++];
    if (jobs === 1) {
      await runFile(file, (e) => void reporter.write(e));
      continue;
    }
    const buffered: TestEvent[] = [];
    await runFile(file, (e) => void buffered.push(e));
    for (const e of buffered) reporter.write(e);
  }
};
await Promise.all(Array.from({ length: Math.min(jobs, side.length) }, worker));
for (const file of alone) {
  if (interrupt.signal.aborted) break;
  await runFile(file, (e) => void reporter.write(e));
}
reporter.end();
await once(reporter, 'end');

const differences = tally.differences();
const lines = [
  ...differences.map((d) => `✖ ${d}`),
  differences.length ? `✖ ${differences.length} of ${tally.files.length} files did not report every test they declared` : '',
  interrupt.signal.aborted ? '✖ interrupted' : '',
  lingering.length ? `ℹ stopped ${LINGER_MS / 1000} s after their last result (a handle left open): ${lingering.join(', ')}` : '',
  `ℹ ${tally.summary()} in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
].filter(Boolean);
process.stdout.write(`${lines.join('\n')}\n`);
process.exitCode = tally.ok && !interrupt.signal.aborted ? 0 : 1;
