/**
 * Matrix products of the LoRA trainer. Frozen weights are kept in GGUF order [out, in]; native
 * TensorFlow multiplies by the transpose directly (oneDNN packs either operand) and tfjs's own
 * gradient of that product reaches x only, since W is not on the path to a trained variable.
 *
 * tfjs's wasm backend runs matMul with a transpose flag 20–30× slower than without (XNNPACK packs
 * only plain operands), and the built-in gradient of `matMul` uses those flags. There the frozen
 * weights are also kept transposed (`t`), and hand-written gradients never use the flags; the
 * small LoRA factors are transposed explicitly.
 */
import * as tf from '@tensorflow/tfjs';
import { customOp } from './custom-op.ts';

/** A frozen weight matrix: `raw` [out, in] (GGUF order) and, on wasm, `t` [in, out] for `x·W`. */
export interface FrozenMatrix {
  raw: tf.Tensor2D;
  t: tf.Tensor2D | null;
}

/** Whether the current backend needs plain operands (no transpose flags) to multiply fast. */
export const plainOperandsOnly = (): boolean => tf.getBackend() === 'wasm';

/** Loads a GGUF matrix (row-major [out][in]), with its transpose where the backend needs it. */
export function frozenMatrix(data: Float32Array, out: number, inDim: number): FrozenMatrix {
  const raw = tf.tensor2d(data, [out, inDim]);
  return { raw, t: plainOperandsOnly() ? (tf.transpose(raw) as tf.Tensor2D) : null };
}

/** x [T, in] · W → [T, out]; the gradient flows to x only (W is frozen). */
export function frozenLinear(x: tf.Tensor2D, w: FrozenMatrix): tf.Tensor2D {
  const t = w.t;
  if (!t || !plainOperandsOnly()) return tf.matMul(x, w.raw, false, true);
  const op = customOp(([input]) => ({
    value: tf.matMul(input as tf.Tensor2D, t),
    gradFunc: (dy) => [tf.matMul(dy as tf.Tensor2D, w.raw)],
  }));
  return op(x) as tf.Tensor2D;
}

/**
 * The LoRA update `scale·(x·A)·B` for x [T, in], A [in, r], B [r, out]. Gradients to all three;
 * on wasm only [T, r]- and [r, ·]-sized tensors are transposed.
 */
export function loraDelta(x: tf.Tensor2D, a: tf.Tensor2D, b: tf.Tensor2D, scale: number): tf.Tensor2D {
  if (!plainOperandsOnly()) return tf.mul(tf.matMul(tf.matMul(x, a), b), scale);
  const op = customOp(([xi, ai, bi], save) => {
    const u = tf.matMul(xi as tf.Tensor2D, ai as tf.Tensor2D);
    save([xi, ai, bi, u]);
    return {
      value: tf.mul(tf.matMul(u, bi as tf.Tensor2D), scale),
      gradFunc: (dyIn, saved) => {
        const [sx, sa, sb, su] = saved as [tf.Tensor2D, tf.Tensor2D, tf.Tensor2D, tf.Tensor2D];
        const dy = tf.mul(dyIn as tf.Tensor2D, scale) as tf.Tensor2D;
        const du = tf.matMul(dy, tf.transpose(sb) as tf.Tensor2D); // [T, r]
        const dB = tf.matMul(tf.transpose(su) as tf.Tensor2D, dy); // [r, out]
        const dAt = tf.matMul(tf.transpose(du) as tf.Tensor2D, sx); // [r, in] = (xᵀ·du)ᵀ
        const dx = tf.matMul(du, tf.transpose(sa) as tf.Tensor2D); // [T, in]
        return [dx, tf.transpose(dAt), dB];
      },
    };
  });
  return op(x, a, b) as tf.Tensor2D;
}
