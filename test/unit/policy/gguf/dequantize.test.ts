// Hand-built blocks whose values are worked out from the block layouts of llama.cpp's
// ggml-common.h / ggml-quants.c (dequantize_row_*). dequantize-vs-llama-cpp.test.ts checks the
// same decoders against llama.cpp itself, bit for bit.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canDequantize, dequantize } from '../../../../policy/gguf/dequantize.ts';
import { GgmlType } from '../../../../policy/gguf/ggml-type.ts';
import { TurnstreamError } from '../../../../core/errors.ts';

/** Little-endian bytes of fp16 bit patterns. */
const halfBytes = (...bits: number[]): number[] => bits.flatMap((h) => [h & 0xff, h >> 8]);
const block = (...parts: Array<number | number[]>): Uint8Array => new Uint8Array(parts.flat());
const range = (n: number, f: (i: number) => number): number[] => Array.from({ length: n }, (_, i) => f(i));
const fill = (n: number, value: number): number[] => range(n, () => value);
const ONE = 0x3c00;
const HALF = 0x3800;
const QUARTER = 0x3400;
const EIGHTH = 0x3000;
const TWO = 0x4000;
const MINUS_ONE = 0xbc00;

test('F16 and BF16 decode element by element', () => {
  assert.deepEqual([...dequantize(GgmlType.F16, block(halfBytes(ONE, 0xc000, 0x7bff, 0x0001)), 4)], [1, -2, 65504, 2 ** -24]);
  assert.deepEqual([...dequantize(GgmlType.BF16, block([0x80, 0x3f, 0x40, 0xc0]), 2)], [1, -3]);
});

test('F32 data is copied, whatever its alignment in the buffer', () => {
  const src = new Uint8Array(13);
  new DataView(src.buffer).setFloat32(1, 1.5, true);
  new DataView(src.buffer).setFloat32(5, -7, true);
  new DataView(src.buffer).setFloat32(9, 1e-30, true);
  assert.deepEqual([...dequantize(GgmlType.F32, src.subarray(1), 3)], [1.5, -7, Math.fround(1e-30)]);
});

test('Q4_0: d·(q − 8); low nibbles are elements 0..15, high nibbles 16..31', () => {
  const v = dequantize(
    GgmlType.Q4_0,
    block(
      halfBytes(HALF),
      range(16, (j) => j | ((15 - j) << 4)),
    ),
    32,
  );
  assert.deepEqual(
    [...v.subarray(0, 16)],
    range(16, (j) => (j - 8) * 0.5),
  );
  assert.deepEqual(
    [...v.subarray(16)],
    range(16, (j) => (7 - j) * 0.5),
  );
  assert.equal(v[0], -4);
  assert.equal(v[16], 3.5);
});

test('Q4_1: d·q + m', () => {
  const v = dequantize(
    GgmlType.Q4_1,
    block(
      halfBytes(QUARTER, MINUS_ONE),
      range(16, (j) => j | ((15 - j) << 4)),
    ),
    32,
  );
  assert.deepEqual(
    [...v.subarray(0, 16)],
    range(16, (j) => j * 0.25 - 1),
  );
  assert.deepEqual(
    [...v.subarray(16)],
    range(16, (j) => (15 - j) * 0.25 - 1),
  );
  assert.equal(v[15], 2.75);
});

test('Q5_0: bit j of qh is element j’s fifth bit; d·(q − 16)', () => {
  // qh = 0xffff0000: elements 16..31 have the fifth bit, 0..15 do not.
  const v = dequantize(
    GgmlType.Q5_0,
    block(
      halfBytes(ONE),
      [0, 0, 0xff, 0xff],
      range(16, (j) => j | (j << 4)),
    ),
    32,
  );
  assert.deepEqual(
    [...v.subarray(0, 16)],
    range(16, (j) => j - 16),
  );
  assert.deepEqual(
    [...v.subarray(16)],
    range(16, (j) => j),
  );
});

