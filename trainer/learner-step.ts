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
 *    stale samples kept under `staleness: 'tis'`, and (`mismatchTis`) for every exact sample,
 *    which corrects the serving engine's quantized log-probs as slime does;
 * 3. PPO-clipped surrogate (token-mean per sample, mean over samples) + klCoef·KL(π‖π_ref)
 *    − entropyCoef·H, global-norm gradient clipping, one AdamW update;
 * 4. the update's KL(π_old‖π_new) is measured; beyond `maxKl` the update is halved (twice at
 *    most), and undone if it still moves the policy too far (`rejected` says why).
 *
 * Samples longer than the policy's pass are cut from the prompt's left (`cutTokens`); the batch
 * is walked in micro-batches of at most `microBatchTokens` tokens, gradients summed.
 */
import * as tf from '@tensorflow/tfjs';
import type { TransformerModel } from '../policy/index.ts';
import type { Sample } from '../schemas/index.ts';
import type { AdamW } from './adamw.ts';
import { combinedAdvantages, type OpdAdvantage } from './losses/advantages.ts';
import { sampleTokenMean, tokenMean } from './losses/masked-mean.ts';
import { ppoClippedLoss } from './losses/ppo-clipped-loss.ts';
import { klLowVar, tokenEntropy } from './losses/regularizers.ts';
import { topKReverseKl } from './losses/top-k-reverse-kl.ts';
import type { RewardBaseline } from './reward-baseline.ts';
import { BuiltinTrainable, type SequenceRow, type TrainablePolicy } from './trainable-policy.ts';

export interface LearnerStepOptions {
  /** @default 1 */
  wOpd?: number;
  /** @default 1 */
  wRl?: number;
  /** @default 0.2 */
  clipLow?: number;
  /** @default 0.28 */
  clipHigh?: number;
  /** Weight of the k3 KL to the reference policy (the base). @default 0 */
  klCoef?: number;
  /** Weight of the entropy bonus. @default 0 */
  entropyCoef?: number;
  /** The built-in model's frozen reference (needed when klCoef ≠ 0 with a TransformerModel). */
  reference?: TransformerModel;
  /** Cap of the truncated importance weights. @default 2 */
  tisCap?: number;
  /** Truncated importance weights on every exact sample (engine/trainer mismatch). @default false */
  mismatchTis?: boolean;
  /** Learning rate of this step (default: the optimizer's). */
  lr?: number;
  /** Measure the surrogate and KL after the update (one more forward pass). @default true */
  measureAfter?: boolean;
  /** Largest KL(π_old‖π_new) a step may make before it is halved, then undone. @default Infinity */
  maxKl?: number;
  /**
   * Each user's running mean reward, subtracted from their rewards in the RL term, and fed with
   * the rewards of every step that is applied. @default undefined (the reward as it is)
   */
  rewardBaseline?: RewardBaseline;
  /**
   * Smaller steps for pleased users: the step's learning rate is scaled by
   * `1 − pleasedDamping · mean_i max(0, m_i)`, where `m_i` is the running mean reward (in
   * {@link rewardBaseline}) of the user of sample `i` before the step. Why: runs that had pleased
   * their user fell back later as steps kept coming (results/eval/real-model/README.md). The rate, not the loss, is
   * scaled, since Adam undoes a scaled loss. Needs `rewardBaseline`. In [0, 1]. @default 0
   */
  pleasedDamping?: number;
  /**
   * Measure a deferred teacher's hint effect on the frozen base (the reference: adapter off),
   * `A_t = log π_ref(a_t | s + hint) − log π_ref(a_t | s)`, instead of on the weights being
   * trained. On the current weights the term follows the policy wherever it drifts; on the base
   * it stays what the hint meant to the model before training. Needs a reference. @default false
   */
  opdOnReference?: boolean;
  /**
   * How the OPD term is used (trainer/losses/advantages.ts). With `'distribution'` a deferred
   * teacher's whole next-token distribution (its top {@link DISTRIBUTION_TOP_K} ids and a tail bin)
   * is matched by reverse KL at each response position, instead of its log-prob of the sampled
   * token. @default 'raw'
   */
  opdAdvantage?: OpdAdvantage;
  /**
   * How the per-token loss is averaged: `sample`, the token mean of each sample, then the mean
   * over samples; `batch`, one mean over every trained token of the batch (DAPO's per-token loss,
   * what GRPO rollout batches use: a long trajectory step weighs by its tokens). @default 'sample'
   */
  tokenMean?: 'sample' | 'batch';
}

