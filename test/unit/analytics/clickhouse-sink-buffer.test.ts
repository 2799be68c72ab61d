import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RowBuffer } from '../../../processors/clickhouse-sink/row-buffer.ts';

describe('clickhouse sink row buffer', () => {
  it('drains every table at once and starts empty again', () => {
    const b = new RowBuffer();
    b.add('turns', { turn_id: 'a' });
    b.add('pairs', { pair_id: 'p' });
    b.add('turns', { turn_id: 'b' });
    const d = b.drain();
    assert.equal(d.count, 3);
    assert.deepEqual(d.rows.get('turns'), [{ turn_id: 'a' }, { turn_id: 'b' }]);
    assert.deepEqual(d.rows.get('pairs'), [{ pair_id: 'p' }]);
    assert.equal(b.size, 0);
    assert.equal(b.drain().count, 0);
  });

  it('puts a failed batch back in front of newer rows, without the tables already stored', () => {
    const b = new RowBuffer();
    b.add('turns', { turn_id: 'a' });
    b.add('pairs', { pair_id: 'p' });
    const failed = b.drain();
    // The pairs insert succeeded before the turns insert failed.
    failed.rows.set('pairs', []);
    failed.count -= 1;
    b.add('turns', { turn_id: 'b' });
    b.restore(failed);
    const d = b.drain();
    assert.deepEqual(d.rows.get('turns'), [{ turn_id: 'a' }, { turn_id: 'b' }]);
    assert.equal(d.rows.has('pairs'), false);
    assert.equal(d.count, 2);
  });
});
