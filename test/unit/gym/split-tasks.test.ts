/** Train, dev and test tasks: a file's own `split` kept (`eval` read as test), the rest split 3 in 8 (a third of it dev), the same every time. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { splitTasks } from '../../../gym/tasks/split-tasks.ts';
import type { Task, TaskSplit } from '../../../gym/tasks/task.ts';

const task = (id: string, split?: TaskSplit): Task => ({
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
  it('holds out round(3/8 × n) of a file without split, spread evenly over its order (every third to dev), the same on every call', () => {
    const tasks = Array.from({ length: 24 }, (_, i) => task(`t${i}`));
    const a = splitTasks(tasks);
    assert.equal(a.train.length, 15);
    assert.deepEqual(ids(a.dev), ['t1', 't9', 't17']);
    assert.deepEqual(ids(a.test), ['t4', 't6', 't12', 't14', 't20', 't22']);
    // Same result for a copy of the suite read again, and disjoint, complete sides.
    const b = splitTasks(tasks.map((t) => ({ ...t })));
    assert.deepEqual([ids(b.dev), ids(b.test)], [ids(a.dev), ids(a.test)]);
    assert.deepEqual([...ids(a.train), ...ids(a.dev), ...ids(a.test)].sort(), ids(tasks).sort());
    // Eight tasks: 3 held out, one of them dev.
    const eight = splitTasks(tasks.slice(0, 8));
    assert.deepEqual([eight.dev.length, eight.test.length], [1, 2]);
  });

  it('keeps the split a file names, and splits only the tasks that name none', () => {
    const tasks = [task('a', 'train'), task('b', 'test'), task('g', 'dev'), task('c'), task('d'), task('e'), task('f')];
    const s = splitTasks(tasks);
    assert.ok(ids(s.train).includes('a'));
    assert.ok(ids(s.test).includes('b'));
    assert.deepEqual(ids(s.dev), ['g'], 'two held out of four open tasks: both to test');
    assert.equal(s.test.filter((t) => t.split === undefined).length, 2, 'round(3/8 × 4) of the four open tasks');
    assert.equal(s.train.length + s.dev.length + s.test.length, tasks.length);
  });

  it('a lone task without split is trained on; two give one to each side; a share outside (0, 1) is refused', () => {
    assert.deepEqual(ids(splitTasks([task('x')]).train), ['x']);
    const two = splitTasks([task('x'), task('y')]);
    assert.equal(two.train.length, 1);
    assert.equal(two.test.length, 1);
    assert.throws(() => splitTasks([task('x')], { heldOut: 1 }), { code: 'TS_ERR_INVALID_INPUT', param: 'heldOut' });
    const half = splitTasks(
      Array.from({ length: 10 }, (_, i) => task(`t${i}`)),
      { heldOut: 0.5 },
    );
    assert.equal(half.dev.length + half.test.length, 5);
  });
});
