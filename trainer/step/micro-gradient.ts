/**
 * The loss of a micro-batch and its gradient: the PPO-clipped surrogate (per sample or per token)
 * plus the teacher top-k reverse KL, the KL to the reference and the entropy bonus, scaled by the
 * micro-batch's share of the batch; dL/dlogits goes back through the pass to the adapter.
 */
import * as tf from '@tensorflow/tfjs';
import { sampleTokenMean } from '../losses/masked-mean.ts';
import { ppoClippedLoss } from '../losses/ppo-clipped-loss.ts';
import { klLowVar, tokenEntropy } from '../losses/regularizers.ts';
import { topKReverseKl } from '../losses/top-k-reverse-kl.ts';
import type { TrainPass } from '../trainable-policy.ts';
import type { Micro } from './micro-batch.ts';
import { nucleiOf, sampledRows } from './sampled-logits.ts';
import { padLogits, pick } from './step-rows.ts';
import type { LearnerStepOptions } from './step-types.ts';

/** The surrogate (+ top-k KL) of a micro-batch's logits, and the share of clipped tokens. */
export type Surrogate = (m: Micro, logits: tf.Tensor3D, logp: tf.Tensor2D) => { total: tf.Scalar; clip: tf.Scalar };

export function surrogateOf(opts: LearnerStepOptions): Surrogate {
  return (m, logits, logp) => {
    const pg = ppoClippedLoss({
      logp,
      logpOld: m.oldLp,
      advantages: m.adv,
      mask: m.mask,
      clipLow: opts.clipLow,
      clipHigh: opts.clipHigh,
      aggregate: opts.tokenMean === 'batch' ? 'token' : 'sample',
    });
    let total: tf.Scalar = pg.loss;
    if (m.tk) {
      const kl = topKReverseKl({ studentLogits: logits, teacherTopKIds: m.tk.ids, teacherTopKLogprobs: m.tk.lps, mask: m.tk.mask });
      total = tf.add(total, tf.mul(opts.wOpd ?? 1, kl.loss));
    }
    return { total, clip: pg.clipFraction };
  };
}

/** What a micro-batch's backward pass gives: the adapter's gradients and the loss's parts. */
export interface MicroGradient {
  grads: tf.Tensor[];
  /** The micro-batch's loss, scaled by its share. */
  loss: number;
  clipFraction: number;
  entropy: number;
}

export function microGradient(pass: TrainPass, micro: Micro, surrogate: Surrogate, opts: LearnerStepOptions): MicroGradient {
  const R = micro.targets.shape[1];
  const klCoef = opts.klCoef ?? 0;
  const entropyCoef = opts.entropyCoef ?? 0;
  let clip = 0;
  let entropy = 0;
  let loss = 0;
  // The nucleus (top-p) has no gradient: it is taken before the tape.
  const nuclei = nucleiOf(pass.logits, micro.rows);
  // tf.grads leaves the loss it differentiated alive: the tidy frees it and keeps the gradients.
  const dl = tf.tidy(() =>
    tf.grads((...ls: tf.Tensor[]) => {
      const logits = padLogits(sampledRows(ls as tf.Tensor2D[], micro.rows, nuclei), R);
      const logp = pick(logits, micro.targets, micro.mask);
      const s = surrogate(micro, logits, logp);
      let total = s.total;
      clip = s.clip.dataSync()[0];
      if (klCoef !== 0) total = tf.add(total, tf.mul(klCoef, sampleTokenMean(klLowVar(logp, micro.refLp!, micro.mask), micro.mask)));
      const e = sampleTokenMean(tokenEntropy(logits, micro.mask), micro.mask);
      entropy = e.dataSync()[0];
      if (entropyCoef !== 0) total = tf.sub(total, tf.mul(entropyCoef, e));
      const scaled = tf.mul(total, micro.share) as tf.Scalar;
      loss = scaled.dataSync()[0];
      return scaled;
    })(pass.logits),
  );
  tf.dispose(nuclei.filter((n): n is tf.Tensor2D => n !== null));
  const grads = pass.backward(dl as tf.Tensor2D[]);
  tf.dispose(dl);
  return { grads, loss, clipFraction: clip, entropy };
}
