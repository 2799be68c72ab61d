import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OffsetTracker } from '../../../streams/offset-tracker.ts';

describe('OffsetTracker', () => {
  it('knows the offsets it saw after their transaction committed, so a fetch again from an older committed offset is skipped', () => {
    const t = new OffsetTracker<string>();
    for (const o of [5n, 6n, 7n]) t.add(o);
    for (const o of [5n, 6n, 7n]) t.complete(o, [`out ${o}`]);
    t.drop(3); // their transaction committed
    assert.equal(t.size, 0);
    assert.equal(t.seen(5n), true, 'no longer in flight, but seen: the group may fetch it again from an offset committed before');
    assert.equal(t.seen(7n), true);
    assert.equal(t.seen(8n), false, 'the next record is new');
    t.add(8n);
    assert.equal(t.seen(8n), true);
  });

  it('hands back only the finished prefix, outputs in offset order', () => {
    const t = new OffsetTracker<string>();
    for (const o of [10n, 11n, 12n, 13n]) t.add(o);
    t.complete(11n, ['b']);
    assert.equal(t.peekCommittable(), null, 'offset 10 is not finished: nothing can commit');
    t.complete(10n, ['a1', 'a2']);
    t.complete(13n, ['d']);
    const c = t.peekCommittable();
    assert.deepEqual(c, { count: 2, nextOffset: 12n, outputs: ['a1', 'a2', 'b'] });
    t.drop(2);
    assert.equal(t.size, 2);
    t.complete(12n, []);
    assert.deepEqual(t.peekCommittable(), { count: 2, nextOffset: 14n, outputs: ['d'] });
  });

  it('hands back at most `max` records of the finished prefix, and says whether anything can commit', () => {
    const t = new OffsetTracker<string>();
    for (const o of [0n, 1n, 2n]) t.add(o);
    assert.equal(t.committable, false);
    t.complete(1n, ['b']);
    assert.equal(t.committable, false, 'offset 0 is not finished');
    t.complete(0n, ['a']);
    t.complete(2n, ['c']);
    assert.equal(t.committable, true);
    assert.deepEqual(t.peekCommittable(2), { count: 2, nextOffset: 2n, outputs: ['a', 'b'] });
    t.drop(2);
    assert.deepEqual(t.peekCommittable(2), { count: 1, nextOffset: 3n, outputs: ['c'] });
  });

  it('never splits a unit (a batch handler call): whole units up to `max`, the first however large, none half done', () => {
    const t = new OffsetTracker<string>();
    // Units: [0, 1, 2], [3], [4, 5].
    for (const [o, end] of [
      [0n, false],
      [1n, false],
      [2n, true],
      [3n, true],
      [4n, false],
      [5n, true],
    ] as const)
      t.add(o, end);
    t.complete(0n, []);
    t.complete(1n, []);
    assert.equal(t.peekCommittable(), null, 'offset 2 of the first unit is not finished');
    t.complete(2n, ['u1']);
    t.complete(3n, ['u2']);
    t.complete(4n, ['u3a']);
    assert.deepEqual(t.peekCommittable(), { count: 4, nextOffset: 4n, outputs: ['u1', 'u2'] }, 'the half-done last unit waits');
    assert.deepEqual(t.peekCommittable(2), { count: 3, nextOffset: 3n, outputs: ['u1'] }, 'the first unit whole, though over max');
    assert.deepEqual(t.peekCommittable(4), { count: 4, nextOffset: 4n, outputs: ['u1', 'u2'] });
    t.complete(5n, ['u3b']);
    t.drop(4);
    assert.deepEqual(t.peekCommittable(1), { count: 2, nextOffset: 6n, outputs: ['u3a', 'u3b'] });
  });

  it('refuses offsets that go backwards and ignores completions of unknown offsets', () => {
    const t = new OffsetTracker<string>();
    t.add(5n);
    assert.throws(() => t.add(5n));
    t.complete(99n, ['x']);
    assert.equal(t.peekCommittable(), null);
  });
});