/** Ids per position of a deferred teacher's distribution under `opdAdvantage: 'distribution'`. */
export const DISTRIBUTION_TOP_K = 32;

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
  /** Mean |rollout − recomputed π_old| log-prob over trained tokens of exact samples. */
  logprobDrift: number;
  entropy: number;
  gradNorm: number;
  /** Samples that had at least one trained token. */
  samples: number;
  /** Trained tokens. */
  tokens: number;
  /** Samples skipped because they do not fit the model (longer than its context). */
  skipped: number;
  /** Mean truncated importance weight over the tokens it applied to (1 when none). */
  tisMean: number;
  /** Share of those tokens whose weight hit the cap. */
  tisTruncated: number;
  /** Prompt tokens cut from the left of samples longer than a pass. */
  cutTokens: number;
  /** How often the update was halved to respect `maxKl`. */
  halvings: number;
  /** Why the update was undone, or null. */
  rejected: string | null;
  /** The factor the step's learning rate was scaled by for pleased users (1 without `pleasedDamping`). */
  lrScale: number;
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
  const ok = items.filter(({ sample: s }) => fits(s, contextLength));
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
    const hasTopK = K > 0 && topKOk(s, K);
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

const fits = (s: Sample, contextLength: number): boolean =>
  s.tokens.length <= contextLength && s.tokens.length === s.promptLength + s.responseLength && s.promptLength >= 1 && s.responseLength >= 1;

const topKOk = (s: Sample, K: number): boolean =>
  s.teacherTopK !== null && s.teacherTopK.length === s.responseLength && s.teacherTopK.every((e) => e.ids.length === K);

/** One sample's row of the step: the (possibly cut) sequence and its response's per-token data. */
interface Row {
  sample: Sample;
  stale: boolean;
  seq: SequenceRow;
  targets: number[];
  mask: number[];
  cut: number;
}

function toRow({ sample: s, stale }: StepSample, maxTokens: number): Row {
  // Keep the whole response and as much of the prompt's end as fits one pass.
  const cut = Math.max(0, s.tokens.length - 1 - maxTokens);
  const ids = s.tokens.slice(cut, -1);
  const P = s.promptLength - cut;
  const R = s.responseLength;
  return {
    sample: s,
    stale: stale === true,
    seq: { ids, positions: Array.from({ length: R }, (_, i) => P - 1 + i) },
    targets: s.tokens.slice(s.promptLength, s.promptLength + R),
    mask: Array.from({ length: R }, (_, i) => s.lossMask[i] ?? 0),
    cut,
  };
}

/** Per-row [R_i, V] logits → [b, R, V] padded with zero rows, and the picked log-probs [b, R]. */
function padLogits(logits: tf.Tensor2D[], R: number): tf.Tensor3D {
  return tf.stack(
    logits.map((l) =>
      l.shape[0] === R
        ? l
        : tf.pad(l, [
            [0, R - l.shape[0]],
            [0, 0],
          ]),
    ),
  ) as tf.Tensor3D;
}

function pick(logits: tf.Tensor3D, targets: tf.Tensor2D, mask: tf.Tensor2D): tf.Tensor2D {
  const V = logits.shape[2];
  const picked = tf.sum(tf.mul(tf.logSoftmax(logits), tf.oneHot(targets, V)), -1) as tf.Tensor2D;
  return tf.where(tf.greater(mask, 0), picked, tf.zerosLike(picked)) as tf.Tensor2D;
}

const padRow = (v: number[], R: number, fill = 0): number[] => [...v, ...new Array<number>(R - v.length).fill(fill)];

/** What a micro-batch keeps from before the update to after it. */
interface Micro {
  rows: Row[];
  /** Share of the batch's samples (with trained tokens) this micro-batch holds. */
  share: number;
  targets: tf.Tensor2D;
  mask: tf.Tensor2D;
  oldLp: tf.Tensor2D;
  adv: tf.Tensor2D;
  refLp: tf.Tensor2D | null;
  tk: { ids: tf.Tensor3D; lps: tf.Tensor3D; mask: tf.Tensor2D } | null;
}

const EMPTY: Omit<StepMetrics, 'skipped'> = {
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
  tisMean: 1,
  tisTruncated: 0,
  cutTokens: 0,
  halvings: 0,
  rejected: null,
  lrScale: 1,
};

