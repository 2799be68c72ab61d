import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backoffMs } from '../../../processors/clickhouse-sink/backoff.ts';
import { RowBuffer } from '../../../processors/clickhouse-sink/row-buffer.ts';

describe('clickhouse sink row buffer', () => {
  it('commits the offset after the last record a batch covers, per partition', () => {
    const b = new RowBuffer();
    b.add('turns', { turn_id: 'a' });
    b.cover('t', 0, '10');
    b.cover('t', 0, '11'); // a record that made no row (dead-lettered) still moves the offset
    b.add('turns', { turn_id: 'b' });
    b.cover('t', 1, '3');
    const d = b.drain();
    assert.equal(d.count, 2);
    assert.deepEqual(
      [...d.offsets],
      [
        ['t|0', 12n],
        ['t|1', 4n],
      ],
    );
    assert.equal(b.size, 0);
    assert.equal(b.pending, false);
  });

  it('puts a failed batch back in front of newer rows, keeping the highest offsets', () => {
    const b = new RowBuffer();
    b.add('turns', { turn_id: 'a' });
    b.cover('t', 0, '5');
    const failed = b.drain();
    b.add('turns', { turn_id: 'b' });
    b.cover('t', 0, '6');
    b.restore(failed);
    const d = b.drain();
    assert.deepEqual(d.rows.get('turns'), [{ turn_id: 'a' }, { turn_id: 'b' }]);
    assert.deepEqual([...d.offsets], [['t|0', 7n]]);
    assert.equal(d.count, 2);
  });

  it('backs off exponentially with jitter, never past the cap', () => {
    const mid = () => 0.5;
    assert.deepEqual(
      [1, 2, 3, 4, 5, 10].map((a) => backoffMs(a, 250, 5000, mid)),
      [250, 500, 1000, 2000, 4000, 5000],
    );
    assert.equal(
      backoffMs(10, 250, 5000, () => 1),
      5000,
    );
    assert.equal(
      backoffMs(1, 250, 5000, () => 0),
      200,
    );
  });
});
