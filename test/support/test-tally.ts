/**
 * What node:test reported for each test file, checked against what the file declared.
 *
 * A test file's process can end before its last results reach the runner: a test that calls
 * `process.exit` loses the rest outright, and `--test-force-exit` loses what is still in the
 * reporter's pipeline (nodejs/node#54327, #64833). The runner then reports fewer tests and
 * still passes. So each file is tallied on its own: every test the runner saw start
 * (`test:enqueue`, emitted as a test is registered, long before its result) must have a result
 * (`test:pass` or `test:fail`), and a file must report at least one test. Suites and subtests count like tests here, on both sides.
 */
import { relative } from 'node:path';
import type { TestEvent } from 'node:test/reporters';

/** The totals of a run, as people read them. */
export interface RunTotals {
  /** Tests with a result (suites not counted; a file that failed without reporting any counts as one). */
  tests: number;
  /** Tests that passed, skipped and todo ones not included. */
  passed: number;
  failed: number;
  skipped: number;
  todo: number;
  files: number;
  /** Suites that failed: one of their tests, or a hook of theirs (then their tests may all have passed). */
  suitesFailed: number;
}

/** The run's own summary lines (`tests 12`, `pass 11`, …), replaced by the tally's line. */
const SUMMARY = /^(tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) [\d.]+$/;

/** Whether `event` is the per-run summary that node:test emits at the end of a run. */
export function isRunSummary(event: TestEvent): boolean {
  return event.type === 'test:diagnostic' && event.data.nesting === 0 && event.data.file === undefined && SUMMARY.test(event.data.message);
}

/** One test file's events, from the runner that ran it alone. */
export class FileTally {
  /** Tests seen to start, by nesting and name (a name may repeat). */
  readonly #declared = new Map<string, number>();
  /** Tests with a result, by nesting and name. */
  readonly #reported = new Map<string, number>();
  /** The file's own result: node:test reports the file as a test when none of its tests reported. */
  #fileVerdict: 'pass' | 'fail' | undefined;
  #topLevelReported = 0;
  readonly counts = { tests: 0, passed: 0, failed: 0, skipped: 0, todo: 0, suitesFailed: 0 };

  /** @param file - the path the file was run by (node:test names the file's own test so). */
  constructor(readonly file: string) {}