/**
 * Orders a batch by what its samples hold. The step's sums and the reward baseline's updates
 * depend on the order of the samples, and samples from several Kafka partitions arrive in an
 * order of their own: sorted, one set of samples makes one update, however it arrived (in-process
 * and `eval --pipeline` parted on exactly this).
 */
export function byContent(a: StepSample, b: StepSample): number {
  const x = a.sample;
  const y = b.sample;
  const n = Math.min(x.tokens.length, y.tokens.length);
  for (let i = 0; i < n; i++) if (x.tokens[i] !== y.tokens[i]) return x.tokens[i] - y.tokens[i];
  return (
    x.tokens.length - y.tokens.length ||
    x.reward - y.reward ||
    compareStrings(x.userId ?? '', y.userId ?? '') ||
    x.weight - y.weight ||
    x.policyVersion - y.policyVersion ||
    Number(a.stale ?? false) - Number(b.stale ?? false)
  );
}

const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** One PPO/OPD step on `items`, in content order; the policy's variables are updated in place. */
export async function learnerStep(
  model: TrainablePolicy | TransformerModel,
  optimizer: AdamW,
  items: StepSample[],
  opts: LearnerStepOptions = {},
): Promise<StepMetrics> {
  const policy: TrainablePolicy = 'microBatchTokens' in model ? model : new BuiltinTrainable(model, opts.reference ?? null);
  const klCoef = opts.klCoef ?? 0;
  const entropyCoef = opts.entropyCoef ?? 0;
  const wOpd = opts.wOpd ?? 1;
  const tisCap = opts.tisCap ?? 2;
  if (klCoef !== 0 && !policy.hasReference) throw new Error('klCoef ≠ 0 needs a reference model');
  const opdOnReference = opts.opdOnReference ?? false;
  if (opdOnReference && !policy.hasReference) throw new Error('opdOnReference needs a reference model');

  const ok = [...items].sort(byContent).filter(({ sample: s }) => fits(s, policy.contextLength));
  const skipped = items.length - ok.length;
  const rows = ok.map((i) => toRow(i, Math.min(policy.microBatchTokens, policy.contextLength)));
  const trained = rows.map((r) => r.mask.reduce((a, b) => a + b, 0));
  const tokens = trained.reduce((a, b) => a + b, 0);
  const withTokens = rows.filter((_, i) => trained[i] > 0);
  if (withTokens.length === 0) return { ...EMPTY, skipped };
  const N = withTokens.length;
  const byToken = opts.tokenMean === 'batch';
  const givenK = Math.max(0, ...rows.map((r) => r.sample.teacherTopK?.[0]?.ids.length ?? 0));
  const distribution = opts.opdAdvantage === 'distribution';
  // A deferred teacher's distribution is cut to the same k as any given one, so that they stack.
  const K = distribution && givenK === 0 && rows.some((r) => r.sample.teacherPromptTokens) ? DISTRIBUTION_TOP_K : givenK;
  // Every sample of the step is measured against its user's mean before the step.
  const baselines = new Map(withTokens.map((r) => [r, opts.rewardBaseline?.of(r.sample) ?? 0]));
  const damping = opts.pleasedDamping ?? 0;
  if (!(damping >= 0 && damping <= 1)) throw new RangeError(`pleasedDamping must be in [0, 1], got ${damping}`);
  if (damping > 0 && !opts.rewardBaseline) throw new Error("pleasedDamping needs a rewardBaseline (the users' running means)");
  const pleased = damping > 0 ? withTokens.reduce((a, r) => a + Math.max(0, opts.rewardBaseline!.meanOf(r.sample)), 0) / N : 0;
  const lrScale = 1 - damping * pleased;

  // Micro-batches of trained rows, by token budget.
  const groups: Row[][] = [];
  let size = Number.POSITIVE_INFINITY;
  for (const r of withTokens) {
    if (groups.length === 0 || size + r.seq.ids.length > policy.microBatchTokens) {
      groups.push([]);
      size = 0;
    }
    groups[groups.length - 1].push(r);
    size += r.seq.ids.length;
  }

  const surrogate = (m: Micro, logits: tf.Tensor3D, logp: tf.Tensor2D): { total: tf.Scalar; clip: tf.Scalar } => {
    const pg = ppoClippedLoss({
      logp,
      logpOld: m.oldLp,
      advantages: m.adv,
      mask: m.mask,
      clipLow: opts.clipLow,
      clipHigh: opts.clipHigh,
      aggregate: byToken ? 'token' : 'sample',
    });
    let total: tf.Scalar = pg.loss;
    if (m.tk)
      total = tf.add(
        total,
        tf.mul(
          wOpd,
          topKReverseKl({ studentLogits: logits, teacherTopKIds: m.tk.ids, teacherTopKLogprobs: m.tk.lps, mask: m.tk.mask }).loss,
        ),
      );
    return { total, clip: pg.clipFraction };
  };

  const micros: Micro[] = [];
  const gradSum: tf.Tensor[] = policy.variables.map((v) => tf.zerosLike(v));
  let loss = 0;
  let clipTokens = 0;
  let entropy = 0;
  let driftSum = 0;
  let driftTokens = 0;
  let tisSum = 0;
  let tisTokens = 0;
  let tisCapped = 0;
  try {
    for (const group of groups) {
      const R = Math.max(...group.map((r) => r.targets.length));
      const pass = policy.forward(group.map((r) => r.seq));
      try {
        const m = tf.tidy(() => {
          const targets = tf.tensor2d(
            group.map((r) => padRow(r.targets, R)),
            [group.length, R],
            'int32',
          );
          const mask = tf.tensor2d(
            group.map((r) => padRow(r.mask, R)),
            [group.length, R],
          );
          const oldLp = pick(padLogits(pass.logits, R), targets, mask);
          return { targets, mask, oldLp };
        });
        // Teacher log-probs: given, or scored here for a deferred teacher (with its top-k under 'distribution').
        const scoredTeachers = await Promise.all(
          group.map(async (r) => {
            const s = r.sample;
            if (s.teacherLogprobs) return { lps: s.teacherLogprobs, topK: null };
            if (!s.teacherPromptTokens) return null;
            return teacherLogprobs(policy, s.teacherPromptTokens, r.targets, opdOnReference, distribution ? K : 0);
          }),
        );
        const teacherRows = scoredTeachers.map((t) => t?.lps ?? null);
        const topKOf = group.map((r, i) => (K > 0 && topKOk(r.sample, K) ? r.sample.teacherTopK : (scoredTeachers[i]?.topK ?? null)));
        const hasTopK = topKOf.map((t) => (t ? 1 : 0));
        const hasTeacher = group.map((_, i) => (teacherRows[i] !== null && hasTopK[i] === 0 ? 1 : 0));
        const refLp =
          klCoef !== 0 || (opdOnReference && group.some((r) => r.sample.teacherPromptTokens))
            ? tf.tidy(() =>
                pick(
                  padLogits(
                    policy.logits(
                      group.map((r) => r.seq),
                      { reference: true },
                    ),
                    R,
                  ),
                  m.targets,
                  m.mask,
                ),
              )
            : null;
        const rollout = tf.tensor2d(
          group.map((r) => padRow(r.sample.rolloutLogprobs.slice(0, r.targets.length), R)),
          [group.length, R],
        );
        const exact = group.map((r) => (r.sample.exactLogprobs ? 1 : 0));
        const tisOn = group.map((r, i) => (exact[i] === 1 && (r.stale || opts.mismatchTis === true) ? 1 : 0));
        const stats = tf.tidy(() => {
          const exactMask = tf.mul(m.mask, tf.reshape(tf.tensor1d(exact, 'float32'), [-1, 1]));
          const drift = tf.sum(tf.mul(tf.abs(tf.sub(rollout, m.oldLp)), exactMask));
          const ratio = tf.exp(tf.sub(m.oldLp, rollout));
          const tisMask = tf.mul(m.mask, tf.reshape(tf.tensor1d(tisOn, 'float32'), [-1, 1]));
          return tf.stack([
            drift,
            tf.sum(exactMask),
            tf.sum(tf.mul(tf.minimum(ratio, tisCap), tisMask)),
            tf.sum(tisMask),
            tf.sum(tf.mul(tf.cast(tf.greater(ratio, tisCap), 'float32'), tisMask)),
          ]);
        });
        const [d, dn, ts, tn, tc] = Array.from(await stats.data());
        stats.dispose();
        driftSum += d;
        driftTokens += dn;
        tisSum += ts;
        tisTokens += tn;
        tisCapped += tc;
        const adv = tf.tidy(() => {
          const teacherLp = hasTeacher.some((h) => h === 1)
            ? tf.tensor2d(
                group.map((_, i) => padRow(teacherRows[i] ?? [], R)),
                [group.length, R],
              )
            : null;
          let a = combinedAdvantages({
            teacherLp,
            hasTeacher,
            oldLp: m.oldLp,
            // Deferred teachers scored on the base are measured against the base too.
            ...(opdOnReference && refLp
              ? { teacherBaseLp: refLp, teacherOnBase: group.map((r) => (r.sample.teacherPromptTokens ? 1 : 0)) }
              : {}),
            reward: group.map((r) => r.sample.reward - (baselines.get(r) ?? 0)),
            wOpd,
            wRl: opts.wRl ?? 1,
            opdAdvantage: opts.opdAdvantage,
            mask: m.mask,
          });
          a = tf.mul(a, tf.reshape(tf.tensor1d(group.map((r) => r.sample.weight)), [-1, 1]));
          if (tisOn.some((t) => t === 1)) {
            const w = tf.minimum(tf.exp(tf.sub(m.oldLp, rollout)), tisCap);
            const on = tf.greater(tf.reshape(tf.tensor1d(tisOn, 'float32'), [-1, 1]), 0);
            a = tf.mul(a, tf.where(tf.logicalAnd(on, tf.onesLike(a).asType('bool')), w, tf.onesLike(a)));
          }
          return a as tf.Tensor2D;
        });
        rollout.dispose();
        const tk =
          K > 0 && hasTopK.some((h) => h === 1)
            ? tf.tidy(() => ({
                ids: tf.tensor3d(
                  group.map((r, i) => topKRows(topKOf[i], r.targets.length, R, K, 'ids')),
                  undefined,
                  'int32',
                ),
                lps: tf.tensor3d(group.map((r, i) => topKRows(topKOf[i], r.targets.length, R, K, 'lps'))),
                mask: tf.mul(m.mask, tf.reshape(tf.tensor1d(hasTopK, 'float32'), [-1, 1])) as tf.Tensor2D,
              }))
            : null;
        const groupTokens = group.reduce((n, r) => n + r.mask.reduce((a, b) => a + b, 0), 0);
        const share = byToken ? groupTokens / tokens : group.length / N;
        const micro: Micro = { rows: group, share, ...m, adv, refLp, tk };
        micros.push(micro);

        let clip = 0;
        let ent = 0;
        let value = 0;
        const dl = tf.grads((...ls: tf.Tensor[]) => {
          const logits = padLogits(ls as tf.Tensor2D[], R);
          const logp = pick(logits, micro.targets, micro.mask);
          const s = surrogate(micro, logits, logp);
          let total = s.total;
          clip = s.clip.dataSync()[0];
          if (klCoef !== 0) total = tf.add(total, tf.mul(klCoef, sampleTokenMean(klLowVar(logp, micro.refLp!, micro.mask), micro.mask)));
          const e = sampleTokenMean(tokenEntropy(logits, micro.mask), micro.mask);
          ent = e.dataSync()[0];
          if (entropyCoef !== 0) total = tf.sub(total, tf.mul(entropyCoef, e));
          const scaled = tf.mul(total, micro.share) as tf.Scalar;
          value = scaled.dataSync()[0];
          return scaled;
        })(pass.logits);
        const g = pass.backward(dl as tf.Tensor2D[]);
        tf.dispose(dl);
        for (let i = 0; i < gradSum.length; i++) {
          const next = tf.add(gradSum[i], g[i]);
          gradSum[i].dispose();
          gradSum[i] = next;
        }
        tf.dispose(g);
        loss += value;
        clipTokens += clip * groupTokens;
        entropy += ent * micro.share;
      } finally {
        pass.dispose();
      }
    }

    const vars = policy.variables;
    const maxKl = opts.maxKl ?? Number.POSITIVE_INFINITY;
    const snapshot = Number.isFinite(maxKl) ? vars.map((v) => tf.clone(v)) : null;
    const grads: Record<string, tf.Tensor> = {};
    vars.forEach((v, i) => (grads[v.name] = gradSum[i]));
    const gradNorm = optimizer.apply(vars, grads, (opts.lr ?? optimizer.options.lr) * lrScale);

    let after = { kl: 0, klRef: 0, lossAfter: 0 };
    let halvings = 0;
    let rejected: string | null = null;
    if (opts.measureAfter !== false || snapshot) {
      after = await measure(policy, micros, surrogate, tokens);
      while (snapshot && after.kl > maxKl && halvings < 2) {
        halvings++;
        vars.forEach((v, i) => v.assign(tf.tidy(() => tf.add(snapshot[i], tf.mul(tf.sub(v, snapshot[i]), 0.5)))));
        after = await measure(policy, micros, surrogate, tokens);
      }
      if (snapshot && after.kl > maxKl) {
        rejected = `KL(π_old‖π_new) ${after.kl.toFixed(4)} > ${maxKl} after ${halvings} halvings: update undone`;
        vars.forEach((v, i) => v.assign(snapshot[i]));
        after = { kl: 0, klRef: after.klRef, lossAfter: loss };
      }
    }
    tf.dispose(snapshot ?? []);
    if (!rejected) opts.rewardBaseline?.observe(withTokens.map((r) => r.sample));
    return {
      loss,
      lossAfter: after.lossAfter,
      meanReward: withTokens.reduce((a, r) => a + r.sample.reward, 0) / N,
      kl: after.kl,
      klRef: after.klRef,
      clipFraction: clipTokens / Math.max(1, tokens),
      logprobDrift: driftTokens > 0 ? driftSum / driftTokens : 0,
      entropy,
      gradNorm,
      samples: N,
      tokens,
      skipped,
      tisMean: tisTokens > 0 ? tisSum / tisTokens : 1,
      tisTruncated: tisTokens > 0 ? tisCapped / tisTokens : 0,
      cutTokens: rows.reduce((n, r) => n + r.cut, 0),
      halvings,
      rejected,
      lrScale,
    };
  } finally {
    policy.endStep?.();
    tf.dispose(gradSum);
    for (const m of micros)
      tf.dispose([m.targets, m.mask, m.oldLp, m.adv, ...(m.refLp ? [m.refLp] : []), ...(m.tk ? [m.tk.ids, m.tk.lps, m.tk.mask] : [])]);
  }
}

