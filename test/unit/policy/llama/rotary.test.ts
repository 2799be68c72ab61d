import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { selectBackend } from '../../../../policy/index.ts';
import {
  applyRotary,
  applyRotaryByProduct,
  rotaryFullTables,
  rotaryTables,
  rotateHalfMatrix,
  type RotaryOptions,
} from '../../../../policy/llama/rotary.ts';

const cases: Array<[string, RotaryOptions]> = [
  ['norm (adjacent pairs)', { ropeDim: 8, headDim: 8, base: 10000, type: 'norm', freqFactors: null }],
  ['neox (halves)', { ropeDim: 8, headDim: 8, base: 10000, type: 'neox', freqFactors: null }],
  ['partial neox with frequency factors', { ropeDim: 4, headDim: 8, base: 500, type: 'neox', freqFactors: Float32Array.from([1, 2.5]) }],
];

for (const [name, o] of cases) {
  test(`the rotation as a product equals the rotation by pairs, and −sin undoes it: ${name}`, async () => {
    assert.equal(await selectBackend('tensorflow'), 'tensorflow');
    const T = 5;
    const n = 3;
    const x = tf.randomNormal([T, n * o.headDim], 0, 1, 'float32', 4) as tf.Tensor2D;
    const pairs = rotaryTables(T, o);
    const full = rotaryFullTables(T, o);
    const p = rotateHalfMatrix(o);
    const byPairs = await applyRotary(x, n, pairs, o).array();
    const rotated = applyRotaryByProduct(x, n, { ...full, p }, o.headDim);
    const byProduct = (await rotated.array()) as number[][];
    byPairs.forEach((row, i) =>
      row.forEach((v, j) => assert.ok(Math.abs(v - byProduct[i][j]) < 1e-6, `[${i}][${j}]: ${v} vs ${byProduct[i][j]}`)),
    );
    const back = (await applyRotaryByProduct(
      rotated,
      n,
      { cos: full.cos, sin: tf.neg(full.sin) as tf.Tensor3D, p },
      o.headDim,
    ).array()) as number[][];
    const orig = (await x.array()) as number[][];
    orig.forEach((row, i) => row.forEach((v, j) => assert.ok(Math.abs(v - back[i][j]) < 1e-5)));
    tf.dispose([x, pairs.cos, pairs.sin, full.cos, full.sin, p, rotated]);
  });
}
