import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { dequantize } from '../../../../policy/gguf/dequantize.ts';
import { GgmlType, type GgmlTypeName } from '../../../../policy/gguf/ggml-type.ts';
import { openGguf } from '../../../../policy/gguf/gguf-file.ts';
import { kv, writeGguf, type GgufKv } from '../../../../policy/gguf/gguf-writer.ts';
import { quantize } from '../../../../policy/gguf/quantize.ts';
import { readRawMetadata } from '../../../../policy/gguf/raw-metadata.ts';
import { TurnstreamError } from '../../../../core/errors.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ts-gguf-'));
});
after(() => rm(dir, { recursive: true, force: true }));

const values = (n: number, seed: number): Float32Array => {
  let s = seed;
  return Float32Array.from({ length: n }, () => ((s = (s * 16807) % 2147483647) / 2147483647) * 4 - 2);
};
const coded = (code: string) => (e: unknown) => e instanceof TurnstreamError && e.code === code;

const METADATA: GgufKv[] = [
  kv.string('general.architecture', 'llama'),
  kv.string('general.name', 'round trip ✓'),
  kv.u32('llama.block_count', 3),
  kv.i32('test.negative', -5),
  kv.u64('test.big', 2n ** 40n),
  kv.f32('test.eps', 1e-5),
  kv.bool('test.flag', true),
  { key: 'test.u8', type: 'u8', value: 200 },
  { key: 'test.i16', type: 'i16', value: -300 },
  { key: 'test.f64', type: 'f64', value: Math.PI },
  kv.strings('tokenizer.ggml.tokens', ['a', 'Ġb', '<|im_end|>', '']),
  kv.i32s('tokenizer.ggml.token_type', [1, 1, 3, 1]),
  kv.f32s('test.floats', [0.5, -1.25]),
  kv.u32s('test.ids', [7, 8, 9]),
];

test('metadata of every value type round-trips through node-llama-cpp’s reader', async () => {
  const path = join(dir, 'meta.gguf');
  await writeGguf(path, {
    metadata: METADATA,
    tensors: [{ name: 'x', dims: [4], type: GgmlType.F32, data: new Float32Array([1, 2, 3, 4]) }],
  });
  const f = await openGguf(path);
  try {
    const m = f.metadata as unknown as Record<string, Record<string, unknown>>;
    assert.equal(f.architecture, 'llama');
    assert.equal(m.general.name, 'round trip ✓');
    assert.equal(m.general.alignment, 32); // added by the writer
    assert.equal((m.llama as { block_count: number }).block_count, 3);
    assert.equal(m.test.negative, -5);
    assert.equal(Number(m.test.big), 2 ** 40);
    assert.equal(m.test.eps, Math.fround(1e-5));
    assert.equal(m.test.flag, true);
    assert.equal(m.test.u8, 200);
    assert.equal(m.test.i16, -300);
    assert.equal(m.test.f64, Math.PI);
    assert.deepEqual(m.test.floats, [0.5, -1.25]);
    assert.deepEqual(m.test.ids, [7, 8, 9]);
    const ggml = (m.tokenizer as { ggml: Record<string, unknown> }).ggml;
    assert.deepEqual(ggml.tokens, ['a', 'Ġb', '<|im_end|>', '']);
    assert.deepEqual(ggml.token_type, [1, 1, 3, 1]);
    assert.deepEqual([...(await f.readTensor('x'))], [1, 2, 3, 4]);
  } finally {
    await f.close();
  }
  const bytes = await readFile(path);
  assert.equal(bytes.toString('ascii', 0, 4), 'GGUF');
  assert.equal(bytes.readUInt32LE(4), 3);
  assert.equal(bytes.readBigUInt64LE(8), 1n); // tensors
  assert.equal(bytes.readBigUInt64LE(16), BigInt(METADATA.length + 1)); // key/values, general.alignment included
});

const WRITABLE: Array<[GgmlTypeName, number]> = [
  ['F32', 64],
  ['F16', 64],
  ['BF16', 64],
  ['Q8_0', 64],
  ['Q4_0', 64],
  ['Q4_1', 64],
  ['Q5_0', 64],
  ['Q5_1', 64],
  ['Q2_K', 256],
  ['Q3_K', 256],
  ['Q4_K', 256],
  ['Q5_K', 256],
  ['Q6_K', 256],
];