type TopKEntries = NonNullable<Sample['teacherTopK']>;

function topKRows(entries: TopKEntries | null, length: number, R: number, K: number, field: 'ids' | 'lps'): number[][] {
  const out: number[][] = [];
  for (let i = 0; i < R; i++) {
    const e = entries && i < length ? entries[i] : null;
    if (field === 'ids') out.push(e ? e.ids : Array.from({ length: K }, (_, k) => k));
    else out.push(e ? e.logprobs : new Array<number>(K).fill(-30));
  }
  return out;
}

/**
 * log π(target_i | teacher prompt + response[..i]) with the current weights (or the reference), no
 * gradient; with `topK` > 0 also the teacher's `topK` likeliest ids and their log-probs per position.
 */
async function teacherLogprobs(
  policy: TrainablePolicy,
  prompt: number[],
  response: number[],
  reference: boolean,
  topK: number,
): Promise<{ lps: number[]; topK: TopKEntries | null }> {
  const all = [...prompt, ...response];
  const budget = Math.min(policy.microBatchTokens, policy.contextLength);
  const cut = Math.max(0, all.length - 1 - budget);
  const ids = all.slice(cut, -1);
  const P = prompt.length - cut;
  const [logits] = policy.logits([{ ids, positions: response.map((_, i) => P - 1 + i) }], { reference });
  const logp = tf.logSoftmax(logits);
  logits.dispose();
  const lp = tf.tidy(() => tf.sum(tf.mul(logp, tf.oneHot(tf.tensor1d(response, 'int32'), policy.vocabSize)), -1));
  const out = Array.from(await lp.data());
  lp.dispose();
  let top: TopKEntries | null = null;
  if (topK > 0) {
    const { values, indices } = tf.topk(logp, Math.min(topK, policy.vocabSize));
    const [v, ix] = [(await values.array()) as number[][], (await indices.array()) as number[][]];
    tf.dispose([values, indices]);
    top = ix.map((ids, i) => ({ ids, logprobs: v[i] }));
  }
  logp.dispose();
  return { lps: out, topK: top };
}

/** KL(π_old‖π_new), the surrogate and the KL to the reference, after the update (token-weighted). */
async function measure(
  policy: TrainablePolicy,
  micros: Micro[],
  surrogate: (m: Micro, logits: tf.Tensor3D, logp: tf.Tensor2D) => { total: tf.Scalar; clip: tf.Scalar },
  tokens: number,
): Promise<{ kl: number; klRef: number; lossAfter: number }> {
  let kl = 0;
  let klRef = 0;
  let lossAfter = 0;
  for (const m of micros) {
    const R = m.targets.shape[1];
    const logits = policy.logits(m.rows.map((r) => r.seq));
    const t = tf.tidy(() => {
      const padded = padLogits(logits, R);
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
  }
  return { kl: kl / Math.max(1, tokens), klRef: klRef / Math.max(1, tokens), lossAfter };
}
