import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HALF_TO_FLOAT, bfloat16ToFloat, floatToHalf, roundToHalf } from '../../../../policy/gguf/half.ts';

test('fp16 bit patterns decode to their IEEE values', () => {
  assert.equal(HALF_TO_FLOAT[0x3c00], 1);
  assert.equal(HALF_TO_FLOAT[0xc000], -2);
  assert.equal(HALF_TO_FLOAT[0x7bff], 65504); // largest finite
  assert.equal(HALF_TO_FLOAT[0x0001], 2 ** -24); // smallest subnormal
  assert.equal(HALF_TO_FLOAT[0x0400], 2 ** -14); // smallest normal
  assert.equal(HALF_TO_FLOAT[0x3555], 0.333251953125);
  assert.equal(HALF_TO_FLOAT[0x7c00], Infinity);
  assert.equal(HALF_TO_FLOAT[0xfc00], -Infinity);
  assert.ok(Number.isNaN(HALF_TO_FLOAT[0x7e00]));
  assert.ok(Object.is(HALF_TO_FLOAT[0x8000], -0));
});

test('floatToHalf inverts the table for every finite half and rounds to nearest even', () => {
  for (let h = 0; h < 0x10000; h++) {
    if ((h & 0x7c00) === 0x7c00) continue; // inf / NaN
    assert.equal(floatToHalf(HALF_TO_FLOAT[h]), h, `0x${h.toString(16)}`);
  }
  // 1 + 2^-11 lies halfway between 1 and the next half (1 + 2^-10): ties go to the even mantissa.
  assert.equal(floatToHalf(1 + 2 ** -11), 0x3c00);
  assert.equal(floatToHalf(1 + 3 * 2 ** -11), 0x3c02);
  assert.equal(floatToHalf(1 + 2 ** -11 + 2 ** -20), 0x3c01);
  assert.equal(floatToHalf(65520), 0x7c00); // rounds past the largest finite half
  assert.equal(floatToHalf(1e-9), 0); // below half the smallest subnormal
  assert.equal(floatToHalf(3 * 2 ** -26), 0x0001); // 0.75 of the smallest subnormal rounds up
  assert.equal(floatToHalf(NaN) & 0x7e00, 0x7e00);
  assert.equal(roundToHalf(0.1), 0.0999755859375);
});

test('bfloat16 is the top half of a float32', () => {
  assert.equal(bfloat16ToFloat(0x3f80), 1);
  assert.equal(bfloat16ToFloat(0xc040), -3);
  assert.equal(bfloat16ToFloat(0x4049), 3.140625);
});
