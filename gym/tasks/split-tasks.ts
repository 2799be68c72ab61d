/**
 * Train and held-out tasks. A task that names its `split` keeps it. The tasks that name none are
 * split as `turnstream eval` splits a persona's prompts (eval/persona.ts `splitPrompts`): a fixed
 * round(share × n) of them, at least 1 and at most n − 1, spread evenly over the file's order (so
 * a file ordered by theme holds out some of each), the same for every seed and run.
 */
import { invalidInput } from '../../core/index.ts';
import type { Task } from './task.ts';

/** Share of the tasks held out where the file does not say. */
export const DEFAULT_HELD_OUT = 3 / 8;

/** Options of {@link splitTasks}. */
export interface SplitTasksOptions {
  /** Share of the tasks without a `split` that is held out, in (0, 1). @default 3/8 */
  heldOut?: number;
}

/** The tasks trained on and the ones held out for eval, each in the file's order. */
export interface TaskSplits {
  train: Task[];
  eval: Task[];
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
  const held = new Set(Array.from({ length: count }, (_, k) => open[Math.floor(((k + 0.5) * n) / count)]));
  return {
    train: tasks.filter((t) => t.split === 'train' || (t.split === undefined && !held.has(t))),
    eval: tasks.filter((t) => t.split === 'eval' || held.has(t)),
  };
}
