import * as tf from '@tensorflow/tfjs';

/**
 * Token-mean per sample, then mean over the samples that have at least one unmasked token:
 * `mean_b( Σ_t v[b,t]·m[b,t] / Σ_t m[b,t] )`. A fully masked sample contributes nothing
 * (neither to the numerator nor to the number of samples). Returns 0 for an all-masked batch.
 */
export function sampleTokenMean(values: tf.Tensor2D, mask: tf.Tensor2D): tf.Scalar {
  return tf.tidy(() => {
    const m = tf.cast(mask, 'float32');
    const count = tf.sum(m, 1);
    const has = tf.cast(tf.greater(count, 0), 'float32');
    const perSample = tf.div(tf.sum(tf.mul(maskedValues(values, m), m), 1), tf.maximum(count, 1));
    return tf.div(tf.sum(tf.mul(perSample, has)), tf.maximum(tf.sum(has), 1)) as tf.Scalar;
  });
}

/** Mean over all unmasked tokens of the batch (0 when none). */
export function tokenMean(values: tf.Tensor2D, mask: tf.Tensor2D): tf.Scalar {
  return tf.tidy(() => {
    const m = tf.cast(mask, 'float32');
    return tf.div(tf.sum(tf.mul(maskedValues(values, m), m)), tf.maximum(tf.sum(m), 1)) as tf.Scalar;
  });
}

/** Masked entries set to exactly 0, so a NaN or ±Inf there cannot leak into a sum (0·NaN = NaN). */
export function maskedValues(values: tf.Tensor, mask: tf.Tensor): tf.Tensor {
  return tf.where(tf.greater(mask, 0), values, tf.zerosLike(values));
}
