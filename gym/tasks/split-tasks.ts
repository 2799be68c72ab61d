/**
 * Train, dev and test tasks. A task that names its `split` keeps it. The tasks that name none are
 * split as `turnstream eval` splits a persona's prompts (eval/persona.ts `splitPrompts`): a fixed
 * round(share × n) of them is held out, at least 1 and at most n − 1, spread evenly over the
 * file's order (so a file ordered by theme holds out some of each), the same for every seed and
 * run; of the held-out ones every third goes to dev (the first of three, when there are three or
 * more), the rest to test.
 */
import { invalidInput } from '../../core/index.ts';
import type { Task } from './task.ts';

/** Share of the tasks held out where the file does not say. */
export const DEFAULT_HELD_OUT = 3 / 8;

/** Options of {@link splitTasks}. */
export interface SplitTasksOptions {
  /** Share of the tasks without a `split` that is held out (dev and test), in (0, 1). @default 3/8 */
  heldOut?: number;
}

/** The tasks trained on, those held out to choose settings (dev) and to report (test), each in the file's order. */
export interface TaskSplits {
  train: Task[];
  dev: Task[];
  test: Task[];
}

/**
 * Splits a suite (pure and deterministic). A lone task without a `split` is trained on.
 * @throws TurnstreamError TS_ERR_INVALID_INPUT for a share outside (0, 1)
 */
export function splitTasks(tasks: readonly Task[], options: SplitTasksOptions = {}): TaskSplits {
  const share = options.heldOut ?? DEFAULT_HELD_OUT;
  if (!(share > 0 && share < 1)) throw invalidInput(`the held-out share must be between 0 and 1 (got ${share})`, 'heldOut');
  const open = tasks.filter((t) => t.split === undefined);
  const n = open.length;
  const count = n < 2 ? 0 : Math.min(n - 1, Math.max(1, Math.round(share * n)));
  const held = Array.from({ length: count }, (_, k) => open[Math.floor(((k + 0.5) * n) / count)]);
  const dev = new Set(count >= 3 ? held.filter((_, k) => k % 3 === 0) : []);
  const test = new Set(held.filter((t) => !dev.has(t)));
  return {
    train: tasks.filter((t) => t.split === 'train' || (t.split === undefined && !dev.has(t) && !test.has(t))),
    dev: tasks.filter((t) => t.split === 'dev' || dev.has(t)),
    test: tasks.filter((t) => t.split === 'test' || test.has(t)),
  };
}
