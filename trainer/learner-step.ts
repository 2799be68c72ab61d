/**
 * One learner step on a batch of samples (ALGORITHMS.md §4–5):
 *
 * 1. π_old is recomputed with the current weights (not taken from the rollout), and the mean
 *    |rollout − recomputed| log-prob drift is reported;
 * 2. per token `A_t = w_opd·(teacher_lp_t − old_lp_t) + w_rl·r`, the teacher term exactly 0 for a
 *    sample without teacher log-probs; a sample with teacher top-k log-probs gets the top-k reverse
 *    KL (weighted by w_opd) instead of the per-token OPD term; advantages are scaled by the
 *    sample's `weight` and, for stale samples kept under `staleness: 'tis'`, by the truncated
 *    importance weight `min(tisCap, π_old/π_rollout)` per token;
 * 3. PPO-clipped surrogate (token-mean per sample, mean over samples) + klCoef·KL(π‖π_ref)
 *    − entropyCoef·H, global-norm gradient clipping, one AdamW update.
 */
import * as tf from '@tensorflow/tfjs';
import type { Sample } from '../schemas/index.ts';
import type { AdamW } from './adamw.ts';
import { combinedAdvantages } from './losses/advantages.ts';
import { tokenMean } from './losses/masked-mean.ts';
import { ppoClippedLoss } from './losses/ppo-clipped-loss.ts';
import { klLowVar, tokenEntropy } from './losses/regularizers.ts';
import { sampleTokenMean } from './losses/masked-mean.ts';
import { topKReverseKl } from './losses/top-k-reverse-kl.ts';
import type { TransformerModel } from '../policy/builtin/model.ts';

export interface LearnerStepOptions {
  /** @default 1 */
  wOpd?: number;
  /** @default 1 */
  wRl?: number;
  /** @default 0.2 */
  clipLow?: number;
  /** @default 0.28 */
  clipHigh?: number;
  /** Weight of the k3 KL to `reference`. @default 0 */
  klCoef?: number;
  /** Weight of the entropy bonus. @default 0 */
  entropyCoef?: number;
  /** Frozen reference policy (needed when klCoef ≠ 0). */
  reference?: TransformerModel;
  /** Cap of the truncated importance weight of stale samples. @default 2 */
  tisCap?: number;
  /** Learning rate of this step (default: the optimizer's). */
  lr?: number;
}

export interface StepSample {
  sample: Sample;
  /** Older than the staleness bound but kept ('tis' mode): weighted by a truncated IS ratio. */
  stale?: boolean;
}

export interface StepMetrics {
  /** The loss the gradient was taken of (surrogate + regularizers), before the update. */
  loss: number;
  /** The same surrogate (+ top-k KL) after the update, against the same π_old: below `loss` when the step helped. */
  lossAfter: number;
  /** Mean reward over the samples with trained tokens. */
  meanReward: number;
  /** k3 KL between π_old and the updated policy, token mean (how far the step moved). */
  kl: number;
  /** k3 KL to the reference (0 without one). */
  klRef: number;
  clipFraction: number;
  /** Mean |rollout − recomputed π_old| log-prob over trained tokens. */
  logprobDrift: number;
  entropy: number;
  gradNorm: number;
  /** Samples that had at least one trained token. */
  samples: number;
  /** Trained tokens. */
  tokens: number;
  /** Samples skipped because they do not fit the model (longer than its context). */
  skipped: number;
}

interface Packed {
  x: number[][];
  y: number[][];
  mask: number[][];
  rollout: number[][];
  teacher: number[][];
  hasTeacher: number[];
  reward: number[];
  weight: number[];
  stale: number[];
  topK: { ids: number[][][]; lps: number[][][]; has: number[] } | null;
  samples: Sample[];
  skipped: number;
}

