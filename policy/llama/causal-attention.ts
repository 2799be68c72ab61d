/**
 * Causal grouped-query attention over one sequence. Native TensorFlow takes it as two batched
 * products over the key/value groups (the query heads of a group stacked), with tfjs's own
 * gradients: a dozen ops a layer, where a loop over heads costs ~60 (each op has a fixed cost).
 * On wasm, batched and transposed products are an order of magnitude slower, so there it is
 * per-head 2-D products with a hand-written gradient, the few transposes done once per layer on
 * [T, heads·dim] tensors.
 */
import * as tf from '@tensorflow/tfjs';
import { customOp } from './custom-op.ts';
import { plainOperandsOnly } from './frozen-linear.ts';

export interface AttentionShape {
  heads: number;
  kvHeads: number;
  headDim: number;
}

/** Additive causal mask [T, T]: 0 on and below the diagonal, −1e9 above. */
export function causalMask(T: number): tf.Tensor2D {
  const m = new Float32Array(T * T);
  for (let i = 0; i < T; i++) for (let j = i + 1; j < T; j++) m[i * T + j] = -1e9;
  return tf.tensor2d(m, [T, T]);
}

/** [T, n·d] → n tensors [T, d] (perm [1,0,2]) or [d, T] (perm [1,2,0]). */
function splitHeads(x: tf.Tensor2D, n: number, d: number, transposed: boolean): tf.Tensor2D[] {
  const T = x.shape[0];
  const h = tf.transpose(tf.reshape(x, [T, n, d]), transposed ? [1, 2, 0] : [1, 0, 2]);
  return tf.unstack(h).map((t) => t as tf.Tensor2D);
}

/** n tensors [T, d] → [T, n·d]. */
function mergeHeads(parts: tf.Tensor2D[]): tf.Tensor2D {
  const [T, d] = parts[0].shape;
  return tf.reshape(tf.transpose(tf.stack(parts), [1, 0, 2]), [T, parts.length * d]) as tf.Tensor2D;
}

/** n tensors [d, T] → [T, n·d]. */
function mergeHeadsTransposed(parts: tf.Tensor2D[]): tf.Tensor2D {
  const [d, T] = parts[0].shape;
  return tf.reshape(tf.transpose(tf.stack(parts), [2, 0, 1]), [T, parts.length * d]) as tf.Tensor2D;
}

/**
 * softmax(q·kᵀ/√d + mask)·v per head; query head h reads key/value group h / (heads / kvHeads).
 * q [T, heads·d], k and v [T, kvHeads·d] (rotary already applied) → [T, heads·d].
 */
export function causalAttention(q: tf.Tensor2D, k: tf.Tensor2D, v: tf.Tensor2D, shape: AttentionShape, mask: tf.Tensor2D): tf.Tensor2D {
  return plainOperandsOnly() ? perHeadAttention(q, k, v, shape, mask) : groupedAttention(q, k, v, shape, mask);
}

/** What the grouped attention keeps for its backward pass: the grouped q, k, v and the probabilities. */
export interface GroupedAttentionSaved {
  /** [rows·kvHeads, group·T, d] */
  qg: tf.Tensor3D;
  /** [rows·kvHeads, T, d] */
  kg: tf.Tensor3D;
  /** [rows·kvHeads, T, d] */
  vg: tf.Tensor3D;
  /** [rows·kvHeads, group·T, T] */
  probs: tf.Tensor3D;
}

/**
 * Query head h = kv·group + j: q [rows·T, heads·d] → [rows·kvHeads, group·T, d], each group's
 * heads one after another, so that one batched product per key/value group (and row) serves all
 * of its query heads. `rows` sequences of T tokens each, right-padded: with causal attention a
 * real token never sees the padding after it.
 */
export function groupedAttentionParts(
  q: tf.Tensor2D,
  k: tf.Tensor2D,
  v: tf.Tensor2D,
  shape: AttentionShape,
  mask: tf.Tensor2D,
  rows = 1,
): { out: tf.Tensor2D; saved: GroupedAttentionSaved } {
  const { heads, kvHeads, headDim: d } = shape;
  const T = q.shape[0] / rows;
  const group = heads / kvHeads;
  const B = rows * kvHeads;
  const qg = tf.reshape(tf.transpose(tf.reshape(q, [rows, T, kvHeads, group, d]), [0, 2, 3, 1, 4]), [B, group * T, d]) as tf.Tensor3D;
  const kg = tf.reshape(tf.transpose(tf.reshape(k, [rows, T, kvHeads, d]), [0, 2, 1, 3]), [B, T, d]) as tf.Tensor3D;
  const vg = tf.reshape(tf.transpose(tf.reshape(v, [rows, T, kvHeads, d]), [0, 2, 1, 3]), [B, T, d]) as tf.Tensor3D;
  const scores = tf.reshape(tf.mul(tf.matMul(qg, kg, false, true), 1 / Math.sqrt(d)), [B, group, T, T]);
  const probs = tf.reshape(tf.softmax(tf.add(scores, mask)), [B, group * T, T]) as tf.Tensor3D;
  const out = tf.reshape(tf.matMul(probs, vg), [rows, kvHeads, group, T, d]);
  return { out: tf.reshape(tf.transpose(out, [0, 3, 1, 2, 4]), [rows * T, heads * d]) as tf.Tensor2D, saved: { qg, kg, vg, probs } };
}