test('Q5_1: d·q + m with the fifth bit from qh', () => {
  // qh = 0x0000ffff: elements 0..15 have the fifth bit. Low nibbles 1, high nibbles 2.
  const v = dequantize(GgmlType.Q5_1, block(halfBytes(HALF, TWO), [0xff, 0xff, 0, 0], fill(16, 0x21)), 32);
  assert.deepEqual([...v], [...fill(16, 17 * 0.5 + 2), ...fill(16, 2 * 0.5 + 2)]);
});

test('Q8_0: d·q with signed bytes', () => {
  const v = dequantize(
    GgmlType.Q8_0,
    block(
      halfBytes(EIGHTH),
      range(32, (j) => (j - 16) & 0xff),
    ),
    32,
  );
  assert.deepEqual(
    [...v],
    range(32, (j) => (j - 16) * 0.125),
  );
});

test('Q2_K: 16 sub-blocks of 16, 4-bit scale and min per sub-block', () => {
  // scales[k] = scale (k mod 4) + 1, min 2; every qs byte 0b11_10_01_00 so the quant taken with
  // shift 2j is j. Element 128h + 32j + 16g + l is in sub-block 8h + 2j + g: value = scale·j − 0.5·2.
  const scales = range(16, (k) => ((k % 4) + 1) | (2 << 4));
  const v = dequantize(GgmlType.Q2_K, block(scales, fill(64, 0xe4), halfBytes(ONE, HALF)), 256);
  assert.equal(v[0], -1);
  assert.equal(v[16], -1);
  assert.equal(v[32], 2); // sub-block 2: 3·1 − 1
  assert.equal(v[48], 3); // sub-block 3: 4·1 − 1
  assert.equal(v[64], 1); // sub-block 4: 1·2 − 1
  assert.equal(v[96], 8); // sub-block 6: 3·3 − 1
  assert.equal(v[128], -1); // sub-block 8: 1·0 − 1
  assert.equal(v[255], 11); // sub-block 15: 4·3 − 1
});

test('Q3_K: sixteen 6-bit scales (offset 32), 2 low bits in qs, the third bit in hmask', () => {
  // Scale bytes: 0x21 ×4, 0x43 ×4, 0xe4 ×4 unpack to scales −31 (0..3), −13 (4..7), 2 (8..11), 20 (12..15).
  // qs bytes 0xe4: the 2-bit quant is j. hmask all set except hmask[0]: its elements subtract 4.
  const hmask = [0, ...fill(31, 0xff)];
  const v = dequantize(
    GgmlType.Q3_K,
    block(hmask, fill(64, 0xe4), [0x21, 0x21, 0x21, 0x21, 0x43, 0x43, 0x43, 0x43, 0xe4, 0xe4, 0xe4, 0xe4], halfBytes(HALF)),
    256,
  );
  assert.equal(v[0], 62); // 0.5·−31·(0 − 4)
  assert.equal(v[1], -0);
  assert.equal(v[32], 46.5); // 0.5·−31·(1 − 4)
  assert.equal(v[48], -15.5); // hmask[16] set: 0.5·−31·1
  assert.equal(v[64], 13); // sub-block 4: 0.5·−13·(2 − 4)
  assert.equal(v[128], -4); // sub-block 8: 0.5·2·(0 − 4)
  assert.equal(v[129], 0);
  assert.equal(v[224], -10); // sub-block 14: 0.5·20·(3 − 4)
  assert.equal(v[255], 30); // sub-block 15: 0.5·20·3
});

/** Sub-block k of 32 values holds expected[k] throughout. */
function subBlocksOf32(v: Float32Array, expected: number[]): void {
  for (const [sub, value] of expected.entries())
    assert.deepEqual([...v.subarray(32 * sub, 32 * sub + 32)], fill(32, value), `sub-block ${sub}`);
}