/** Samples → right-padded [B, T] arrays; response token i of a sample sits at target position P−1+i. */
export function packBatch(items: StepSample[], contextLength: number): Packed {
  const ok = items.filter(
    ({ sample: s }) => s.tokens.length <= contextLength && s.tokens.length === s.promptLength + s.responseLength && s.promptLength >= 1,
  );
  const T = Math.max(1, ...ok.map(({ sample: s }) => s.tokens.length - 1));
  const K = Math.max(0, ...ok.map(({ sample: s }) => s.teacherTopK?.[0]?.ids.length ?? 0));
  const p: Packed = {
    x: [],
    y: [],
    mask: [],
    rollout: [],
    teacher: [],
    hasTeacher: [],
    reward: [],
    weight: [],
    stale: [],
    topK: K > 0 ? { ids: [], lps: [], has: [] } : null,
    samples: [],
    skipped: items.length - ok.length,
  };
  for (const { sample: s, stale } of ok) {
    const row = (fill: number): number[] => new Array<number>(T).fill(fill);
    const x = row(0);
    const y = row(0);
    const mask = row(0);
    const rollout = row(0);
    const teacher = row(0);
    for (let t = 0; t < s.tokens.length - 1; t++) {
      x[t] = s.tokens[t];
      y[t] = s.tokens[t + 1];
    }
    const P = s.promptLength;
    for (let i = 0; i < s.responseLength; i++) {
      const t = P - 1 + i;
      mask[t] = s.lossMask[i] ?? 0;
      rollout[t] = s.rolloutLogprobs[i] ?? 0;
      teacher[t] = s.teacherLogprobs?.[i] ?? 0;
    }
    p.x.push(x);
    p.y.push(y);
    p.mask.push(mask);
    p.rollout.push(rollout);
    p.teacher.push(teacher);
    const hasTopK =
      K > 0 && s.teacherTopK !== null && s.teacherTopK.length === s.responseLength && s.teacherTopK.every((e) => e.ids.length === K);
    p.hasTeacher.push(s.teacherLogprobs !== null && !hasTopK ? 1 : 0);
    p.reward.push(s.reward);
    p.weight.push(s.weight);
    p.stale.push(stale ? 1 : 0);
    if (p.topK) {
      const ids: number[][] = [];
      const lps: number[][] = [];
      for (let t = 0; t < T; t++) {
        const i = t - (P - 1);
        const e = hasTopK && i >= 0 && i < s.responseLength ? s.teacherTopK![i] : null;
        // Padding rows: K distinct ids with negligible mass (they are masked out anyway).
        ids.push(e ? e.ids : Array.from({ length: K }, (_, k) => k));
        lps.push(e ? e.logprobs : new Array<number>(K).fill(-30));
      }
      p.topK.ids.push(ids);
      p.topK.lps.push(lps);
      p.topK.has.push(hasTopK ? 1 : 0);
    }
    p.samples.push(s);
  }
  return p;
}

function pickLogprobs(logits: tf.Tensor3D, targets: tf.Tensor2D, vocab: number, mask: tf.Tensor2D): tf.Tensor2D {
  return tf.tidy(() => {
    const picked = tf.sum(tf.mul(tf.logSoftmax(logits), tf.oneHot(targets, vocab)), -1) as tf.Tensor2D;
    return tf.where(tf.greater(mask, 0), picked, tf.zerosLike(picked)) as tf.Tensor2D;
  });
}

