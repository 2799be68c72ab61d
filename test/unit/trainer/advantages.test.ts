import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { binaryRlAdvantages, combinedAdvantages, opdAdvantages } from '../../../trainer/losses/advantages.ts';
import { arr, closeArray } from '../../support/tfjs-helpers.ts';

const mask = (): tf.Tensor2D =>
  tf.tensor2d([
    [1, 1, 0],
    [1, 1, 1],
  ]);

test('binary RL broadcasts the reward to every response token, unnormalized', () => {
  const a = tf.tidy(() => arr(binaryRlAdvantages([1, -1], mask())));
  assert.deepEqual(a, [1, 1, 0, -1, -1, -1]);
  const z = tf.tidy(() => arr(binaryRlAdvantages(tf.tensor1d([0, 0]), mask())));
  assert.ok(
    z.every((x) => x === 0),
    'a pair scored 0 gives no gradient',
  );
});

test('OPD advantage is teacher − old per token, masked tokens 0', () => {
  const a = tf.tidy(() =>
    arr(
      opdAdvantages(
        tf.tensor2d([
          [-1, -2, NaN],
          [-0.5, -3, -1],
        ]),
        tf.tensor2d([
          [-1.5, -1, -9],
          [-0.5, -1, -4],
        ]),
        mask(),
      ),
    ),
  );
  closeArray(a, [0.5, -1, 0, 0, -2, 3]);
});

const teacher = (): tf.Tensor2D => tf.tensor2d([[-1, -2]]);
const old = (): tf.Tensor2D => tf.tensor2d([[-1.5, -1]]);
const m1 = (): tf.Tensor2D => tf.tensor2d([[1, 1]]);

test('combined, hint + score: both terms', () => {
  closeArray(
    tf.tidy(() => arr(combinedAdvantages({ teacherLp: teacher(), oldLp: old(), reward: [1], mask: m1() }))),
    [1.5, 0],
  );
  closeArray(
    tf.tidy(() => arr(combinedAdvantages({ teacherLp: teacher(), oldLp: old(), reward: [1], wOpd: 2, wRl: 0.5, mask: m1() }))),
    [1.5, -1.5],
  );
});

test('combined, hint only: OPD term alone (r = 0)', () => {
  closeArray(
    tf.tidy(() => arr(combinedAdvantages({ teacherLp: teacher(), oldLp: old(), reward: [0], mask: m1() }))),
    [0.5, -1],
  );
});

test('combined, score only: the teacher term is exactly 0', () => {
  const a = tf.tidy(() => arr(combinedAdvantages({ teacherLp: null, oldLp: old(), reward: [-1], mask: m1() })));
  assert.deepEqual(a, [-1, -1]);
});

test('combined, mixed batch: samples without a teacher get exactly r, even if their teacher row is garbage', () => {
  const a = tf.tidy(() =>
    arr(
      combinedAdvantages({
        teacherLp: tf.tensor2d([
          [-1, -2],
          [NaN, 0],
        ]),
        hasTeacher: [1, 0],
        oldLp: tf.tensor2d([
          [-1.5, -1],
          [-0.3, -0.7],
        ]),
        reward: [1, 1],
        mask: tf.tensor2d([
          [1, 1],
          [1, 1],
        ]),
      }),
    ),
  );
  assert.deepEqual(a.slice(2), [1, 1]);
  closeArray(a.slice(0, 2), [1.5, 0]);
});

test('OPD advantage modes: centered per sample over its tokens, or positive only; the RL term is added unchanged', () => {
  const teacherLp = [
    [-1, -3, 9],
    [-2, -2, -5],
  ];
  const oldLp = [
    [-2, -2, 0],
    [-1, -1, -1],
  ];
  // raw opd: [1, -1, (masked)], [-1, -1, -4]
  const run = (opdAdvantage: 'raw' | 'centered' | 'positive') =>
    tf.tidy(() =>
      arr(
        combinedAdvantages({
          teacherLp: tf.tensor2d(teacherLp),
          oldLp: tf.tensor2d(oldLp),
          reward: [1, 0],
          opdAdvantage,
          mask: mask(),
        }),
      ),
    );
  closeArray(run('raw'), [2, 0, 0, -1, -1, -4]);
  closeArray(run('centered'), [2, 0, 0, 1, 1, -2]);
  closeArray(run('positive'), [2, 1, 0, 0, 0, 0]);
});
