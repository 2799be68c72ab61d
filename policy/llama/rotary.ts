/**
 * Rotary position embeddings as llama.cpp applies them (ggml_rope_ext): pair i of a head is
 * rotated by pos·base^(−2i/ropeDim) (divided by the model's frequency factor, when it has
 * `rope_freqs.weight`). `norm` pairs adjacent dimensions (2i, 2i+1); `neox` pairs i with
 * i + ropeDim/2. Dimensions past ropeDim pass through.
 */
import * as tf from '@tensorflow/tfjs';

export interface RotaryOptions {
  ropeDim: number;
  headDim: number;
  base: number;
  type: 'norm' | 'neox';
  /** One per pair (ropeDim / 2), or null. */
  freqFactors: Float32Array | null;
}

/** cos and sin tables [T, ropeDim/2] for positions 0..T−1. */
export function rotaryTables(T: number, o: RotaryOptions): { cos: tf.Tensor2D; sin: tf.Tensor2D } {
  const half = o.ropeDim / 2;
  const cos = new Float32Array(T * half);
  const sin = new Float32Array(T * half);
  for (let i = 0; i < half; i++) {
    let freq = Math.pow(o.base, (-2 * i) / o.ropeDim);
    if (o.freqFactors) freq /= o.freqFactors[i];
    for (let p = 0; p < T; p++) {
      const theta = p * freq;
      cos[p * half + i] = Math.cos(theta);
      sin[p * half + i] = Math.sin(theta);
    }
  }
  return { cos: tf.tensor2d(cos, [T, half]), sin: tf.tensor2d(sin, [T, half]) };
}

/** Rotates x [T, n·headDim] (n heads) with tables from `rotaryTables`. Differentiable. */
export function applyRotary(x: tf.Tensor2D, n: number, tables: { cos: tf.Tensor2D; sin: tf.Tensor2D }, o: RotaryOptions): tf.Tensor2D {
  const T = x.shape[0];
  const half = o.ropeDim / 2;
  const x3 = tf.reshape(x, [T, n, o.headDim]);
  const rot = o.ropeDim === o.headDim ? x3 : tf.slice(x3, [0, 0, 0], [T, n, o.ropeDim]);
  let out: tf.Tensor;
  if (o.type === 'norm') {
    const cos = tf.reshape(tables.cos, [T, 1, half, 1]);
    const sin = tf.reshape(tables.sin, [T, 1, half, 1]);
    const [x0, x1] = tf.split(tf.reshape(rot, [T, n, half, 2]), 2, 3);
    const r0 = tf.sub(tf.mul(x0, cos), tf.mul(x1, sin));
    const r1 = tf.add(tf.mul(x0, sin), tf.mul(x1, cos));
    out = tf.reshape(tf.concat([r0, r1], 3), [T, n, o.ropeDim]);
  } else {
    const cos = tf.reshape(tables.cos, [T, 1, half]);
    const sin = tf.reshape(tables.sin, [T, 1, half]);
    const [x1, x2] = tf.split(rot, 2, 2);
    out = tf.concat([tf.sub(tf.mul(x1, cos), tf.mul(x2, sin)), tf.add(tf.mul(x2, cos), tf.mul(x1, sin))], 2);
  }
  if (o.ropeDim !== o.headDim) out = tf.concat([out, tf.slice(x3, [0, 0, o.ropeDim], [T, n, o.headDim - o.ropeDim])], 2);
  return tf.reshape(out, [T, n * o.headDim]) as tf.Tensor2D;
}
