import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { logprobDrift } from '../../../trainer/losses/logprob-drift.ts';
import { sampleTokenMean } from '../../../trainer/losses/masked-mean.ts';
import { klLowVar, regularizedLoss, tokenEntropy } from '../../../trainer/losses/regularizers.ts';
import { arr, close, closeArray, val } from '../../support/tfjs-helpers.ts';

test('k3 KL: exp(r) − r − 1 with r = logpRef − logp; 0 when equal; masked tokens 0', () => {
  const k = tf.tidy(() =>
    arr(klLowVar(tf.tensor2d([[Math.log(0.5), -1, -1]]), tf.tensor2d([[Math.log(0.25), -1, 5]]), tf.tensor2d([[1, 1, 0]]))),
  );
  closeArray(k, [0.5 + Math.LN2 - 1, 0, 0]);
});

test('entropy of a uniform distribution over 4 ids is ln 4', () => {
  const h = tf.tidy(() => arr(tokenEntropy(tf.zeros([1, 2, 4]) as tf.Tensor3D, tf.tensor2d([[1, 0]]))));
  closeArray(h, [Math.log(4), 0]);
});

test('with coefficients 0 (the default) the loss is the policy-gradient loss itself', () => {
  const l = tf.tidy(() => val(regularizedLoss({ pgLoss: tf.scalar(0.75), mask: tf.tensor2d([[1]]) })));
  assert.equal(l, 0.75);
});

test('KL and entropy terms are added with their coefficients', () => {
  const l = tf.tidy(() =>
    val(
      regularizedLoss({
        pgLoss: tf.scalar(1),
        mask: tf.tensor2d([[1]]),
        logp: tf.tensor2d([[Math.log(0.5)]]),
        logpRef: tf.tensor2d([[Math.log(0.25)]]),
        logits: tf.zeros([1, 1, 4]) as tf.Tensor3D,
        klCoef: 0.1,
        entropyCoef: 0.01,
      }),
    ),
  );
  close(l, 1 + 0.1 * (0.5 + Math.LN2 - 1) - 0.01 * Math.log(4));
});

test('log-prob drift is the mean |Δ| over trained tokens of the batch', () => {
  const d = tf.tidy(() =>
    val(
      logprobDrift(
        tf.tensor2d([
          [-1, -2, -3],
          [-0.5, 0, 0],
        ]),
        tf.tensor2d([
          [-1.1, -2, -2.5],
          [-0.2, 7, 7],
        ]),
        tf.tensor2d([
          [1, 1, 0],
          [1, 0, 0],
        ]),
      ),
    ),
  );
  close(d, (0.1 + 0 + 0.3) / 3);
});

test('sampleTokenMean divides each sample by its own token count', () => {
  const m = tf.tidy(() =>
    val(
      sampleTokenMean(
        tf.tensor2d([
          [2, 4, 9],
          [3, 9, 9],
        ]),
        tf.tensor2d([
          [1, 1, 0],
          [1, 0, 0],
        ]),
      ),
    ),
  );
  close(m, (3 + 3) / 2);
});
