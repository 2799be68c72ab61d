import * as tf from '@tensorflow/tfjs';
import { customOp } from './custom-op.ts';
import { plainOperandsOnly } from './frozen-linear.ts';

/**
 * Rows of x [N, d] by index. On wasm the gradient is a plain product with a one-hot matrix
 * (gather's own gradient needs a kernel the wasm backend lacks).
 */
export function selectRows(x: tf.Tensor2D, positions: number[]): tf.Tensor2D {
  if (!plainOperandsOnly()) return tf.gather(x, tf.tensor1d(positions, 'int32'));
  const N = x.shape[0];
  const R = positions.length;
  const op = customOp(([xi]) => ({
    value: tf.gather(xi as tf.Tensor2D, tf.tensor1d(positions, 'int32')),
    gradFunc: (dy) => {
      const onehotT = new Float32Array(N * R);
      positions.forEach((p, r) => (onehotT[p * R + r] = 1));
      return [tf.matMul(tf.tensor2d(onehotT, [N, R]), dy as tf.Tensor2D)];
    },
  }));
  return op(x) as tf.Tensor2D;
}
