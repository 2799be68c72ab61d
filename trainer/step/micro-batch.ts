/**
 * A micro-batch's inputs to the loss, from its forward pass: the targets and mask, π_old (the
 * pass's own log-probs), the teacher terms (given, or scored now for a deferred teacher, with its
 * top-k under 'distribution'), the reference's log-probs where the KL or the OPD-on-base needs
 * them, and the per-token advantages with their weights and truncated importance weights; and
 * what the step reports of the rollout log-probs (drift, importance weights).
 */
import * as tf from '@tensorflow/tfjs';
import { combinedAdvantages } from '../losses/advantages.ts';
import type { TrainablePolicy, TrainPass } from '../trainable-policy.ts';
import type { StepPlan } from './step-plan.ts';
import { sampledLogits, sampledRows, type Sampling } from './sampled-logits.ts';
import { padLogits, padRow, pick, topKOk, topKRows, type Row, type TopKEntries } from './step-rows.ts';
import { mismatchTisOn, tisCapOf, type LearnerStepOptions } from './step-types.ts';

export interface Micro {
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

/** Sums over a micro-batch of what the step reports about the rollout log-probs. */
export interface RolloutStats {
  drift: number;
  /** Sum of k3 = exp(r) − 1 − r, r = log π_old − log π_rollout: KL(π_rollout ‖ π_old) on the rollout's tokens. */
  k3: number;
  driftTokens: number;
  tisSum: number;
  tisTokens: number;
  tisCapped: number;
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
  sampling: Sampling,
): Promise<{ lps: number[]; topK: TopKEntries | null }> {
  const all = [...prompt, ...response];
  const budget = Math.min(policy.microBatchTokens, policy.contextLength);
  const cut = Math.max(0, all.length - 1 - budget);
  const ids = all.slice(cut, -1);
  const P = prompt.length - cut;
  const [raw] = policy.logits([{ ids, positions: response.map((_, i) => P - 1 + i) }], { reference });
  // The teacher is scored under the distribution the student's tokens were drawn from, as π_old is.
  const logits = sampledLogits(raw, sampling, response);
  const logp = tf.logSoftmax(logits);
  tf.dispose([raw, logits]);
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

type Teachers = Array<{ lps: number[]; topK: TopKEntries | null } | null>;

/** The teacher of each row: its given log-probs, or a deferred teacher scored now. */
function teachersOf(policy: TrainablePolicy, group: Row[], plan: StepPlan, opts: LearnerStepOptions): Promise<Teachers> {
  return Promise.all(
    group.map(async (r) => {
      const s = r.sample;
      if (s.teacherLogprobs) return { lps: s.teacherLogprobs, topK: null };
      if (!s.teacherPromptTokens) return null;
      const k = opts.opdAdvantage === 'distribution' ? plan.K : 0;
      return teacherLogprobs(policy, s.teacherPromptTokens, r.targets, opts.opdOnReference ?? false, k, s);
    }),
  );
}

/** Drift of the exact rollout log-probs from π_old, and the truncated importance weights where they apply. */
async function rolloutStats(
  m: { mask: tf.Tensor2D; oldLp: tf.Tensor2D },
  rollout: tf.Tensor2D,
  exact: number[],
  tisOn: number[],
  cap: number,
): Promise<RolloutStats> {
  const stats = tf.tidy(() => {
    const exactMask = tf.mul(m.mask, tf.reshape(tf.tensor1d(exact, 'float32'), [-1, 1]));
    const drift = tf.sum(tf.mul(tf.abs(tf.sub(rollout, m.oldLp)), exactMask));
    const r = tf.sub(m.oldLp, rollout);
    const ratio = tf.exp(r);
    const k3 = tf.sum(tf.mul(tf.sub(tf.sub(ratio, 1), r), exactMask));
    const tisMask = tf.mul(m.mask, tf.reshape(tf.tensor1d(tisOn, 'float32'), [-1, 1]));
    return tf.stack([
      drift,
      k3,
      tf.sum(exactMask),
      tf.sum(tf.mul(tf.minimum(ratio, cap), tisMask)),
      tf.sum(tisMask),
      tf.sum(tf.mul(tf.cast(tf.greater(ratio, cap), 'float32'), tisMask)),
    ]);
  });
  const [drift, k3, driftTokens, tisSum, tisTokens, tisCapped] = Array.from(await stats.data());
  stats.dispose();
  return { drift, k3, driftTokens, tisSum, tisTokens, tisCapped };
}

/** Per-token advantages [rows, R]: combined RL and OPD terms, times each sample's weight and, where on, its truncated importance weight. */
function advantagesOf(
  group: Row[],
  m: { mask: tf.Tensor2D; oldLp: tf.Tensor2D },
  teacherRows: Array<number[] | null>,
  hasTeacher: number[],
  refLp: tf.Tensor2D | null,
  rollout: tf.Tensor2D,
  tisOn: number[],
  plan: StepPlan,
  opts: LearnerStepOptions,
): tf.Tensor2D {
  const R = m.mask.shape[1];
  const cap = tisCapOf(opts);
  return tf.tidy(() => {
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
      ...(opts.opdOnReference && refLp
        ? { teacherBaseLp: refLp, teacherOnBase: group.map((r) => (r.sample.teacherPromptTokens ? 1 : 0)) }
        : {}),
      reward: group.map((r) => r.sample.reward - (plan.baselines.get(r) ?? 0)),
      wOpd: opts.wOpd ?? 1,
      wRl: opts.wRl ?? 1,
      opdAdvantage: opts.opdAdvantage,
      mask: m.mask,
    });
    a = tf.mul(a, tf.reshape(tf.tensor1d(group.map((r) => r.sample.weight)), [-1, 1]));
    if (tisOn.some((t) => t === 1)) {
      const w = tf.minimum(tf.exp(tf.sub(m.oldLp, rollout)), cap);
      const on = tf.greater(tf.reshape(tf.tensor1d(tisOn, 'float32'), [-1, 1]), 0);
      a = tf.mul(a, tf.where(tf.logicalAnd(on, tf.onesLike(a).asType('bool')), w, tf.onesLike(a)));
    }
    return a as tf.Tensor2D;
  });
}

