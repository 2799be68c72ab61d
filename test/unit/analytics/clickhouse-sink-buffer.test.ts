import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Column } from '../../../warehouse/index.ts';
import { ErrorCodes, TurnstreamError } from '../../../core/errors.ts';
import { RowBuffer, type EncodedRows } from '../../../processors/clickhouse-sink/row-buffer.ts';

const ID: Column[] = [{ name: 'id', type: 'String' }];

/** The ids of a table's encoded rows (one short String column: a length byte, then the bytes). */
function ids(part: EncodedRows | undefined): string[] {
  const out: string[] = [];
  const b = Buffer.concat(part?.chunks ?? []);
  for (let at = 0; at < b.length; at += 1 + b[at]!) out.push(b.toString('utf8', at + 1, at + 1 + b[at]!));
  assert.equal(out.length, part?.rows ?? 0, 'the row count matches the encoded rows');
  return out;
}

function buffer(): RowBuffer {
  const b = new RowBuffer();
  b.setColumns('turns', ID);
  b.setColumns('pairs', ID);
  return b;
}

describe('clickhouse sink row buffer', () => {
  it('drains every table at once and starts empty again', () => {
    const b = buffer();
    b.add('turns', { id: 'a' });
    b.add('pairs', { id: 'p' });
    b.add('turns', { id: 'b' });
    assert.equal(b.size, 3);
    const d = b.drain();
    assert.equal(d.count, 3);
    assert.deepEqual(ids(d.tables.get('turns')), ['a', 'b']);
    assert.deepEqual(ids(d.tables.get('pairs')), ['p']);
    assert.equal(b.size, 0);
    assert.equal(b.drain().count, 0);
  });

  it('puts a failed batch back in front of newer rows, without the tables already stored', () => {
    const b = buffer();
    b.add('turns', { id: 'a' });
    b.add('pairs', { id: 'p' });
    const failed = b.drain();
    // The pairs insert succeeded before the turns insert failed.
    failed.tables.set('pairs', { chunks: [], rows: 0 });
    failed.count -= 1;
    b.add('turns', { id: 'b' });
    b.restore(failed);
    assert.equal(b.size, 2);
    const d = b.drain();
    assert.deepEqual(ids(d.tables.get('turns')), ['a', 'b']);
    assert.equal(d.tables.has('pairs'), false);
    assert.equal(d.count, 2);
  });

  it('refuses a row that does not fit its table, or a table without columns, and keeps the others', () => {
    const b = buffer();
    b.add('turns', { id: 'a' });
    const invalid = (err: unknown) => err instanceof TurnstreamError && err.code === ErrorCodes.INVALID_INPUT;
    assert.throws(() => b.add('turns', { id: 7 }), invalid);
    assert.throws(() => b.add('samples', { id: 's' }), invalid);
    assert.equal(b.size, 1);
    assert.deepEqual(ids(b.drain().tables.get('turns')), ['a']);
  });
});