function groupedAttention(q: tf.Tensor2D, k: tf.Tensor2D, v: tf.Tensor2D, shape: AttentionShape, mask: tf.Tensor2D): tf.Tensor2D {
  return groupedAttentionParts(q, k, v, shape, mask).out;
}

/**
 * dq [rows·T, heads·d], dk and dv [rows·T, kvHeads·d] of the grouped attention for dL/dout
 * [rows·T, heads·d]. The products over a group's stacked query heads sum their contributions to
 * the shared k and v.
 */
export function groupedAttentionBackward(
  dOut: tf.Tensor2D,
  shape: AttentionShape,
  s: GroupedAttentionSaved,
  rows = 1,
): { dq: tf.Tensor2D; dk: tf.Tensor2D; dv: tf.Tensor2D } {
  const { heads, kvHeads, headDim: d } = shape;
  const T = dOut.shape[0] / rows;
  const group = heads / kvHeads;
  const B = rows * kvHeads;
  const dO = tf.reshape(tf.transpose(tf.reshape(dOut, [rows, T, kvHeads, group, d]), [0, 2, 3, 1, 4]), [B, group * T, d]) as tf.Tensor3D;
  const dP = tf.matMul(dO, s.vg, false, true);
  const dS = tf.mul(tf.mul(s.probs, tf.sub(dP, tf.sum(tf.mul(dP, s.probs), -1, true))), 1 / Math.sqrt(d)) as tf.Tensor3D;
  const dqg = tf.reshape(tf.matMul(dS, s.kg), [rows, kvHeads, group, T, d]);
  const ungroup = (t: tf.Tensor3D): tf.Tensor2D =>
    tf.reshape(tf.transpose(tf.reshape(t, [rows, kvHeads, T, d]), [0, 2, 1, 3]), [rows * T, kvHeads * d]) as tf.Tensor2D;
  return {
    dq: tf.reshape(tf.transpose(dqg, [0, 3, 1, 2, 4]), [rows * T, heads * d]) as tf.Tensor2D,
    dk: ungroup(tf.matMul(dS, s.qg, true, false)),
    dv: ungroup(tf.matMul(s.probs, dO, true, false)),
  };
}

function perHeadAttention(q: tf.Tensor2D, k: tf.Tensor2D, v: tf.Tensor2D, shape: AttentionShape, mask: tf.Tensor2D): tf.Tensor2D {
  const { heads, kvHeads, headDim } = shape;
  const group = heads / kvHeads;
  const scale = 1 / Math.sqrt(headDim);
  const op = customOp(([qi, ki, vi], save) => {
    const qh = splitHeads(qi as tf.Tensor2D, heads, headDim, false);
    const kt = splitHeads(ki as tf.Tensor2D, kvHeads, headDim, true);
    const vh = splitHeads(vi as tf.Tensor2D, kvHeads, headDim, false);
    const probs: tf.Tensor2D[] = [];
    const outs: tf.Tensor2D[] = [];
    for (let h = 0; h < heads; h++) {
      const g = Math.floor(h / group);
      const p = tf.softmax(tf.add(tf.mul(tf.matMul(qh[h], kt[g]), scale), mask)) as tf.Tensor2D;
      probs.push(p);
      outs.push(tf.matMul(p, vh[g]));
    }
    save([qi, ki, vi, ...probs]);
    return {
      value: mergeHeads(outs),
      gradFunc: (dyIn, saved) => {
        const [sq, sk, sv] = saved as tf.Tensor2D[];
        const P = saved.slice(3) as tf.Tensor2D[];
        const dy = dyIn as tf.Tensor2D;
        const dO = splitHeads(dy, heads, headDim, false); // [T, d]
        const dOt = splitHeads(dy, heads, headDim, true); // [d, T]
        const qt = splitHeads(sq, heads, headDim, true); // [d, T]
        const kh = splitHeads(sk, kvHeads, headDim, false); // [T, d]
        const vt = splitHeads(sv, kvHeads, headDim, true); // [d, T]
        const dq: tf.Tensor2D[] = [];
        const dkt: tf.Tensor2D[] = new Array<tf.Tensor2D>(kvHeads);
        const dvt: tf.Tensor2D[] = new Array<tf.Tensor2D>(kvHeads);
        for (let h = 0; h < heads; h++) {
          const g = Math.floor(h / group);
          const dP = tf.matMul(dO[h], vt[g]); // [T, T]
          const dS = tf.mul(tf.mul(P[h], tf.sub(dP, tf.sum(tf.mul(dP, P[h]), -1, true))), scale) as tf.Tensor2D;
          dq.push(tf.matMul(dS, kh[g]));
          const dk: tf.Tensor2D = tf.matMul(qt[h], dS); // [d, T] = (dSᵀ·q)ᵀ
          const dv: tf.Tensor2D = tf.matMul(dOt[h], P[h]); // [d, T] = (Pᵀ·dO)ᵀ
          dkt[g] = dkt[g] ? (tf.add(dkt[g], dk) as tf.Tensor2D) : dk;
          dvt[g] = dvt[g] ? (tf.add(dvt[g], dv) as tf.Tensor2D) : dv;
        }
        return [mergeHeads(dq), mergeHeadsTransposed(dkt), mergeHeadsTransposed(dvt)];
      },
    };
  });
  return op(q, k, v) as tf.Tensor2D;
}