/** The micro-batch's inputs to the loss and its rollout statistics (see the module comment). */
export async function prepareMicro(
  policy: TrainablePolicy,
  group: Row[],
  pass: TrainPass,
  plan: StepPlan,
  opts: LearnerStepOptions,
): Promise<{ micro: Micro; stats: RolloutStats }> {
  const R = Math.max(...group.map((r) => r.targets.length));
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
    return { targets, mask, oldLp: pick(padLogits(sampledRows(pass.logits, group), R), targets, mask) };
  });
  const teachers = await teachersOf(policy, group, plan, opts);
  const teacherRows = teachers.map((t) => t?.lps ?? null);
  const topKOf = group.map((r, i) => (plan.K > 0 && topKOk(r.sample, plan.K) ? r.sample.teacherTopK : (teachers[i]?.topK ?? null)));
  const hasTopK = topKOf.map((t) => (t ? 1 : 0));
  const hasTeacher = group.map((_, i) => (teacherRows[i] !== null && hasTopK[i] === 0 ? 1 : 0));
  const needsRef = (opts.klCoef ?? 0) !== 0 || (opts.opdOnReference && group.some((r) => r.sample.teacherPromptTokens));
  const refLp = needsRef
    ? tf.tidy(() =>
        pick(
          padLogits(
            sampledRows(
              policy.logits(
                group.map((r) => r.seq),
                { reference: true },
              ),
              group,
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
  const tisOn = group.map((r, i) => (exact[i] === 1 && (r.stale || mismatchTisOn(opts)) ? 1 : 0));
  const stats = await rolloutStats(m, rollout, exact, tisOn, tisCapOf(opts));
  const adv = advantagesOf(group, m, teacherRows, hasTeacher, refLp, rollout, tisOn, plan, opts);
  rollout.dispose();
  const K = plan.K;
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
  const share = opts.tokenMean === 'batch' ? groupTokens / plan.tokens : group.length / plan.N;
  return { micro: { rows: group, share, ...m, adv, refLp, tk }, stats };
}

/** Frees what a micro-batch holds. */
export function disposeMicro(m: Micro): void {
  tf.dispose([m.targets, m.mask, m.oldLp, m.adv, ...(m.refLp ? [m.refLp] : []), ...(m.tk ? [m.tk.ids, m.tk.lps, m.tk.mask] : [])]);
}
