/** Which train tasks a batch takes: each in turn (uniform), or by the chance that their next group carries a signal. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { signalProbability, TaskSchedule } from '../../../../gym/runner/task-schedule.ts';
import type { Task } from '../../../../gym/tasks/task.ts';

const task = (id: string): Task => ({
  id,
  instruction: id,
  files: {},
  tools: [],
  verify: { answer: { max_words: 1 } },
  maxTurns: 1,
  timeoutS: 60,
});
const tasks = ['a', 'b', 'c', 'd', 'e', 'f'].map(task);

describe('signalProbability', () => {
  it('is 1 − P(all pass) − P(all fail) under a beta-binomial, from the closed forms', () => {
    // Beta(1, 1): each count k of n equally likely, so P(all pass) = P(all fail) = 1/(n + 1).
    assert.ok(Math.abs(signalProbability(1, 1, 8) - (1 - 2 / 9)) < 1e-12);
    // Beta(1, 9) (one group of 8 all failed): P(all fail) = 9/17, P(all pass) = 8!·9!/17!.
    const allPass = (40320 * 362880) / 355687428096000;
    assert.ok(Math.abs(signalProbability(1, 9, 8) - (1 - 9 / 17 - allPass)) < 1e-12);
    assert.ok(signalProbability(1, 25, 8) < signalProbability(1, 9, 8), 'more failures, less chance of a signal');
    assert.ok(signalProbability(5, 5, 8) > signalProbability(1, 1, 8), 'a task solved half the time is the likeliest to give one');
  });
});

describe('TaskSchedule', () => {
  it('uniform: every task once per pass, seeded, distinct within a batch', () => {
    const s = new TaskSchedule(tasks, 1);
    const seen = [...s.next(3), ...s.next(3)].map((t) => t.id);
    assert.deepEqual([...seen].sort(), ['a', 'b', 'c', 'd', 'e', 'f']);
    const again = new TaskSchedule(tasks, 1);
    assert.deepEqual(
      [...again.next(3), ...again.next(3)].map((t) => t.id),
      seen,
      'the same seed, the same order',
    );
  });

  it('signal: tasks whose recent groups were all-equal come up less often; a task that starts passing sometimes comes back', () => {
    const s = new TaskSchedule(tasks, 2, { sampling: 'signal', n: 8 });
    for (const id of ['a', 'b', 'c', 'd']) for (let k = 0; k < 3; k++) s.observe(id, 0, 8);
    s.observe('e', 3, 8);
    const counts = new Map<string, number>();
    for (let i = 0; i < 400; i++) for (const t of s.next(2)) counts.set(t.id, (counts.get(t.id) ?? 0) + 1);
    const n = (id: string) => counts.get(id) ?? 0;
    assert.ok(n('e') > 3 * n('a'), `e (3 of 8) drawn ${n('e')} times, a (0 of 24) ${n('a')}`);
    assert.ok(n('f') > 2 * n('a'), `f (never tried) drawn ${n('f')} times`);
    assert.ok(n('a') > 0, 'a task that failed is still tried now and then');
    // Only the last three groups count: a task that passes again is drawn again.
    s.observe('a', 4, 8);
    assert.ok(s.signalOf('a') > s.signalOf('b'));
  });

  it('signal: a batch holds distinct tasks while there are enough', () => {
    const s = new TaskSchedule(tasks, 3, { sampling: 'signal' });
    for (let i = 0; i < 50; i++) {
      const ids = s.next(4).map((t) => t.id);
      assert.equal(new Set(ids).size, 4);
    }
  });
});