// Scale bytes for Q4_K/Q5_K: sub-blocks 0..3 get scale 1, min 2; 4..7 get scale 3 | 1<<4 = 19, min 5 | 2<<4 = 37.
const K4_SCALES = [0x41, 0x41, 0x41, 0x41, 0x82, 0x82, 0x82, 0x82, 0x53, 0x53, 0x53, 0x53];

test('Q4_K: 8 sub-blocks of 32, 6-bit scales and mins; chunk c holds sub-blocks 2c (low nibbles) and 2c + 1 (high)', () => {
  const v = dequantize(GgmlType.Q4_K, block(halfBytes(ONE, HALF), K4_SCALES, fill(128, 0x7a)), 256);
  const expected = [9, 6, 9, 6, 171.5, 114.5, 171.5, 114.5]; // 1·10 − 0.5·2, 1·7 − 1, 19·10 − 0.5·37, 19·7 − 18.5
  subBlocksOf32(v, expected);
});

test('Q5_K: as Q4_K, plus a fifth bit per value from qh', () => {
  // qh bytes 0b0101: bit 0 (chunk 0, low) and bit 2 (chunk 1, low) are set.
  const v = dequantize(GgmlType.Q5_K, block(halfBytes(ONE, HALF), K4_SCALES, fill(32, 5), fill(128, 0x7a)), 256);
  const expected = [25, 6, 25, 6, 171.5, 114.5, 171.5, 114.5]; // 1·(10 + 16) − 1, …
  subBlocksOf32(v, expected);
});

test('Q6_K: low 4 bits in ql, high 2 bits in qh, int8 scale per 16, d·sc·(q − 32)', () => {
  // ql bytes 0x21, qh bytes 0xe4, scales[k] = k + 1, d = 0.5. Within each half of 128:
  // value l: q = 1 | 0<<4 = 1; l + 32: 1 | 1<<4 = 17; l + 64: 2 | 2<<4 = 34; l + 96: 2 | 3<<4 = 50.
  const v = dequantize(
    GgmlType.Q6_K,
    block(
      fill(128, 0x21),
      fill(64, 0xe4),
      range(16, (k) => k + 1),
      halfBytes(HALF),
    ),
    256,
  );
  assert.equal(v[0], -15.5); // 0.5·1·(1 − 32)
  assert.equal(v[16], -31); // scale 2
  assert.equal(v[32], -22.5); // scale 3: 0.5·3·(17 − 32)
  assert.equal(v[64], 5); // scale 5: 0.5·5·(34 − 32)
  assert.equal(v[96], 63); // scale 7: 0.5·7·(50 − 32)
  assert.equal(v[128], -139.5); // second half, scale 9
  assert.equal(v[255], 144); // scale 16: 0.5·16·18
});

test('several blocks decode one after the other', () => {
  const two = block(halfBytes(ONE), fill(32, 1), halfBytes(TWO), fill(32, 0xff));
  assert.deepEqual([...dequantize(GgmlType.Q8_0, two, 64)], [...fill(32, 1), ...fill(32, -2)]);
});

test('unknown types, partial blocks and short data are refused with coded errors', () => {
  assert.equal(canDequantize(20), false); // IQ4_NL
  assert.throws(
    () => dequantize(20, new Uint8Array(18), 32),
    (e: unknown) => e instanceof TurnstreamError && e.code === 'TS_ERR_INVALID_INPUT',
  );
  assert.throws(
    () => dequantize(GgmlType.Q4_0, new Uint8Array(18), 16),
    (e: unknown) => e instanceof TurnstreamError && e.code === 'TS_ERR_INVALID_INPUT',
  );
  assert.throws(
    () => dequantize(GgmlType.Q4_0, new Uint8Array(17), 32),
    (e: unknown) => e instanceof TurnstreamError && e.code === 'TS_ERR_CORRUPT_WEIGHTS',
  );
});
