import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { counter } from '../../../core/metrics.ts';
import { Tally } from '../../../processors/run-stage.ts';

describe('stage tally', () => {
  it('adds what a call counted to each counter by labels, only when flushed', async () => {
    const a = counter('turnstream_test_tally_a_total', 'test', ['kind']);
    const b = counter('turnstream_test_tally_b_total', 'test', ['judge', 'score']);
    const t = new Tally();
    t.count(a, { kind: 'x' });
    t.count(a, { kind: 'x' });
    t.count(a, { kind: 'y' });
    t.count(b, { judge: 'j', score: '1' });
    const values = async (c: typeof a) => (await c.get()).values.map((v) => [v.labels, v.value]);
    assert.deepEqual(await values(a), [], 'nothing before the flush');
    t.flush();
    assert.deepEqual(await values(a), [
      [{ kind: 'x' }, 2],
      [{ kind: 'y' }, 1],
    ]);
    assert.deepEqual(await values(b), [[{ judge: 'j', score: '1' }, 1]]);
  });
});
