/** Train and held-out tasks: a file's own `split` kept, the rest split 3 in 8, the same every time. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { splitTasks } from '../../../gym/tasks/split-tasks.ts';
import type { Task } from '../../../gym/tasks/task.ts';

const task = (id: string, split?: 'train' | 'eval'): Task => ({
  id,
  instruction: `do ${id}`,
  files: {},
  tools: [],
  verify: { answer: { max_words: 3 } },
  maxTurns: 6,
  timeoutS: 60,
  ...(split ? { split } : {}),
});
const ids = (ts: Task[]): string[] => ts.map((t) => t.id);

describe('splitTasks', () => {
  it('holds out round(3/8 × n) of a file without split, spread evenly over its order, the same on every call', () => {
    const tasks = Array.from({ length: 24 }, (_, i) => task(`t${i}`));
    const a = splitTasks(tasks);
    assert.equal(a.eval.length, 9);
    assert.equal(a.train.length, 15);
    assert.deepEqual(ids(a.eval), ['t1', 't4', 't6', 't9', 't12', 't14', 't17', 't20', 't22']);
    // Same result for a copy of the suite read again, and disjoint, complete sides.
    assert.deepEqual(ids(splitTasks(tasks.map((t) => ({ ...t }))).eval), ids(a.eval));
    assert.deepEqual([...ids(a.train), ...ids(a.eval)].sort(), ids(tasks).sort());
    // Eight tasks: 3 held out.
    assert.equal(splitTasks(tasks.slice(0, 8)).eval.length, 3);
  });

  it('keeps the split a file names, and splits only the tasks that name none', () => {
    const tasks = [task('a', 'train'), task('b', 'eval'), task('c'), task('d'), task('e'), task('f')];
    const s = splitTasks(tasks);
    assert.ok(ids(s.train).includes('a'));
    assert.ok(ids(s.eval).includes('b'));
    assert.equal(s.eval.filter((t) => t.split === undefined).length, 2, 'round(3/8 × 4) of the four open tasks');
    assert.equal(s.train.length + s.eval.length, tasks.length);
  });

  it('a lone task without split is trained on; two give one to each side; a share outside (0, 1) is refused', () => {
    assert.deepEqual(ids(splitTasks([task('x')]).train), ['x']);
    const two = splitTasks([task('x'), task('y')]);
    assert.equal(two.train.length, 1);
    assert.equal(two.eval.length, 1);
    assert.throws(() => splitTasks([task('x')], { heldOut: 1 }), { code: 'TS_ERR_INVALID_INPUT', param: 'heldOut' });
    assert.deepEqual(
      splitTasks(
        Array.from({ length: 10 }, (_, i) => task(`t${i}`)),
        { heldOut: 0.5 },
      ).eval.length,
      5,
    );
  });
});
