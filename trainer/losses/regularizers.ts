import * as tf from '@tensorflow/tfjs';
import { maskedValues, sampleTokenMean } from './masked-mean.ts';

/**
 * Low-variance KL estimate to a reference policy per token (Schulman's k3):
 * `exp(r) − r − 1` with `r = logpRef − logp`; ≥ 0, unbiased for KL(π_θ ‖ π_ref) on samples
 * from π_θ. Masked tokens are 0.
 */
export function klLowVar(logp: tf.Tensor2D, logpRef: tf.Tensor2D, mask: tf.Tensor2D): tf.Tensor2D {
  return tf.tidy(() => {
    const r = tf.sub(logpRef, logp);
    return maskedValues(tf.sub(tf.sub(tf.exp(r), r), 1), mask) as tf.Tensor2D;
  });
}

/** Entropy of the policy per position [B, T] from logits [B, T, V]; masked tokens are 0. */
export function tokenEntropy(logits: tf.Tensor3D, mask: tf.Tensor2D): tf.Tensor2D {
  return tf.tidy(() => {
    const lp = tf.logSoftmax(logits);
    return maskedValues(tf.neg(tf.sum(tf.mul(tf.exp(lp), lp), -1)), mask) as tf.Tensor2D;
  });
}

export interface RegularizedLossInput {
  /** The policy-gradient loss (e.g. `ppoClippedLoss(...).loss`). */
  pgLoss: tf.Scalar;
  mask: tf.Tensor2D;
  /** Needed when `klCoef` ≠ 0. */
  logp?: tf.Tensor2D;
  /** Reference policy log-probs; needed when `klCoef` ≠ 0. */
  logpRef?: tf.Tensor2D;
  /** Needed when `entropyCoef` ≠ 0. */
  logits?: tf.Tensor3D;
  /**
   * Weight of the k3 KL to the reference.
   * @default 0
   */
  klCoef?: number;
  /**
   * Weight of the entropy bonus (subtracted from the loss).
   * @default 0
   */
  entropyCoef?: number;
}

/**
 * `pgLoss + klCoef·KL − entropyCoef·H`, each a token-mean per sample, mean over samples.
 * With both coefficients 0 (the default) it is `pgLoss` itself and nothing else is computed.
 */
export function regularizedLoss(input: RegularizedLossInput): tf.Scalar {
  const klCoef = input.klCoef ?? 0;
  const entropyCoef = input.entropyCoef ?? 0;
  return tf.tidy(() => {
    let loss: tf.Scalar = tf.clone(input.pgLoss);
    if (klCoef !== 0) {
      if (!input.logp || !input.logpRef) throw new Error('klCoef ≠ 0 needs logp and logpRef');
      loss = tf.add(loss, tf.mul(klCoef, sampleTokenMean(klLowVar(input.logp, input.logpRef, input.mask), input.mask)));
    }
    if (entropyCoef !== 0) {
      if (!input.logits) throw new Error('entropyCoef ≠ 0 needs logits');
      loss = tf.sub(loss, tf.mul(entropyCoef, sampleTokenMean(tokenEntropy(input.logits, input.mask), input.mask)));
    }
    return loss;
  });
}
