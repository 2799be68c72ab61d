import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RowBinaryEncoder, type Column, type Row } from '../../../warehouse/index.ts';
import { ErrorCodes, TurnstreamError } from '../../../core/errors.ts';

const B = Buffer.prototype;
/** The fixed-width types by their size in bytes, each with the Buffer method that reads one (little-endian). */
const FIXED: Array<[number, Record<string, (this: Buffer, at: number) => number | bigint>]> = [
  [1, { UInt8: B.readUInt8, Int8: B.readInt8 }],
  [2, { UInt16: B.readUInt16LE, Date: B.readUInt16LE, Int16: B.readInt16LE }],
  [4, { UInt32: B.readUInt32LE, DateTime: B.readUInt32LE, Int32: B.readInt32LE, Float32: B.readFloatLE }],
  [8, { UInt64: B.readBigUInt64LE, Int64: B.readBigInt64LE, Float64: B.readDoubleLE }],
];

/** Reads RowBinary back, independently of the encoder: LEB128 lengths, little-endian numbers. */
function decode(columns: readonly Column[], bytes: Buffer): Array<Record<string, string | number | bigint>> {
  const rows: Array<Record<string, string | number | bigint>> = [];
  let at = 0;
  while (at < bytes.length) {
    const row: Record<string, string | number | bigint> = {};
    for (const { name, type } of columns) {
      if (type === 'String') {
        let len = 0;
        for (let shift = 0; ; shift += 7) {
          const b = bytes[at++];
          if (b === undefined) throw new Error('truncated length');
          len += (b & 0x7f) * 2 ** shift;
          if (b < 0x80) break;
        }
        if (at + len > bytes.length) throw new Error('truncated string');
        row[name] = bytes.toString('utf8', at, at + len);
        at += len;
        continue;
      }
      const fixed = FIXED.find(([, readers]) => Object.hasOwn(readers, type));
      if (!fixed) throw new Error(type);
      const [size, readers] = fixed;
      row[name] = readers[type].call(bytes, at);
      at += size;
    }
    rows.push(row);
  }
  return rows;
}

const ALL: Column[] = [
  { name: 's', type: 'String' },
  { name: 'u8', type: 'UInt8' },
  { name: 'i8', type: 'Int8' },
  { name: 'u16', type: 'UInt16' },
  { name: 'i16', type: 'Int16' },
  { name: 'u32', type: 'UInt32' },
  { name: 'i32', type: 'Int32' },
  { name: 'u64', type: 'UInt64' },
  { name: 'i64', type: 'Int64' },
  { name: 'f32', type: 'Float32' },
  { name: 'f64', type: 'Float64' },
  { name: 'd', type: 'Date' },
  { name: 'dt', type: 'DateTime' },
];

const row = (over: Row = {}): Row => ({
  s: 'hello',
  u8: 255,
  i8: -128,
  u16: 65535,
  i16: -32768,
  u32: 4294967295,
  i32: -2147483648,
  u64: 1_764_000_000_123,
  i64: -5,
  f32: 1.5,
  f64: 0.1,
  d: 20_000,
  dt: 1_764_000_000,
  ...over,
});

const bytesOf = (e: RowBinaryEncoder): Buffer => Buffer.concat(e.take().chunks);

describe('RowBinary encoder', () => {
  it('writes every column type at the edges of its range, read back the same', () => {
    const e = new RowBinaryEncoder(ALL);
    e.add(row());
    e.add(row({ u64: '18446744073709551615', i64: '-9223372036854775808', u8: 0, s: '' }));
    assert.equal(e.rows, 2);
    const [a, b] = decode(ALL, bytesOf(e));
    assert.deepEqual(a, { ...row(), u64: 1_764_000_000_123n, i64: -5n });
    assert.equal(b!.u64, 2n ** 64n - 1n);
    assert.equal(b!.i64, -(2n ** 63n));
    assert.equal(b!.s, '');
    assert.equal(e.rows, 0, 'take starts over');
  });

  it('prefixes strings with their UTF-8 length, whatever the characters and at every varint size', () => {
    const cols: Column[] = [{ name: 's', type: 'String' }];
    const strings = [
      'a'.repeat(127),
      'a'.repeat(128),
      'é'.repeat(50), // 100 bytes: prefix size known from the length alone
      'é'.repeat(100), // 200 bytes: could be 1 or 2 prefix bytes
      '€'.repeat(16383 / 3), // 16,383 bytes
      '€'.repeat(5462), // 16,386 bytes
      '😀 lone \ud800 surrogate',
      'x'.repeat(300_000),
    ];
    const e = new RowBinaryEncoder(cols);
    for (const s of strings) e.add({ s });
    const back = decode(cols, bytesOf(e)).map((r) => r.s);
    assert.deepEqual(back, [...strings.slice(0, 6), '😀 lone \ufffd surrogate', strings[7]]);
  });

  it('refuses a row that does not fit, appending nothing of it', () => {
    const e = new RowBinaryEncoder(ALL);
    e.add(row({ s: 'first' }));
    const bad: Row[] = [
      row({ u32: -1 }),
      row({ u32: 2 ** 32 }),
      row({ u8: 256 }),
      row({ u64: -1 }),
      row({ u64: 1.5 }),
      row({ i64: 'x' }),
      row({ f64: 'NaN' }),
      row({ s: 5 }),
      (() => {
        const r = row();
        delete r.dt;
        return r;
      })(),
    ];
    for (const r of bad) {
      assert.throws(
        () => e.add(r),
        (err: unknown) => err instanceof TurnstreamError && err.code === ErrorCodes.INVALID_INPUT,
        JSON.stringify(r),
      );
    }
    e.add(row({ s: 'second' }));
    assert.equal(e.rows, 2);
    assert.deepEqual(
      decode(ALL, bytesOf(e)).map((r) => r.s),
      ['first', 'second'],
    );
  });

  it('keeps what was taken intact while it goes on encoding into the same memory', () => {
    const cols: Column[] = [
      { name: 'id', type: 'UInt32' },
      { name: 's', type: 'String' },
    ];
    const e = new RowBinaryEncoder(cols);
    const batches: Buffer[][] = [];
    let id = 0;
    for (let b = 0; b < 5; b++) {
      // Rows of all sizes: some batches fit in the chunk's tail, some need new chunks, one row is bigger than a chunk.
      for (let i = 0; i < 400; i++) e.add({ id: id++, s: 'y'.repeat((id * 7919) % (b === 3 ? 9000 : 700)) });
      if (b === 2) e.add({ id: id++, s: 'z'.repeat(3 << 20) });
      batches.push(e.take().chunks);
    }
    const ids = batches.flatMap((chunks) => decode(cols, Buffer.concat(chunks)).map((r) => r.id));
    assert.deepEqual(
      ids,
      Array.from({ length: id }, (_, i) => i),
    );
  });

  it('refuses a table with a column type it cannot write', () => {
    assert.throws(() => new RowBinaryEncoder([{ name: 'x', type: 'Array(String)' }]), /Array\(String\)/);
  });
});