  add(event: TestEvent): void {
    if (event.type !== 'test:enqueue' && event.type !== 'test:pass' && event.type !== 'test:fail') return;
    const { data } = event;
    const own = data.nesting === 0 && data.name === this.file;
    if (event.type === 'test:enqueue') {
      if (!own) bump(this.#declared, key(data.nesting, data.name));
      return;
    }
    const pass = event.type === 'test:pass';
    if (own) {
      // The file stands in for tests that never reported: a failure counts, a pass is no test.
      this.#fileVerdict = pass ? 'pass' : 'fail';
      if (pass) return;
    } else {
      bump(this.#reported, key(data.nesting, data.name));
      if (data.nesting === 0) this.#topLevelReported++;
    }
    if (event.data.details.type === 'suite') {
      if (!pass) this.counts.suitesFailed++;
      return;
    }
    this.counts.tests++;
    if (event.type === 'test:fail') this.counts.failed++;
    else if (marked(event.data.skip)) this.counts.skipped++;
    else if (marked(event.data.todo)) this.counts.todo++;
    else this.counts.passed++;
  }

  /**
   * Whether the file's report is whole so far: a top-level test has a result, and so has every
   * test seen to start (a parent test's result comes after its subtests').
   */
  get complete(): boolean {
    return this.#topLevelReported > 0 && this.difference() === undefined;
  }

  /** The file's path, relative to `cwd`. */
  name(cwd = process.cwd()): string {
    return relative(cwd, this.file) || this.file;
  }

  /** Whether anything in the file failed: a test, a suite's hook, or the file itself. */
  get failed(): boolean {
    return this.counts.failed > 0 || this.counts.suitesFailed > 0 || this.#fileVerdict === 'fail';
  }

  /**
   * How the reported tests differ from the declared ones, in one line naming the file; undefined
   * when every declared test has a result.
   */
  difference(cwd = process.cwd()): string | undefined {
    const name = this.name(cwd);
    const declared = total(this.#declared);
    const reported = total(this.#reported);
    if (declared === 0 && reported === 0) {
      return this.#fileVerdict === 'fail'
        ? `${name}: no test reported; the file failed before any did (its error is above)`
        : `${name}: no test reported (it exited before its results reached the runner, or declares none)`;
    }
    const missing = difference(this.#declared, this.#reported);
    const unexpected = difference(this.#reported, this.#declared);
    if (missing.length === 0 && unexpected.length === 0) return undefined;
    const parts = [`${name}: ${reported} of ${declared} declared tests reported`];
    if (missing.length) parts.push(`missing ${list(missing)}`);
    if (unexpected.length) parts.push(`reported but never started ${list(unexpected)}`);
    return parts.join('; ');
  }
}

/** The tallies of a run's files. */
export class RunTally {
  readonly files: FileTally[] = [];
  /** Files run again because their first report came up short (their last tally is the one kept). */
  readonly rerunFiles = new Set<string>();

  file(path: string): FileTally {
    const tally = new FileTally(path);
    this.files.push(tally);
    return tally;
  }

  /** A fresh tally for running `old`'s file again; it takes `old`'s place in the run. */
  rerun(old: FileTally): FileTally {
    const tally = new FileTally(old.file);
    this.files[this.files.indexOf(old)] = tally;
    this.rerunFiles.add(old.file);
    return tally;
  }

  totals(): RunTotals {
    const t: RunTotals = { tests: 0, passed: 0, failed: 0, skipped: 0, todo: 0, files: this.files.length, suitesFailed: 0 };
    for (const f of this.files) {
      t.tests += f.counts.tests;
      t.passed += f.counts.passed;
      t.failed += f.counts.failed;
      t.skipped += f.counts.skipped;
      t.todo += f.counts.todo;
      t.suitesFailed += f.counts.suitesFailed;
    }
    return t;
  }

  /** One line per file whose reported tests differ from its declared ones. */
  differences(cwd = process.cwd()): string[] {
    return this.files.map((f) => f.difference(cwd)).filter((d): d is string => d !== undefined);
  }

  /** Whether the run passed: nothing failed and every declared test was reported. */
  get ok(): boolean {
    return this.files.every((f) => !f.failed) && this.differences().length === 0;
  }

  /** `N tests, N passed, N failed, N files`, then what else there is to say. */
  summary(): string {
    const t = this.totals();
    const n = (count: number, what: string): string => `${count} ${what}${count === 1 ? '' : 's'}`;
    const extra = [
      t.skipped && `${t.skipped} skipped`,
      t.todo && `${t.todo} todo`,
      t.suitesFailed && `${t.suitesFailed} ${t.suitesFailed === 1 ? 'suite' : 'suites'} failed`,
      this.rerunFiles.size && `${n(this.rerunFiles.size, 'file')} run again after a report cut short`,
    ].filter(Boolean);
    return `${n(t.tests, 'test')}, ${t.passed} passed, ${t.failed} failed, ${n(t.files, 'file')}${extra.length ? ` (${extra.join(', ')})` : ''}`;
  }
}

/** `skip` and `todo` are true or a reason when set. */
const marked = (flag: string | boolean | undefined): boolean => flag !== undefined && flag !== false;
const key = (nesting: number, name: string): string => `${nesting}\u0000${name}`;
const bump = (m: Map<string, number>, k: string): void => void m.set(k, (m.get(k) ?? 0) + 1);
const total = (m: Map<string, number>): number => [...m.values()].reduce((a, b) => a + b, 0);

/** The names in `a` beyond their count in `b`. */
function difference(a: Map<string, number>, b: Map<string, number>): string[] {
  const out: string[] = [];
  for (const [k, n] of a) for (let i = b.get(k) ?? 0; i < n; i++) out.push(k.slice(k.indexOf('\u0000') + 1));
  return out;
}

function list(names: string[]): string {
  const shown = names.slice(0, 5).map((n) => JSON.stringify(n));
  return names.length > 5 ? `${shown.join(', ')} and ${names.length - 5} more` : shown.join(', ');
}
