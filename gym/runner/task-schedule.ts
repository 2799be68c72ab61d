/**
 * Which train tasks each rollout batch takes: the train tasks in a seeded order, B at a time,
 * reshuffled after each pass, so every task comes up as often as the others and two seeds differ.
 */
import { mulberry32 } from '../../core/index.ts';
import type { Task } from '../tasks/task.ts';

/** A small seeded generator (core's mulberry32). */
export const seededRandom = mulberry32;

export class TaskSchedule {
  private queue: Task[] = [];
  private readonly rand: () => number;

  constructor(
    private readonly tasks: readonly Task[],
    seed: number,
  ) {
    if (tasks.length === 0) throw new Error('a schedule needs tasks');
    this.rand = seededRandom(seed * 7919 + 17);
  }

  /** The next `count` tasks (distinct when there are that many). */
  next(count: number): Task[] {
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
}