/** One PPO/OPD step on `items`; returns the batch's metrics. The model's weights are updated in place. */
export async function learnerStep(
  model: TransformerModel,
  optimizer: AdamW,
  items: StepSample[],
  opts: LearnerStepOptions = {},
): Promise<StepMetrics> {
  const p = packBatch(items, model.config.contextLength);
  const empty: StepMetrics = {
    loss: 0,
    lossAfter: 0,
    meanReward: 0,
    kl: 0,
    klRef: 0,
    clipFraction: 0,
    logprobDrift: 0,
    entropy: 0,
    gradNorm: 0,
    samples: 0,
    tokens: 0,
    skipped: p.skipped,
  };
  const trained = p.mask.map((r) => r.reduce((a, b) => a + b, 0));
  const tokens = trained.reduce((a, b) => a + b, 0);
  if (p.samples.length === 0 || tokens === 0) return { ...empty, samples: 0 };
  const V = model.config.vocabSize;
  const wOpd = opts.wOpd ?? 1;
  const klCoef = opts.klCoef ?? 0;
  const entropyCoef = opts.entropyCoef ?? 0;
  if (klCoef !== 0 && !opts.reference) throw new Error('klCoef ≠ 0 needs a reference model');

  const x = tf.tensor2d(p.x, undefined, 'int32');
  const y = tf.tensor2d(p.y, undefined, 'int32');
  const mask = tf.tensor2d(p.mask, undefined, 'float32');
  const keep: tf.Tensor[] = [x, y, mask];
  try {
    // 1. π_old with the current weights, and drift against the rollout.
    const oldLp = tf.tidy(() => model.tokenLogprobs(x, y, mask));
    const refLp = klCoef !== 0 ? tf.tidy(() => opts.reference!.tokenLogprobs(x, y, mask)) : null;
    keep.push(oldLp, ...(refLp ? [refLp] : []));
    const rollout = tf.tensor2d(p.rollout, undefined, 'float32');
    keep.push(rollout);
    const drift = tf.tidy(() => tokenMean(tf.abs(tf.sub(rollout, oldLp)) as tf.Tensor2D, mask));
    const logprobDrift = (await drift.data())[0];
    drift.dispose();

    // 2. Advantages.
    const anyTeacher = p.hasTeacher.some((h) => h === 1);
    const teacherLp = anyTeacher ? tf.tensor2d(p.teacher, undefined, 'float32') : null;
    if (teacherLp) keep.push(teacherLp);
    const adv = tf.tidy(() => {
      let a = combinedAdvantages({ teacherLp, hasTeacher: p.hasTeacher, oldLp, reward: p.reward, wOpd, wRl: opts.wRl ?? 1, mask });
      a = tf.mul(a, tf.reshape(tf.tensor1d(p.weight, 'float32'), [-1, 1]));
      if (p.stale.some((s) => s === 1)) {
        const tis = tf.minimum(tf.exp(tf.sub(oldLp, rollout)), opts.tisCap ?? 2);
        const isStale = tf.greater(tf.reshape(tf.tensor1d(p.stale, 'float32'), [-1, 1]), 0);
        a = tf.mul(a, tf.where(tf.logicalAnd(isStale, tf.onesLike(a).asType('bool')), tis, tf.onesLike(a)));
      }
      return a as tf.Tensor2D;
    });
    keep.push(adv);
    const topK = p.topK && p.topK.has.some((h) => h === 1) ? p.topK : null;
    const tk = topK
      ? {
          ids: tf.tensor3d(topK.ids, undefined, 'int32'),
          lps: tf.tensor3d(topK.lps, undefined, 'float32'),
          mask: tf.tidy(() => tf.mul(mask, tf.reshape(tf.tensor1d(topK.has, 'float32'), [-1, 1])) as tf.Tensor2D),
        }
      : null;
    if (tk) keep.push(tk.ids, tk.lps, tk.mask);

    // 3. Loss and update.
    let clipFraction = 0;
    let entropy = 0;
    const surrogate = (logits: tf.Tensor3D, logp: tf.Tensor2D): { total: tf.Scalar; clip: tf.Scalar } => {
      const pg = ppoClippedLoss({ logp, logpOld: oldLp, advantages: adv, mask, clipLow: opts.clipLow, clipHigh: opts.clipHigh });
      let total: tf.Scalar = pg.loss;
      if (tk)
        total = tf.add(
          total,
          tf.mul(wOpd, topKReverseKl({ studentLogits: logits, teacherTopKIds: tk.ids, teacherTopKLogprobs: tk.lps, mask: tk.mask }).loss),
        );
      return { total, clip: pg.clipFraction };
    };
    const { value, grads } = tf.variableGrads(() => {
      const logits = model.forwardLogits(x);
      const logp = pickLogprobs(logits, y, V, mask);
      const s = surrogate(logits, logp);
      let total = s.total;
      clipFraction = s.clip.dataSync()[0];
      if (klCoef !== 0) total = tf.add(total, tf.mul(klCoef, sampleTokenMean(klLowVar(logp, refLp!, mask), mask)));
      const ent = sampleTokenMean(tokenEntropy(logits, mask), mask);
      entropy = ent.dataSync()[0];
      if (entropyCoef !== 0) total = tf.sub(total, tf.mul(entropyCoef, ent));
      return total as tf.Scalar;
    }, model.variables);
    const loss = (await value.data())[0];
    const gradNorm = optimizer.apply(model.variables, grads, opts.lr);
    tf.dispose([value, ...Object.values(grads)]);

    // After the update: the same surrogate against the same π_old, and how far the policy moved.
    const after = tf.tidy(() => {
      const logits = model.forwardLogits(x);
      const logp = pickLogprobs(logits, y, V, mask);
      const kl = tokenMean(klLowVar(logp, oldLp, mask), mask);
      const klRef = refLp ? tokenMean(klLowVar(logp, refLp, mask), mask) : tf.scalar(0);
      return tf.stack([surrogate(logits, logp).total, kl, klRef]);
    });
    const [lossAfter, kl, klRef] = Array.from(await after.data());
    after.dispose();
    const withTokens = p.samples.map((s, i) => ({ s, n: trained[i] })).filter((e) => e.n > 0);
    return {
      loss,
      lossAfter,
      meanReward: withTokens.reduce((a, e) => a + e.s.reward, 0) / Math.max(1, withTokens.length),
      kl,
      klRef,
      clipFraction,
      logprobDrift,
      entropy,
      gradNorm,
      samples: withTokens.length,
      tokens,
      skipped: p.skipped,
    };
  } finally {
    tf.dispose(keep);
  }
}
