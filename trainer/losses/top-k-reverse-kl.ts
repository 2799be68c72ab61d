import * as tf from '@tensorflow/tfjs';
import { sampleTokenMean } from './masked-mean.ts';

export interface TopKReverseKlInput {
  /** Student logits [B, T, V] at the response positions (differentiable). */
  studentLogits: tf.Tensor3D;
  /** The teacher's top-k token ids per position [B, T, K] (distinct per position). */
  teacherTopKIds: tf.Tensor3D;
  /** The teacher's log-probs of those ids [B, T, K]. */
  teacherTopKLogprobs: tf.Tensor3D;
  mask: tf.Tensor2D;
  /**
   * Floor on the tail bins' probabilities, so their logs stay finite.
   * @default 1e-8
   */
  tailFloor?: number;
}

export interface TopKReverseKlOutput {
  /** Token-mean per sample of the reverse KL, mean over the samples. */
  loss: tf.Scalar;
  /** Reverse KL per position [B, T] (0 where masked). */
  perToken: tf.Tensor2D;
}

/**
 * Reverse KL(student ‖ teacher) over the teacher's top-k ids plus one tail bin holding the rest
 * of the mass (docs/design/algorithms.md §4): `Σ_k p_s(k)·(log p_s(k) − log p_t(k)) + p_s(tail)·(log
 * p_s(tail) − log p_t(tail))`, with `log p_t(tail) = log(1 − Σ exp(top-k))`. The student's tail is
 * a log-sum-exp over the other ids (exact, not 1 − Σ); both tails are floored at `tailFloor`.
 * The top-k is scattered into the vocabulary, never one-hot per id, and the gradient is written by
 * hand, so a 49k-token vocabulary costs a few transient [B, T, V] tensors, as the logits do.
 */
export function topKReverseKl(input: TopKReverseKlInput): TopKReverseKlOutput {
  const floor = input.tailFloor ?? 1e-8;
  return tf.tidy(() => {
    const [B, T, V] = input.studentLogits.shape;
    const K = input.teacherTopKIds.shape[2];
    // Flat index of (b, t, id) in the [B·T·V] logits: the teacher's top-k scattered into the vocabulary.
    const rowStart = tf.reshape(tf.mul(tf.range(0, B * T, 1, 'int32'), tf.scalar(V, 'int32')), [B, T, 1]);
    const flat = tf.reshape(tf.add(tf.cast(input.teacherTopKIds, 'int32'), rowStart), [B * T * K, 1]);
    const teacherLp = tf.cast(input.teacherTopKLogprobs, 'float32');
    const teacherTailLp = tf.log(tf.maximum(tf.sub(1, tf.sum(tf.exp(teacherLp), -1)), floor));
    // Per position: the KL, the student's probabilities, and each id's bin log-ratio ℓ (its own
    // in the top-k, the tail's elsewhere); ∂KL/∂z_v = p_v·(ℓ_v − KL).
    const parts = (
      logits: tf.Tensor3D,
      at: tf.Tensor,
      tLp: tf.Tensor,
      tTailLp: tf.Tensor,
    ): { kl: tf.Tensor2D; p: tf.Tensor3D; ell: tf.Tensor3D } => {
      const dense = (values: tf.Tensor): tf.Tensor3D =>
        tf.reshape(tf.scatterND(at, tf.reshape(values, [B * T * K]), [B * T * V]), [B, T, V]);
      const inTopK = tf.minimum(dense(tf.onesLike(tLp)), 1);
      const lse = tf.logSumExp(logits, -1, true);
      const logp = tf.sub(logits, lse);
      const p = tf.exp(logp) as tf.Tensor3D;
      const tailLp = tf.sub(tf.logSumExp(tf.add(logits, tf.mul(inTopK, -1e9)), -1, true), lse);
      const tailRatio = tf.sub(tf.maximum(tailLp, Math.log(floor)), tf.expandDims(tTailLp, -1));
      const ell = tf.where(tf.greater(inTopK, 0), tf.sub(logp, dense(tLp)), tf.broadcastTo(tailRatio, [B, T, V])) as tf.Tensor3D;
      const top = tf.sum(tf.mul(inTopK, tf.mul(p, ell)), -1);
      const tail = tf.squeeze(tf.mul(tf.exp(tailLp), tailRatio), [-1]);
      return { kl: tf.add(top, tail) as tf.Tensor2D, p, ell };
    };
    // A hand-written gradient keeps no [B, T, V] intermediates on the tape: with a 49k vocabulary
    // autodiff held a dozen of them and ran the wasm heap out. The teacher's tensors are inputs too,
    // so that the engine keeps them for the backward pass (with zero gradients).
    const perPosition = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
      const [logits, at, tLp, tTailLp] = args.slice(0, 4) as tf.Tensor[];
      (args[4] as tf.GradSaveFunc)([logits, at, tLp, tTailLp]);
      return {
        value: tf.tidy(() => parts(logits as tf.Tensor3D, at, tLp, tTailLp).kl),
        gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) =>
          tf.tidy(() => {
            const [x, a, l, tl] = saved;
            const { kl, p, ell } = parts(x as tf.Tensor3D, a, l, tl);
            const dLogits = tf.mul(tf.mul(p, tf.sub(ell, tf.expandDims(kl, -1))), tf.expandDims(dy as tf.Tensor, -1));
            return [dLogits, tf.zerosLike(a), tf.zerosLike(l), tf.zerosLike(tl)];
          }),
      };
    });
    const m = tf.cast(input.mask, 'float32');
    const perToken = tf.where(
      tf.greater(m, 0),
      perPosition(input.studentLogits, flat, teacherLp, teacherTailLp) as tf.Tensor2D,
      tf.zerosLike(m),
    ) as tf.Tensor2D;
    return { loss: sampleTokenMean(perToken, input.mask), perToken };
  });
}
