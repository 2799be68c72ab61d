/**
 * Matrix products of the LoRA trainer, with hand-written gradients. tfjs's wasm backend runs
 * matMul with a transpose flag 20–30× slower than without (XNNPACK packs only plain operands),
 * and the built-in gradient of `matMul` uses those flags. These ops never do: frozen weights are
 * kept in both orientations, and the small LoRA factors are transposed explicitly.
 */
import * as tf from '@tensorflow/tfjs';
import { customOp } from './custom-op.ts';

/** A frozen weight matrix in both orientations: `t` [in, out] for `x·W`, `raw` [out, in] (GGUF order) for `dy·Wᵀ`. */
export interface FrozenMatrix {
  t: tf.Tensor2D;
  raw: tf.Tensor2D;
}

/** Loads a GGUF matrix (row-major [out][in]) into both orientations. */
export function frozenMatrix(data: Float32Array, out: number, inDim: number): FrozenMatrix {
  const raw = tf.tensor2d(data, [out, inDim]);
  return { raw, t: tf.transpose(raw) as tf.Tensor2D };
}

/** x [T, in] · W → [T, out]; the gradient flows to x only (W is frozen). */
export function frozenLinear(x: tf.Tensor2D, w: FrozenMatrix): tf.Tensor2D {
  const op = customOp(([input]) => ({
    value: tf.matMul(input as tf.Tensor2D, w.t),
    gradFunc: (dy) => [tf.matMul(dy as tf.Tensor2D, w.raw)],
  }));
  return op(x) as tf.Tensor2D;
}

/**
 * The LoRA update `scale·(x·A)·B` for x [T, in], A [in, r], B [r, out]. Gradients to all three;
 * only [T, r]- and [r, ·]-sized tensors are transposed.
 */
export function loraDelta(x: tf.Tensor2D, a: tf.Tensor2D, b: tf.Tensor2D, scale: number): tf.Tensor2D {
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
