/**
 * The update: one AdamW step on the summed gradients (at the step's rate, scaled for pleased
 * users); then KL(π_old‖π_new) and the surrogate after it are measured, and beyond `maxKl` the
 * update is halved (twice at most), then undone if it still moves the policy too far.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import * as tf from '@tensorflow/tfjs';
import type { AdamW } from '../adamw.ts';
import { tokenMean } from '../losses/masked-mean.ts';
import { klLowVar } from '../losses/regularizers.ts';
import type { TrainablePolicy } from '../trainable-policy.ts';
import type { Micro } from './micro-batch.ts';
import type { Surrogate } from './micro-gradient.ts';
import { sampledRows } from './sampled-logits.ts';
import { padLogits, pick } from './step-rows.ts';
import type { LearnerStepOptions } from './step-types.ts';

export interface UpdateResult {
  gradNorm: number;
  kl: number;
  klRef: number;
  lossAfter: number;
  halvings: number;
  /** Why the update was undone, or null. */
  rejected: string | null;
}

export async function applyUpdate(
  policy: TrainablePolicy,
  optimizer: AdamW,
  gradSum: tf.Tensor[],
  step: { micros: Micro[]; surrogate: Surrogate; tokens: number; loss: number; lrScale: number },
  opts: LearnerStepOptions,
): Promise<UpdateResult> {
  const vars = policy.variables;
  const maxKl = opts.maxKl ?? Number.POSITIVE_INFINITY;
  const snapshot = Number.isFinite(maxKl) ? vars.map((v) => tf.clone(v)) : null;
  const grads: Record<string, tf.Tensor> = {};
  vars.forEach((v, i) => (grads[v.name] = gradSum[i]));
  const gradNorm = optimizer.apply(vars, grads, (opts.lr ?? optimizer.options.lr) * step.lrScale);
  let after = { kl: 0, klRef: 0, lossAfter: 0 };
  let halvings = 0;
  let rejected: string | null = null;
  try {
    if (opts.measureAfter !== false || snapshot) {
      const again = () => measure(policy, step.micros, step.surrogate, step.tokens);
      after = await again();
      while (snapshot && after.kl > maxKl && halvings < 2) {
        halvings++;
        vars.forEach((v, i) => {
          const half = tf.tidy(() => tf.add(snapshot[i], tf.mul(tf.sub(v, snapshot[i]), 0.5)));
          v.assign(half);
          half.dispose();
        });
        after = await again();
      }
      if (snapshot && after.kl > maxKl) {
        rejected = `KL(π_old‖π_new) ${after.kl.toFixed(4)} > ${maxKl} after ${halvings} halvings: update undone`;
        vars.forEach((v, i) => v.assign(snapshot[i]));
        after = { kl: 0, klRef: after.klRef, lossAfter: step.loss };
      }
    }
  } finally {
    tf.dispose(snapshot ?? []);
  }
  return { gradNorm, ...after, halvings, rejected };
}

/** KL(π_old‖π_new), the surrogate and the KL to the reference, after the update (token-weighted). */
async function measure(
  policy: TrainablePolicy,
  micros: Micro[],
  surrogate: Surrogate,
  tokens: number,
): Promise<{ kl: number; klRef: number; lossAfter: number }> {
  let kl = 0;
  let klRef = 0;
  let lossAfter = 0;
  for (const m of micros) {
    const R = m.targets.shape[1];
    const logits = policy.logits(m.rows.map((r) => r.seq));
    const t = tf.tidy(() => {
      const padded = padLogits(sampledRows(logits, m.rows), R);
      const logp = pick(padded, m.targets, m.mask);
      const n = tf.sum(m.mask);
      return tf.stack([
        tf.mul(tokenMean(klLowVar(logp, m.oldLp, m.mask), m.mask), n),
        m.refLp ? tf.mul(tokenMean(klLowVar(logp, m.refLp, m.mask), m.mask), n) : tf.scalar(0),
        tf.mul(surrogate(m, padded, logp).total, m.share),
      ]);
    });
    tf.dispose(logits);
    const [a, b, c] = Array.from(await t.data());
    t.dispose();
    kl += a;
    klRef += b;
    lossAfter += c;
    // As in the step's own micro-batches: the process's other services get a turn between passes.
    await nextTurn();
  }
  return { kl: kl / Math.max(1, tokens), klRef: klRef / Math.max(1, tokens), lossAfter };
}
