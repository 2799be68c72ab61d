import * as tf from '@tensorflow/tfjs';
import { maskedValues, sampleTokenMean, tokenMean } from './masked-mean.ts';

export interface PpoClippedLossInput {
  /** log π_θ of the response tokens [B, T] (differentiable). */
  logp: tf.Tensor2D;
  /** log π_old of the same tokens [B, T], recomputed at the start of the batch. */
  logpOld: tf.Tensor2D;
  /** Token-level advantages [B, T]. */
  advantages: tf.Tensor2D;
  /** 1 for trained tokens, 0 for prompt, padding and masked-out tokens [B, T]. */
  mask: tf.Tensor2D;
  /**
   * Lower clip: the ratio is clipped at 1 − clipLow.
   * @default 0.2
   */
  clipLow?: number;
  /**
   * Upper clip: the ratio is clipped at 1 + clipHigh.
   * @default 0.28
   */
  clipHigh?: number;
  /**
   * `sample`: the token mean of each sample, then the mean over samples; `token`: the mean over
   * every trained token (DAPO's per-token loss). @default 'sample'
   */
  aggregate?: 'sample' | 'token';
}

export interface PpoClippedLossOutput {
  /** Token-mean per sample, mean over the samples with trained tokens (or over all trained tokens, `aggregate: 'token'`). */
  loss: tf.Scalar;
  /** Fraction of trained tokens whose clipped term was the larger (i.e. the gradient was cut). */
  clipFraction: tf.Scalar;
  /** Mean ratio π_θ/π_old over trained tokens (1 on the first step of a batch). */
  meanRatio: tf.Scalar;
}

/**
 * PPO clipped surrogate (docs/design/algorithms.md §5): per token `ratio = exp(logp − logpOld)`,
 * `loss = max(−ratio·A, −clip(ratio, 1 − clipLow, 1 + clipHigh)·A)`.
 */
export function ppoClippedLoss(input: PpoClippedLossInput): PpoClippedLossOutput {
  const clipLow = input.clipLow ?? 0.2;
  const clipHigh = input.clipHigh ?? 0.28;
  const { mask } = input;
  return tf.tidy(() => {
    const ratio = tf.exp(tf.sub(input.logp, input.logpOld)) as tf.Tensor2D;
    const adv = maskedValues(input.advantages, mask);
    const unclipped = tf.neg(tf.mul(ratio, adv));
    const clipped = tf.neg(tf.mul(tf.clipByValue(ratio, 1 - clipLow, 1 + clipHigh), adv));
    const perToken = tf.maximum(unclipped, clipped) as tf.Tensor2D;
    const wasClipped = tf.cast(tf.greater(clipped, unclipped), 'float32') as tf.Tensor2D;
    return {
      loss: input.aggregate === 'token' ? tokenMean(perToken, mask) : sampleTokenMean(perToken, mask),
      clipFraction: tokenMean(wasClipped, mask),
      meanRatio: tokenMean(ratio, mask),
    };
  });
}
