import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { ppoClippedLoss } from '../../../trainer/losses/ppo-clipped-loss.ts';
import { close, val } from '../../support/tfjs-helpers.ts';

/** One sample of one token with ratio r and advantage a. */
function single(r: number, a: number): { loss: number; clip: number; grad: number } {
  return tf.tidy(() => {
    const logpOld = tf.tensor2d([[-1]]);
    const logp0 = tf.tensor2d([[-1 + Math.log(r)]]);
    const f = (logp: tf.Tensor): tf.Scalar =>
      ppoClippedLoss({ logp: logp as tf.Tensor2D, logpOld, advantages: tf.tensor2d([[a]]), mask: tf.tensor2d([[1]]) }).loss;
    const out = ppoClippedLoss({ logp: logp0, logpOld, advantages: tf.tensor2d([[a]]), mask: tf.tensor2d([[1]]) });
    return { loss: val(out.loss), clip: val(out.clipFraction), grad: val(tf.grad(f)(logp0)) };
  });
}

// Hand-computed: loss = max(−r·A, −clip(r, 0.8, 1.28)·A); the gradient w.r.t. logp is −r·A when
// the unclipped term is the max, 0 when the clipped one is.
const cases: Array<[number, number, number, boolean]> = [
  // ratio, advantage, loss, clipped
  [0.79, +1, -0.79, false], // below 1 − 0.2 with A > 0: the unclipped term is larger, gradient flows
  [0.81, +1, -0.81, false],
  [1.27, +1, -1.27, false],
  [1.29, +1, -1.28, true], // above 1 + 0.28 with A > 0: clipped, no gradient
  [0.79, -1, 0.8, true], // below 0.8 with A < 0: clipped, no gradient
  [0.81, -1, 0.81, false],
  [1.27, -1, 1.27, false],
  [1.29, -1, 1.29, false], // above 1.28 with A < 0: unclipped (pessimistic), gradient flows
];

for (const [r, a, loss, clipped] of cases) {
  test(`ratio ${r}, advantage ${a}: loss ${loss}, ${clipped ? 'clipped' : 'not clipped'}`, () => {
    const out = single(r, a);
    close(out.loss, loss, 1e-5);
    assert.equal(out.clip, clipped ? 1 : 0);
    close(out.grad, clipped ? 0 : -r * a, 1e-5, 'gradient');
  });
}

test('asymmetric clip bounds are configurable', () => {
  const out = tf.tidy(() =>
    val(
      ppoClippedLoss({
        logp: tf.tensor2d([[Math.log(1.15)]]),
        logpOld: tf.tensor2d([[0]]),
        advantages: tf.tensor2d([[1]]),
        mask: tf.tensor2d([[1]]),
        clipHigh: 0.1,
      }).loss,
    ),
  );
  close(out, -1.1);
});

test('clip fraction counts clipped tokens over all trained tokens of the batch', () => {
  const rs = cases.map((c) => c[0]);
  const as = cases.map((c) => c[1]);
  const out = tf.tidy(() => {
    const o = ppoClippedLoss({
      logp: tf.tensor2d(rs.map((r) => [Math.log(r)])),
      logpOld: tf.zeros([rs.length, 1]) as tf.Tensor2D,
      advantages: tf.tensor2d(as.map((a) => [a])),
      mask: tf.ones([rs.length, 1]) as tf.Tensor2D,
    });
    return { loss: val(o.loss), clip: val(o.clipFraction) };
  });
  close(out.clip, 2 / 8);
  close(out.loss, cases.reduce((s, c) => s + c[2], 0) / 8);
});

test('token-mean per sample, then mean over samples (not a token-mean over the batch)', () => {
  const loss = tf.tidy(() =>
    val(
      ppoClippedLoss({
        logp: tf.zeros([2, 2]) as tf.Tensor2D,
        logpOld: tf.zeros([2, 2]) as tf.Tensor2D, // ratio 1: loss = −A
        advantages: tf.tensor2d([
          [1, 3],
          [6, 100],
        ]),
        mask: tf.tensor2d([
          [1, 1],
          [1, 0],
        ]),
      }).loss,
    ),
  );
  close(loss, (-(1 + 3) / 2 + -6) / 2); // −4, where a batch token-mean would give −10/3
});

test('masked tokens contribute nothing, even with NaN/huge values, and get no gradient', () => {
  const { loss, grad } = tf.tidy(() => {
    const logpOld = tf.tensor2d([[0, 0, 0]]);
    const advantages = tf.tensor2d([[2, 4, NaN]]);
    const mask = tf.tensor2d([[1, 1, 0]]);
    const logp = tf.tensor2d([[0, 0, 50]]);
    const f = (lp: tf.Tensor): tf.Scalar => ppoClippedLoss({ logp: lp as tf.Tensor2D, logpOld, advantages, mask }).loss;
    return { loss: val(f(logp)), grad: Array.from(tf.grad(f)(logp).dataSync()) };
  });
  close(loss, -3);
  close(grad[0], -1);
  close(grad[1], -2);
  assert.equal(grad[2], 0);
});

test('fully masked samples are left out of the batch mean; an all-masked batch is 0', () => {
  const { one, none } = tf.tidy(() => {
    const base = { logp: tf.zeros([2, 2]) as tf.Tensor2D, logpOld: tf.zeros([2, 2]) as tf.Tensor2D };
    const advantages = tf.tensor2d([
      [1, 1],
      [5, 5],
    ]);
    return {
      one: val(
        ppoClippedLoss({
          ...base,
          advantages,
          mask: tf.tensor2d([
            [1, 1],
            [0, 0],
          ]),
        }).loss,
      ),
      none: val(ppoClippedLoss({ ...base, advantages, mask: tf.zeros([2, 2]) as tf.Tensor2D }).loss),
    };
  });
  close(one, -1);
  assert.equal(none, 0);
});
