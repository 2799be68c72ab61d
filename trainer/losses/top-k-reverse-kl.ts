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
 * of the mass (ALGORITHMS.md §4): `Σ_k p_s(k)·(log p_s(k) − log p_t(k)) + p_s(tail)·(log
 * p_s(tail) − log p_t(tail))`, with `log p_t(tail) = log(1 − Σ exp(top-k))`. The student's tail is
 * a log-sum-exp over the other ids (exact, not 1 − Σ); both tails are floored at `tailFloor`.
 */
export function topKReverseKl(input: TopKReverseKlInput): TopKReverseKlOutput {
  const floor = input.tailFloor ?? 1e-8;
  return tf.tidy(() => {
    const V = input.studentLogits.shape[2];
    const logits = input.studentLogits;
    const lse = tf.logSumExp(logits, -1, true);
    const ids = tf.cast(input.teacherTopKIds, 'int32');
    const onehot = tf.oneHot(ids, V) as tf.Tensor4D; // [B, T, K, V]
    // Student log-probs of the top-k ids [B, T, K].
    const studentLp = tf.sub(tf.sum(tf.mul(onehot, tf.expandDims(logits, 2)), -1), lse);
    const inTopK = tf.minimum(tf.sum(onehot, 2), 1); // [B, T, V]
    const tailLse = tf.logSumExp(tf.add(logits, tf.mul(inTopK, -1e9)), -1, true);
    const studentTailLp = tf.maximum(tf.squeeze(tf.sub(tailLse, lse), [-1]), Math.log(floor));
    const teacherLp = tf.cast(input.teacherTopKLogprobs, 'float32');
    const teacherTail = tf.sub(1, tf.sum(tf.exp(teacherLp), -1));
    const teacherTailLp = tf.log(tf.maximum(teacherTail, floor));
    const topTerm = tf.sum(tf.mul(tf.exp(studentLp), tf.sub(studentLp, teacherLp)), -1);
    const studentTail = tf.exp(tf.squeeze(tf.sub(tailLse, lse), [-1]));
    const tailTerm = tf.mul(studentTail, tf.sub(studentTailLp, teacherTailLp));
    const m = tf.cast(input.mask, 'float32');
    const perToken = tf.where(tf.greater(m, 0), tf.add(topTerm, tailTerm), tf.zerosLike(m)) as tf.Tensor2D;
    return { loss: sampleTokenMean(perToken, input.mask), perToken };
  });
}
