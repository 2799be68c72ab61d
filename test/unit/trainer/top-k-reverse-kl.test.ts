import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs';
import { topKReverseKl } from '../../../trainer/losses/top-k-reverse-kl.ts';
import { close, val } from '../../support/tfjs-helpers.ts';

function kl(logits: number[], ids: number[], teacherLp: number[], mask = 1): { loss: number; perToken: number } {
  return tf.tidy(() => {
    const out = topKReverseKl({
      studentLogits: tf.tensor3d([[logits]]),
      teacherTopKIds: tf.tensor3d([[ids]], undefined, 'int32'),
      teacherTopKLogprobs: tf.tensor3d([[teacherLp]]),
      mask: tf.tensor2d([[mask]]),
    });
    return { loss: val(out.loss), perToken: val(out.perToken) };
  });
}

test('uniform student vs teacher (0.5, 0.25 | tail 0.25): KL = ¼·ln 2', () => {
  // 0.25·ln(0.25/0.5) + 0.25·ln(0.25/0.25) + tail 0.5·ln(0.5/0.25)
  close(kl([0, 0, 0, 0], [0, 1], [Math.log(0.5), Math.log(0.25)]).loss, 0.25 * Math.LN2);
});

test('student equal to teacher (including the tail bin): KL = 0', () => {
  const p = [0.5, 0.25, 0.125, 0.125];
  close(kl(p.map(Math.log), [0, 1], [Math.log(0.5), Math.log(0.25)]).loss, 0, 1e-6);
});

test('the tail bin carries the mass outside the top-k', () => {
  // Same top-k probabilities for the student (0.5, 0.25) but its tail is split differently:
  // the tail bin merges it, so the KL is still 0.
  const p = [0.5, 0.25, 0.2, 0.05];
  close(kl(p.map(Math.log), [0, 1], [Math.log(0.5), Math.log(0.25)]).loss, 0, 1e-6);
  // Student tail 0.5, teacher tail 0.1.
  const q = [0.25, 0.25, 0.25, 0.25];
  const expected = 0.25 * Math.log(0.25 / 0.6) + 0.25 * Math.log(0.25 / 0.3) + 0.5 * Math.log(0.5 / 0.1);
  close(kl(q.map(Math.log), [2, 0], [Math.log(0.6), Math.log(0.3)]).loss, expected);
});

test('a teacher top-k that sums to 1 (or a rounding hair above) gives a finite loss', () => {
  const a = kl([0, 0, 0, 0], [0, 1], [Math.log(0.5), Math.log(0.5)]).loss;
  const expected = 0.25 * Math.log(0.5) * 2 + 0.5 * (Math.log(0.5) - Math.log(1e-8));
  close(a, expected, 1e-4);
  const b = kl([0, 0, 0, 0], [0, 1], [Math.log(0.5000001), Math.log(0.5000001)]).loss;
  assert.ok(Number.isFinite(b));
});

test('k = V: the student has no tail and the loss is the full reverse KL', () => {
  const t = [0.4, 0.3, 0.2, 0.1];
  const expected = 0.25 * t.reduce((s, ti) => s + Math.log(0.25 / ti), 0);
  close(kl([0, 0, 0, 0], [0, 1, 2, 3], t.map(Math.log)).loss, expected);
});

test('masked positions contribute 0 and gradients are finite', () => {
  assert.equal(kl([0, 0, 0, 0], [0, 1], [Math.log(0.5), Math.log(0.25)], 0).perToken, 0);
  const g = tf.tidy(() => {
    const ids = tf.tensor3d([[[0, 1]]], undefined, 'int32');
    const lp = tf.tensor3d([[[Math.log(0.5), Math.log(0.5)]]]);
    const f = (x: tf.Tensor): tf.Scalar =>
      topKReverseKl({ studentLogits: x as tf.Tensor3D, teacherTopKIds: ids, teacherTopKLogprobs: lp, mask: tf.tensor2d([[1]]) }).loss;
    return Array.from(
      tf
        .grad(f)(tf.tensor3d([[[1, 0, -1, 2]]]))
        .dataSync(),
    );
  });
  assert.ok(g.every(Number.isFinite));
});

test('the hand-written gradient matches finite differences of the loss', () => {
  const ids = tf.tensor3d(
    [
      [
        [0, 3],
        [2, 1],
      ],
    ],
    undefined,
    'int32',
  );
  const lp = tf.tensor3d([
    [
      [Math.log(0.5), Math.log(0.2)],
      [Math.log(0.6), Math.log(0.3)],
    ],
  ]);
  const mask = tf.tensor2d([[1, 1]]);
  const x0 = [0.3, -0.2, 1.1, 0.4, -0.7, 0.9, 0.1, -0.5, 0.2, 0.6];
  const loss = (x: number[]): number =>
    tf.tidy(() =>
      val(topKReverseKl({ studentLogits: tf.tensor3d(x, [1, 2, 5]), teacherTopKIds: ids, teacherTopKLogprobs: lp, mask }).loss),
    );
  const g = tf.tidy(() =>
    Array.from(
      tf
        .grad(
          (x: tf.Tensor) => topKReverseKl({ studentLogits: x as tf.Tensor3D, teacherTopKIds: ids, teacherTopKLogprobs: lp, mask }).loss,
        )(tf.tensor3d(x0, [1, 2, 5]))
        .dataSync(),
    ),
  );
  const h = 1e-2;
  for (let i = 0; i < x0.length; i++) {
    const up = [...x0];
    const down = [...x0];
    up[i] += h;
    down[i] -= h;
    close(g[i], (loss(up) - loss(down)) / (2 * h), 2e-3, `∂loss/∂z${i}`);
  }
  tf.dispose([ids, lp, mask]);
});
