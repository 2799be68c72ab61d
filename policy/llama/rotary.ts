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

/** Tables for {@link applyRotaryByProduct}: cos and sin per position and head dimension [T, 1, headDim] (1 and 0 past ropeDim). */
export function rotaryFullTables(T: number, o: RotaryOptions): { cos: tf.Tensor3D; sin: tf.Tensor3D } {
  const half = o.ropeDim / 2;
  const cos = new Float32Array(T * o.headDim).fill(1);
  const sin = new Float32Array(T * o.headDim);
  for (let i = 0; i < half; i++) {
    let freq = Math.pow(o.base, (-2 * i) / o.ropeDim);
    if (o.freqFactors) freq /= o.freqFactors[i];
    // The two dimensions pair i rotates.
    const [a, b] = o.type === 'norm' ? [2 * i, 2 * i + 1] : [i, i + half];
    for (let p = 0; p < T; p++) {
      const theta = p * freq;
      cos[p * o.headDim + a] = cos[p * o.headDim + b] = Math.cos(theta);
      sin[p * o.headDim + a] = sin[p * o.headDim + b] = Math.sin(theta);
    }
  }
  return { cos: tf.tensor3d(cos, [T, 1, o.headDim]), sin: tf.tensor3d(sin, [T, 1, o.headDim]) };
}

/** The signed permutation P [headDim, headDim] with (x·P)[a] = −x[b] and (x·P)[b] = x[a] for every rotated pair (a, b). */
export function rotateHalfMatrix(o: RotaryOptions): tf.Tensor2D {
  const d = o.headDim;
  const half = o.ropeDim / 2;
  const p = new Float32Array(d * d);
  for (let i = 0; i < half; i++) {
    const [a, b] = o.type === 'norm' ? [2 * i, 2 * i + 1] : [i, i + half];
    p[b * d + a] = -1;
    p[a * d + b] = 1;
  }
  return tf.tensor2d(p, [d, d]);
}

/**
 * The same rotation as {@link applyRotary}, as x·cos + (x·P)·sin: seven ops where the split and
 * concatenation take a dozen (native TensorFlow, where each op has a fixed cost). With −sin it
 * is the inverse rotation, the backward pass of the forward one. x may hold `rows` sequences of
 * T tokens one after another.
 */
export function applyRotaryByProduct(
  x: tf.Tensor2D,
  n: number,
  tables: { cos: tf.Tensor3D; sin: tf.Tensor3D; p: tf.Tensor2D },
  headDim: number,
  rows = 1,
): tf.Tensor2D {
  const N = x.shape[0];
  const T = N / rows;
  // [rows, T, n, headDim] against tables [T, 1, headDim]: every row's positions start at 0.
  const x4 = tf.reshape(x, [rows, T, n, headDim]);
  const turned = tf.reshape(tf.matMul(tf.reshape(x, [N * n, headDim]), tables.p), [rows, T, n, headDim]);
  return tf.reshape(tf.add(tf.mul(x4, tables.cos), tf.mul(turned, tables.sin)), [N, n * headDim]) as tf.Tensor2D;
}
