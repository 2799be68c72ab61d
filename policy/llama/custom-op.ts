import * as tf from '@tensorflow/tfjs';

export interface CustomOpResult {
  value: tf.Tensor;
  /** Gradients of the inputs, in order, for the upstream gradient dy. */
  gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => tf.Tensor[];
}

/** `tf.customGrad` with plain typing: the inputs as an array, `save` kept apart. */
export function customOp(f: (inputs: tf.Tensor[], save: tf.GradSaveFunc) => CustomOpResult): (...inputs: tf.Tensor[]) => tf.Tensor {
  const op = tf.customGrad(((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const save = args.pop() as tf.GradSaveFunc;
    const r = f(args as tf.Tensor[], save);
    return { value: r.value, gradFunc: (dy: tf.Tensor | tf.Tensor[], saved: tf.Tensor[]) => r.gradFunc(dy as tf.Tensor, saved) };
  }) as Parameters<typeof tf.customGrad>[0]);
  return (...inputs: tf.Tensor[]) => op(...inputs);
}
