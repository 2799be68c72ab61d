import * as tf from '@tensorflow/tfjs';
import { tokenMean } from './masked-mean.ts';

/**
 * Mean |rollout − recomputed| log-prob over the trained tokens of a batch (docs/design/algorithms.md §5):
 * how far the log-probs recorded at generation are from π_old recomputed by the trainer.
 * 0 means the training is exactly on-policy.
 */
export function logprobDrift(rolloutLp: tf.Tensor2D, recomputedLp: tf.Tensor2D, mask: tf.Tensor2D): tf.Scalar {
  return tf.tidy(() => tokenMean(tf.abs(tf.sub(rolloutLp, recomputedLp)) as tf.Tensor2D, mask));
}
