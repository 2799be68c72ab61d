import * as tf from '@tensorflow/tfjs';

/** RMSNorm over the last axis, times the gain: x / √(mean(x²) + eps) · g. Differentiable. */
export function rmsNorm<T extends tf.Tensor>(x: T, g: tf.Tensor1D, eps: number): T {
  return tf.mul(tf.mul(x, tf.rsqrt(tf.add(tf.mean(tf.square(x), -1, true), eps))), g) as T;
}

/** RMSNorm of each head of x [T, n·d] over its d values (qwen3's q/k norm). */
export function headRmsNorm(x: tf.Tensor2D, n: number, g: tf.Tensor1D, eps: number): tf.Tensor2D {
  const [T, nd] = x.shape;
  return tf.reshape(rmsNorm(tf.reshape(x, [T, n, nd / n]), g, eps), [T, nd]) as tf.Tensor2D;
}