test('tensors of every writable type round-trip: dims, type, aligned offsets, and values as the format stores them', async () => {
  const path = join(dir, 'tensors.gguf');
  const data = new Map(WRITABLE.map(([name, ne0], i) => [name, values(ne0 * 3, i + 1)]));
  // An odd-sized F32 vector first, so every later tensor needs padding to stay aligned.
  const tensors = [
    { name: 'odd', dims: [3], type: GgmlType.F32, data: new Float32Array([1, 2, 3]) },
    ...WRITABLE.map(([name, ne0]) => ({ name: `t.${name}`, dims: [ne0, 3], type: GgmlType[name], data: data.get(name)! })),
  ];
  const written = await writeGguf(path, { metadata: [kv.string('general.architecture', 'llama')], tensors });
  assert.equal(written.bytes, (await readFile(path)).length);
  assert.match(written.sha256, /^[0-9a-f]{64}$/);
  const f = await openGguf(path);
  try {
    assert.deepEqual(
      f.tensors.map((t) => t.name),
      tensors.map((t) => t.name),
    );
    for (const [name, ne0] of WRITABLE) {
      const t = f.tensor(`t.${name}`);
      assert.deepEqual(t.dims, [ne0, 3]);
      assert.equal(t.typeName, name);
      assert.equal(t.fileOffset % 32, 0, `${name} offset aligned`);
      const x = data.get(name)!;
      const expected = name === 'F32' ? x : dequantize(GgmlType[name], quantize(GgmlType[name], x), x.length);
      assert.deepEqual(await f.readTensor(t.name), expected, name);
      assert.deepEqual(await f.readTensorBytes(t.name), name === 'F32' ? new Uint8Array(x.buffer) : quantize(GgmlType[name], x));
    }
    assert.deepEqual([...(await f.readTensor('odd'))], [1, 2, 3]);
    // Rows are read alone: row 1 of a [256, 3] Q4_K tensor is its second 256 values.
    const q4k = await f.readTensor('t.Q4_K');
    assert.deepEqual(await f.readTensorRows('t.Q4_K', 1, 2), q4k.subarray(256));
    assert.deepEqual(await f.readTensorRows('t.Q8_0', 2, 1), (await f.readTensor('t.Q8_0')).subarray(128));
    await assert.rejects(f.readTensorRows('t.Q8_0', 2, 2), coded('TS_ERR_INVALID_INPUT'));
  } finally {
    await f.close();
  }
});

test('tensor data given as functions is produced one tensor at a time, in file order', async () => {
  const log: string[] = [];
  const lazy = (name: string) => async () => {
    log.push(`start ${name}`);
    await new Promise((r) => setImmediate(r));
    log.push(`end ${name}`);
    return values(32, name.length);
  };
  await writeGguf(join(dir, 'lazy.gguf'), {
    metadata: [],
    tensors: ['a', 'bb', 'ccc'].map((name) => ({ name, dims: [32], type: GgmlType.Q8_0, data: lazy(name) })),
  });
  assert.deepEqual(log, ['start a', 'end a', 'start bb', 'end bb', 'start ccc', 'end ccc']);
});

test('bad input is refused with TS_ERR_INVALID_INPUT and leaves no file behind', async () => {
  const sub = await mkdtemp(join(dir, 'bad-'));
  const path = join(sub, 'bad.gguf');
  const t = { name: 'x', dims: [32], type: GgmlType.F32, data: new Float32Array(32) };
  const bad = [
    { metadata: [kv.u32('a', 1), kv.u32('a', 2)], tensors: [] },
    { metadata: [], tensors: [t, t] },
    { metadata: [{ key: 'a', type: 'u8', value: 300 } as GgufKv], tensors: [] },
    { metadata: [kv.u32('a', 1.5)], tensors: [] },
    { metadata: [], tensors: [{ ...t, data: new Float32Array(31) }] },
    { metadata: [], tensors: [{ ...t, type: GgmlType.Q4_K }] },
    { metadata: [], tensors: [{ ...t, dims: [32, 0] }] },
    { metadata: [], tensors: [t], alignment: 24 },
  ];
  for (const options of bad)
    await assert.rejects(writeGguf(path, options), coded('TS_ERR_INVALID_INPUT'), JSON.stringify(options.metadata));
  // A failure while writing data (the producer throws) removes the temporary file.
  const boom = { name: 'x', dims: [32], type: GgmlType.F32, data: () => Promise.reject(new Error('boom')) };
  await assert.rejects(writeGguf(path, { metadata: [], tensors: [boom] }), /boom/);
  assert.deepEqual(await readdir(sub), []);
});

test('openGguf: missing file → NOT_FOUND, not GGUF or truncated → CORRUPT_WEIGHTS, unknown tensor → NOT_FOUND', async () => {
  await assert.rejects(openGguf(join(dir, 'nope.gguf')), coded('TS_ERR_NOT_FOUND'));
  await writeFile(join(dir, 'junk.gguf'), 'this is not a gguf file at all, not even close');
  await assert.rejects(openGguf(join(dir, 'junk.gguf')), coded('TS_ERR_CORRUPT_WEIGHTS'));
  const path = join(dir, 'short.gguf');
  const written = await writeGguf(path, { metadata: [], tensors: [{ name: 'x', dims: [64], type: GgmlType.F32, data: values(64, 1) }] });
  const f = await openGguf(path);
  await assert.rejects(f.readTensor('y'), coded('TS_ERR_NOT_FOUND'));
  assert.throws(() => f.tensor('y'), coded('TS_ERR_NOT_FOUND'));
  await f.close();
  await truncate(path, written.bytes - 10);
  await assert.rejects(openGguf(path), coded('TS_ERR_CORRUPT_WEIGHTS'));
});

test('raw metadata copies every key/value verbatim into another file', async () => {
  const a = join(dir, 'raw-a.gguf');
  const b = join(dir, 'raw-b.gguf');
  await writeGguf(a, { metadata: METADATA, tensors: [] });
  const src = await openGguf(a);
  const raw = await readRawMetadata(src);
  assert.deepEqual(
    raw.map((e) => e.key),
    [...METADATA.map((e) => e.key), 'general.alignment'],
  );
  await writeGguf(b, { metadata: raw, tensors: [] });
  const copy = await openGguf(b);
  assert.deepEqual(copy.metadata, src.metadata);
  assert.equal(copy.metadataEnd, src.metadataEnd);
  assert.deepEqual(await readFile(b), await readFile(a)); // the same bytes, types included
  await src.close();
  await copy.close();
});
