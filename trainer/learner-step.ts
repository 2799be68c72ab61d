/**
 * One learner step on a batch of samples (docs/design/algorithms.md §4–6b), for any TrainablePolicy:
 *
 * 1. π_old is the current weights' log-prob of each response token, taken from the same forward
 *    pass the gradient comes from (one update per batch, so they coincide); the mean
 *    |rollout − π_old| drift is reported over samples whose rollout log-probs are the model's own
 *    (`exactLogprobs`) — for a model served by llama.cpp it is the engine/trainer mismatch;
 * 2. per token `A_t = w_opd·(teacher_lp_t − old_lp_t) + w_rl·r`, the teacher term exactly 0 for a
 *    sample without a teacher. A deferred teacher (`teacherPromptTokens`) is scored here, with the
 *    same weights as π_old, so the term holds only the hint's effect. A sample with teacher top-k
 *    gets the top-k reverse KL (weighted by w_opd) instead. Advantages are scaled by the sample's
 *    `weight` and by a truncated importance weight `min(tisCap, π_old/π_rollout)` per token: for
 *    stale samples kept under `staleness: 'tis'`, and (`mismatchTis`, on unless `tisCap` is 0) for
 *    every exact sample, which corrects the serving engine's quantized log-probs as slime does.
 *    Every log-prob is taken under the distribution the sample was drawn from (its temperature
 *    and top-p; step/sampled-logits.ts);
 * 3. PPO-clipped surrogate (token-mean per sample, mean over samples) + klCoef·KL(π‖π_ref)
 *    − entropyCoef·H, global-norm gradient clipping, one AdamW update;
 * 4. the update's KL(π_old‖π_new) is measured; beyond `maxKl` the update is halved (twice at
 *    most), and undone if it still moves the policy too far (`rejected` says why).
 *
 * Samples longer than the policy's pass lose the middle of their prompt, never its task (`cutTokens`); the batch
 * is walked in micro-batches of at most `microBatchTokens` tokens, gradients summed, the event loop
 * given a turn after each. The stages
 * are in trainer/step/: the plan, each micro-batch's inputs and gradient, the update.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import * as tf from '@tensorflow/tfjs';
import type { TransformerModel } from '../policy/index.ts';
import type { AdamW } from './adamw.ts';
import { applyUpdate } from './step/apply-update.ts';
import { disposeMicro, prepareMicro, type Micro, type RolloutStats } from './step/micro-batch.ts';
import { microGradient, surrogateOf } from './step/micro-gradient.ts';
import { planStep } from './step/step-plan.ts';
import { EMPTY_METRICS, type LearnerStepOptions, type StepMetrics, type StepSample } from './step/step-types.ts';
import { BuiltinTrainable, type TrainablePolicy } from './trainable-policy.ts';

export { DISTRIBUTION_TOP_K, type LearnerStepOptions, type StepMetrics, type StepSample } from './step/step-types.ts';
export { byContent, packBatch } from './step/step-rows.ts';

/** One PPO/OPD step on `items`, in content order; the policy's variables are updated in place. */
export async function learnerStep(
  model: TrainablePolicy | TransformerModel,
  optimizer: AdamW,
  items: StepSample[],
  opts: LearnerStepOptions = {},
): Promise<StepMetrics> {
  const policy: TrainablePolicy = 'microBatchTokens' in model ? model : new BuiltinTrainable(model, opts.reference ?? null);
  const plan = planStep(policy, items, opts);
  if (plan.N === 0) return { ...EMPTY_METRICS, skipped: plan.skipped };
  const surrogate = surrogateOf(opts);
  const micros: Micro[] = [];
  const gradSum: tf.Tensor[] = policy.variables.map((v) => tf.zerosLike(v));
  const rollout: RolloutStats = { drift: 0, k3: 0, driftTokens: 0, tisSum: 0, tisTokens: 0, tisCapped: 0 };
  let loss = 0;
  let clipTokens = 0;
  let entropy = 0;
  try {
    for (const group of plan.groups) {
      const pass = policy.forward(group.map((r) => r.seq));
      try {
        const { micro, stats } = await prepareMicro(policy, group, pass, plan, opts);
        micros.push(micro);
        for (const k of Object.keys(rollout) as Array<keyof RolloutStats>) rollout[k] += stats[k];
        const g = microGradient(pass, micro, surrogate, opts);
        for (let i = 0; i < gradSum.length; i++) {
          const next = tf.add(gradSum[i], g.grads[i]);
          gradSum[i].dispose();
          gradSum[i] = next;
        }
        tf.dispose(g.grads);
        loss += g.loss;
        clipTokens += g.clipFraction * group.reduce((n, r) => n + r.mask.reduce((a, b) => a + b, 0), 0);
        entropy += g.entropy * micro.share;
      } finally {
        pass.dispose();
      }
      // A micro-batch's ops run synchronously: the event loop gets a turn between them, so the
      // services sharing the process (consumers' heartbeats, the gateway) are not starved for a whole step.
      await nextTurn();
    }
    const u = await applyUpdate(policy, optimizer, gradSum, { micros, surrogate, tokens: plan.tokens, loss, lrScale: plan.lrScale }, opts);
    if (!u.rejected) opts.rewardBaseline?.observe(plan.withTokens.map((r) => r.sample));
    return {
      loss,
      lossAfter: u.lossAfter,
      meanReward: plan.withTokens.reduce((a, r) => a + r.sample.reward, 0) / plan.N,
      kl: u.kl,
      klRef: u.klRef,
      clipFraction: clipTokens / Math.max(1, plan.tokens),
      logprobDrift: rollout.driftTokens > 0 ? rollout.drift / rollout.driftTokens : 0,
      mismatchKl: rollout.driftTokens > 0 ? rollout.k3 / rollout.driftTokens : 0,
      entropy,
      gradNorm: u.gradNorm,
      samples: plan.N,
      tokens: plan.tokens,
      skipped: plan.skipped,
      tisMean: rollout.tisTokens > 0 ? rollout.tisSum / rollout.tisTokens : 1,
      tisTruncated: rollout.tisTokens > 0 ? rollout.tisCapped / rollout.tisTokens : 0,
      cutTokens: plan.rows.reduce((n, r) => n + r.cut, 0),
      halvings: u.halvings,
      rejected: u.rejected,
      lrScale: plan.lrScale,
    };
  } finally {
    policy.endStep?.();
    tf.dispose(gradSum);
    micros.forEach(disposeMicro);
  }
}
