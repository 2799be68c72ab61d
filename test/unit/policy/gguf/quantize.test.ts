import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dequantize } from '../../../../policy/gguf/dequantize.ts';
import { GgmlType, ggmlTypeLayout, tensorByteLength, type GgmlTypeName } from '../../../../policy/gguf/ggml-type.ts';
import { canQuantize, quantize } from '../../../../policy/gguf/quantize.ts';
import { TurnstreamError } from '../../../../core/errors.ts';

function gaussian(n: number, seed: number): Float32Array {
  let s = seed;
  const u = (): number => (s = (s * 16807) % 2147483647) / 2147483647;
  return Float32Array.from({ length: n }, () => Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u()));
}

// RMS error on unit Gaussians, per type: the bound each format allows with these quantizers
// (measured 2e-4, 1.7e-3, 5.4e-3, 0.086, 0.079, 0.043, 0.038, 0.33, 0.16, 0.079, 0.038, 0.019).
const RMS_BOUND: Array<[GgmlTypeName, number]> = [
  ['F16', 0.0005],
  ['BF16', 0.004],
  ['Q8_0', 0.008],
  ['Q4_0', 0.11],
  ['Q4_1', 0.1],
  ['Q5_0', 0.055],
  ['Q5_1', 0.05],
  ['Q2_K', 0.4],
  ['Q3_K', 0.2],
  ['Q4_K', 0.1],
  ['Q5_K', 0.05],
  ['Q6_K', 0.025],
];

for (const [name, bound] of RMS_BOUND) {
  test(`${name}: quantize → dequantize stays within the format's error (rms < ${bound})`, () => {
    const type = GgmlType[name];
    const x = gaussian(256 * 32, 7);
    const bytes = quantize(type, x);
    assert.equal(bytes.byteLength, tensorByteLength(type, [x.length]));
    const y = dequantize(type, bytes, x.length);
    let se = 0;
    for (let i = 0; i < x.length; i++) se += (x[i] - y[i]) ** 2;
    const rms = Math.sqrt(se / x.length);
    assert.ok(rms < bound, `rms ${rms}`);
    assert.ok(rms > 0 || name === 'F16', 'a lossy format that loses nothing is suspicious');
  });
}

test('legacy 32-blocks: every value is within half a step (plus fp16 rounding of the scale)', () => {
  const x = gaussian(32 * 64, 3);
  for (const [name, levels] of [
    ['Q4_0', 16],
    ['Q4_1', 15],
    ['Q5_0', 32],
    ['Q5_1', 31],
    ['Q8_0', 254],
  ] as const) {
    const y = dequantize(GgmlType[name], quantize(GgmlType[name], x), x.length);
    for (let b = 0; b < x.length; b += 32) {
      const block = x.subarray(b, b + 32);
      const span = Math.max(...block) - Math.min(...block, 0) + Math.max(...block.map(Math.abs));
      for (let j = 0; j < 32; j++) {
        assert.ok(Math.abs(x[b + j] - y[b + j]) <= span / levels + 1e-3 * span, `${name} element ${b + j}`);
      }
    }
  }
});

test('exact values survive: zeros, and a block that is already on the grid', () => {
  for (const name of ['Q4_0', 'Q4_1', 'Q8_0', 'Q4_K', 'Q6_K', 'Q2_K', 'Q3_K', 'Q5_K'] as const) {
    const n = ggmlTypeLayout(GgmlType[name])!.blockSize;
    assert.deepEqual(
      [...dequantize(GgmlType[name], quantize(GgmlType[name], new Float32Array(n)), n)].map(Math.abs),
      new Array(n).fill(0),
      name,
    );
  }
  const grid = Float32Array.from({ length: 32 }, (_, j) => (j % 16) - 8); // q − 8 with d = 1: Q4_0 represents it exactly
  assert.deepEqual([...dequantize(GgmlType.Q4_0, quantize(GgmlType.Q4_0, grid), 32)], [...grid]);
  const bytes = Float32Array.from({ length: 32 }, (_, j) => (j === 0 ? 127 : j - 16)); // amax 127: Q8_0's d = 1
  assert.deepEqual([...dequantize(GgmlType.Q8_0, quantize(GgmlType.Q8_0, bytes), 32)], [...bytes]);
});

test('types without a writer and partial blocks are refused', () => {
  assert.equal(canQuantize(20), false);
  assert.throws(
    () => quantize(20, new Float32Array(32)),
    (e: unknown) => e instanceof TurnstreamError && e.code === 'TS_ERR_INVALID_INPUT',
  );
  assert.throws(() => quantize(GgmlType.Q4_K, new Float32Array(32)), /whole Q4_K blocks of 256/);
});
