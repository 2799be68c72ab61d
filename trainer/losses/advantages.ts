import * as tf from '@tensorflow/tfjs';
import { maskedValues } from './masked-mean.ts';

type Rewards = tf.Tensor1D | number[];

const toColumn = (reward: Rewards): tf.Tensor2D =>
  tf.reshape(Array.isArray(reward) ? tf.tensor1d(reward, 'float32') : tf.cast(reward, 'float32'), [-1, 1]);

/**
 * Binary RL (docs/design/algorithms.md §5): the turn's reward r ∈ {−1, 0, +1} [B] broadcast to every
 * response token, no normalization; masked tokens are 0.
 */
export function binaryRlAdvantages(reward: Rewards, mask: tf.Tensor2D): tf.Tensor2D {
  return tf.tidy(() => maskedValues(tf.mul(toColumn(reward), tf.onesLike(mask).asType('float32')), mask) as tf.Tensor2D);
}

/** OPD (docs/design/algorithms.md §4): `A_t = log π_teacher(a_t | s + hint) − log π_old(a_t | s)`; masked tokens are 0. */
export function opdAdvantages(teacherLp: tf.Tensor2D, oldLp: tf.Tensor2D, mask: tf.Tensor2D): tf.Tensor2D {
  return tf.tidy(() => maskedValues(tf.sub(teacherLp, oldLp), mask) as tf.Tensor2D);
}

export interface CombinedAdvantagesInput {
  /** Teacher log-probs [B, T], or null when no sample of the batch has a hint (RL only). */
  teacherLp: tf.Tensor2D | null;
  /** Which samples have teacher log-probs [B] (1/0); default all when `teacherLp` is given. */
  hasTeacher?: tf.Tensor1D | number[];
  oldLp: tf.Tensor2D;
  /**
   * What the teacher is measured against where `teacherOnBase` is 1 (a teacher scored on the
   * frozen base is compared with the base on the unhinted prompt) [B, T]; elsewhere `oldLp`.
   */
  teacherBaseLp?: tf.Tensor2D;
  teacherOnBase?: number[];
  /** Reward per sample [B]; 0 for "hint only". */
  reward: Rewards;
  /** @default 1 */
  wOpd?: number;
  /** @default 1 */
  wRl?: number;
  /** How the OPD term's per-token advantages are used (see {@link OpdAdvantage}). @default 'raw' */
  opdAdvantage?: OpdAdvantage;
  mask: tf.Tensor2D;
}

/**
 * - `raw`: `teacher − old` as it is;
 * - `centered`: minus its mean over the sample's tokens. On average the raw term is negative
 *   (its mean under the policy's own samples is −KL(π‖π_teacher)), so it pushes every sampled
 *   token down a little; centered, only which tokens the hint favours more than others counts;
 * - `positive`: only where the teacher likes the token more; nothing is pushed down;
 * - `distribution`: the learner matches a deferred teacher's whole next-token distribution by a
 *   top-k reverse KL (trainer/learner-step.ts); here, for a teacher given as log-probs only, raw.
 */
export type OpdAdvantage = 'raw' | 'centered' | 'positive' | 'distribution';

/**
 * Combined method (docs/design/algorithms.md §5): `A_t = w_opd·(teacher_lp_t − old_lp_t) + w_rl·r`.
 * Where a sample has no teacher (RL only), its teacher term is exactly 0: it is selected away
 * with `where`, never computed from placeholder log-probs.
 */
export function combinedAdvantages(input: CombinedAdvantagesInput): tf.Tensor2D {
  const wOpd = input.wOpd ?? 1;
  const wRl = input.wRl ?? 1;
  return tf.tidy(() => {
    const rl = tf.mul(binaryRlAdvantages(input.reward, input.mask), wRl);
    if (input.teacherLp === null) return rl as tf.Tensor2D;
    const against =
      input.teacherBaseLp && input.teacherOnBase ? rowsWhere(input.teacherOnBase, input.teacherBaseLp, input.oldLp) : input.oldLp;
    let opd = opdAdvantages(input.teacherLp, against, input.mask);
    if (input.opdAdvantage === 'positive') opd = tf.relu(opd);
    else if (input.opdAdvantage === 'centered') {
      const m = tf.cast(input.mask, 'float32');
      const mean = tf.div(tf.sum(tf.mul(opd, m), 1, true), tf.maximum(tf.sum(m, 1, true), 1));
      opd = maskedValues(tf.sub(opd, mean), m) as tf.Tensor2D;
    }
    opd = tf.mul(opd, wOpd);
    if (input.hasTeacher !== undefined) opd = rowsWhere(input.hasTeacher, opd, tf.zerosLike(opd));
    return tf.add(opd, rl) as tf.Tensor2D;
  });
}

/** Row b of `yes` where `flag[b]` > 0, else row b of `no` [B, T]. */
function rowsWhere(flag: Rewards, yes: tf.Tensor2D, no: tf.Tensor2D): tf.Tensor2D {
  const on = tf.greater(toColumn(flag), 0);
  return tf.where(tf.logicalAnd(on, tf.onesLike(yes).asType('bool')), yes, no) as tf.Tensor2D;
}
