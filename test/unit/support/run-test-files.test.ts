import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../../support/stack.ts';

const fixture = (name: string): string => `test/fixtures/test-runner/${name}.ts`;

/** `node --import tsx ARGS` from the repository root, outside this test's own runner. */
function node(args: string[], extraEnv: Record<string, string> = {}): { status: number | null; out: string } {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extraEnv };
  delete env.NODE_TEST_CONTEXT; // else node:test in the child thinks it is a test file of ours
  const r = spawnSync(process.execPath, ['--import', 'tsx', ...args], { cwd: REPO_ROOT, env, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}
const runFiles = (...names: string[]) => node(['test/support/run-test-files.ts', ...names.map(fixture)]);
const summary = (out: string): string | undefined => /^ℹ (.*) in [\d.]+ s$/m.exec(out)?.[1];

/** The fixture run by node's own runner alone (TAP), which passes it (exit 0); returns the output. */
function plainNodeTest(name: string): string {
  const plain = node(['--test', '--test-force-exit', '--test-reporter=tap', fixture(name)]);
  assert.equal(plain.status, 0, plain.out);
  return plain.out;
}

test('a clean file: every declared test reported, the totals printed, exit 0', () => {
  const r = runFiles('clean');
  assert.equal(r.status, 0, r.out);
  assert.match(r.out, /✔ adds/, 'the spec output for people');
  assert.equal(summary(r.out), '5 tests, 4 passed, 0 failed, 1 file (1 skipped)', r.out);
  assert.doesNotMatch(r.out, /declared/);
});

test('a failing test fails the run and is counted, with nothing missing', () => {
  const r = runFiles('fails', 'clean');
  assert.equal(r.status, 1, r.out);
  assert.equal(summary(r.out), '7 tests, 5 passed, 1 failed, 2 files (1 skipped)', r.out);
  assert.doesNotMatch(r.out, /declared/);
});

test('a file that loses tests mid-run: node:test alone passes with fewer tests; the check fails the run naming them', () => {
  // The drop itself: node's runner counts 1 test and exits 0.
  const plain = plainNodeTest('exits-mid-run');
  assert.match(plain, /^# tests 1$/m, plain);

  const r = runFiles('clean', 'exits-mid-run');
  assert.equal(r.status, 1, r.out);
  const lines = r.out.split('\n').filter((l) => l.includes('declared') && !l.includes('running it again'));
  assert.deepEqual(lines, [
    '✖ test/fixtures/test-runner/exits-mid-run.ts: 1 of 3 declared tests reported; missing "exits mid-run", "never runs"',
    '✖ 1 of 2 files did not report every test they declared',
  ]);
  // Run again twice, short each time: the file still fails the run.
  assert.equal(r.out.split('\n').filter((l) => l.includes('running it again')).length, 2, r.out);
  assert.equal(summary(r.out), '6 tests, 5 passed, 0 failed, 2 files (1 skipped, 1 file run again after a report cut short)', r.out);
});

test('a file whose report came up short once is run again, and counts when the rerun reports every test', () => {
  const dir = mkdtempSync(join(tmpdir(), 'exits-once-'));
  try {
    const r = node(['test/support/run-test-files.ts', fixture('exits-once'), fixture('clean')], { TS_EXITS_ONCE_MARK: join(dir, 'mark') });
    assert.equal(r.status, 0, r.out);
    assert.match(
      r.out,
      /exits-once\.ts: 1 of 3 declared tests reported; missing "cut short the first time", "reported once run again"; running it again$/m,
    );
    assert.equal(summary(r.out), '8 tests, 7 passed, 0 failed, 2 files (1 skipped, 1 file run again after a report cut short)', r.out);
    assert.doesNotMatch(r.out, /did not report every test/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a file that exits before any result leaves it: node:test counts the file as one passing test; the check fails the run', () => {
  const plain = plainNodeTest('exits-before-reporting');
  assert.match(plain, /^# pass 1$/m, plain);

  const r = runFiles('exits-before-reporting', 'clean');
  assert.equal(r.status, 1, r.out);
  assert.match(
    r.out,
    /^✖ test\/fixtures\/test-runner\/exits-before-reporting\.ts: no test reported \(it exited before its results reached the runner, or declares none\)$/m,
  );
  assert.match(r.out, /^✖ 1 of 2 files did not report every test they declared$/m);
  assert.equal(summary(r.out), '5 tests, 4 passed, 0 failed, 2 files (1 skipped, 1 file run again after a report cut short)', r.out);
});

test('a file whose tests all reported but whose process lingers is stopped, counted whole, and named', () => {
  const r = runFiles('lingers', 'clean');
  assert.equal(r.status, 0, r.out);
  assert.equal(summary(r.out), '7 tests, 6 passed, 0 failed, 2 files (1 skipped)', r.out);
  assert.match(r.out, /^ℹ stopped 5 s after their last result \(a handle left open\): test\/fixtures\/test-runner\/lingers\.ts$/m);
  assert.doesNotMatch(r.out, /declared|cancel/);
});

test('files in the parallel folder run two at a time: each file’s lines stay together, the totals are the same', () => {
  const names = ['lingers', 'clean', 'fails'];
  const r = node(['test/support/run-test-files.ts', ...names.map(fixture)], {
    TS_TEST_PARALLEL_DIR: 'test/fixtures/test-runner',
    TS_TEST_JOBS: '2',
  });
  assert.equal(r.status, 1, r.out);
  assert.equal(summary(r.out), '9 tests, 7 passed, 1 failed, 3 files (1 skipped)', r.out);
  // `lingers` takes 5 s longer than the other two, so it reports last, in one piece. (Where the
  // spec reporter prints its failing tests differs by Node version: only the results are read.)
  const lines = r.out.split('\n');
  const last = lines.findIndex((l) => l.startsWith('✔ passes too'));
  assert.match(lines[last - 1] ?? '', /^✔ passes \(/, r.out);
  for (const other of ['✔ adds', '✖ fails']) {
    const at = lines.findIndex((l) => l.startsWith(other));
    assert.ok(at >= 0 && at < last - 1, `${other} before lingers' lines\n${r.out}`);
  }
  assert.match(r.out, /^ℹ stopped 5 s after their last result \(a handle left open\): test\/fixtures\/test-runner\/lingers\.ts$/m);
});

test('a file there with a `// run alone:` line runs after the others, on its own', () => {
  const r = node(['test/support/run-test-files.ts', fixture('alone'), fixture('lingers')], {
    TS_TEST_PARALLEL_DIR: 'test/fixtures/test-runner',
    TS_TEST_JOBS: '2',
  });
  assert.equal(r.status, 0, r.out);
  // Side by side it would have reported at once, before `lingers`, which waits 5 s to be stopped.
  const shown = r.out
    .split('\n')
    .filter((l) => /^✔/.test(l))
    .map((l) => l.replace(/ \(.*$/, ''));
  assert.deepEqual(shown, ['✔ passes', '✔ passes too', '✔ ran alone'], r.out);
});
