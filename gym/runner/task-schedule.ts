/**
 * Which train tasks each rollout batch takes.
 *
 * - `uniform`: the train tasks in a seeded order, B at a time, reshuffled after each pass, so
 *   every task comes up as often as the others and two seeds differ.
 * - `signal` (dynamic sampling, after DAPO): a group whose n rewards are all equal teaches
 *   nothing, so tasks are drawn (without replacement, seeded) in proportion to the probability
 *   that their next group of n carries a signal, 1 − P(all pass) − P(all fail), under a Beta(1, 1)
 *   prior updated with the task's last `window` groups (beta-binomial). A task never tried has
 *   1 − 2/(n + 1); one that failed its last three groups of 8 about a quarter of that: it comes up
 *   less, never never, and rises again once the policy starts to solve it.
 */
import { mulberry32 } from '../../core/index.ts';
import type { Task } from '../tasks/task.ts';

/** A small seeded generator (core's mulberry32). */
export const seededRandom = mulberry32;

/** How tasks are drawn for a batch (see the module comment). */
export type TaskSampling = 'uniform' | 'signal';

export interface TaskScheduleOptions {
  /** @default 'uniform' */
  sampling?: TaskSampling;
  /** Rollouts per task (n), for the signal probability. @default 8 */
  n?: number;
  /** Groups of a task that count (the most recent). @default 3 */
  window?: number;
}

/** P(a group of n rollouts is not all-equal) for a pass rate ~ Beta(a, b). */
export function signalProbability(a: number, b: number, n: number): number {
  let allPass = 1;
  let allFail = 1;
  for (let i = 0; i < n; i++) {
    allPass *= (a + i) / (a + b + i);
    allFail *= (b + i) / (a + b + i);
  }
  return Math.max(0, 1 - allPass - allFail);
}

export class TaskSchedule {
  private queue: Task[] = [];
  private readonly rand: () => number;
  private readonly history = new Map<string, Array<{ passes: number; n: number }>>();
  private readonly o: Required<TaskScheduleOptions>;

  constructor(
    private readonly tasks: readonly Task[],
    seed: number,
    options: TaskScheduleOptions = {},
  ) {
    if (tasks.length === 0) throw new Error('a schedule needs tasks');
    this.rand = seededRandom(seed * 7919 + 17);
    this.o = { sampling: options.sampling ?? 'uniform', n: options.n ?? 8, window: options.window ?? 3 };
  }

  /** Records a group's outcome: `passes` of its `n` rollouts passed. */
  observe(taskId: string, passes: number, n: number): void {
    const h = this.history.get(taskId) ?? [];
    h.push({ passes, n });
    this.history.set(taskId, h.slice(-this.o.window));
  }

  /** The probability that the task's next group carries a signal, from its recent groups. */
  signalOf(taskId: string): number {
    const h = this.history.get(taskId) ?? [];
    const passes = h.reduce((s, g) => s + g.passes, 0);
    const fails = h.reduce((s, g) => s + g.n - g.passes, 0);
    return signalProbability(1 + passes, 1 + fails, this.o.n);
  }

  /** The next `count` tasks (distinct when there are that many). */
  next(count: number): Task[] {
    return this.o.sampling === 'signal' ? this.bySignal(count) : this.uniform(count);
  }

  private uniform(count: number): Task[] {
    const out: Task[] = [];
    while (out.length < count) {
      if (this.queue.length === 0) {
        this.queue = [...this.tasks];
        for (let i = this.queue.length - 1; i > 0; i--) {
          const j = Math.floor(this.rand() * (i + 1));
          [this.queue[i], this.queue[j]] = [this.queue[j], this.queue[i]];
        }
      }
      const t = this.queue.shift()!;
      if (out.includes(t) && this.tasks.length >= count) {
        this.queue.push(t);
        continue;
      }
      out.push(t);
    }
    return out;
  }

  private bySignal(count: number): Task[] {
    const pool = [...this.tasks];
    const out: Task[] = [];
    while (out.length < count) {
      if (pool.length === 0) pool.push(...this.tasks);
      const w = pool.map((t) => this.signalOf(t.id));
      const total = w.reduce((a, b) => a + b, 0);
      let r = this.rand() * total;
      let i = 0;
      while (i < pool.length - 1 && r >= w[i]) r -= w[i++];
      out.push(pool.splice(i, 1)[0]);
    }
    return out;
  }
}
