/** The learner step's options, what it takes and what it reports (trainer/learner-step.ts). */
import type { TransformerModel } from '../../policy/index.ts';
import type { Sample } from '../../schemas/index.ts';
import type { OpdAdvantage } from '../losses/advantages.ts';
import type { RewardBaseline } from '../reward-baseline.ts';

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
  /**
   * Cap C of the truncated importance weights `min(π_old/π_rollout, C)` (token level, as verl and
   * slime apply them against the engine's log-probs); 0 turns the mismatch correction off (stale
   * samples kept under `staleness: 'tis'` are then capped at 2). @default 2
   */
  tisCap?: number;
  /** Truncated importance weights on every exact sample (the engine/trainer mismatch). @default true */
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

/** The cap of the truncated importance weights (see `tisCap`). */
export const tisCapOf = (o: Pick<LearnerStepOptions, 'tisCap'>): number => (o.tisCap !== undefined && o.tisCap > 0 ? o.tisCap : 2);

/** Whether exact samples get the mismatch correction (see `mismatchTis`, `tisCap`). */
export const mismatchTisOn = (o: Pick<LearnerStepOptions, 'tisCap' | 'mismatchTis'>): boolean => o.mismatchTis !== false && o.tisCap !== 0;

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
  /** k3 estimate of KL(π_rollout ‖ π_old) over the same tokens. */
  mismatchKl: number;
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
  /** Prompt tokens cut from the middle of samples longer than a pass (trainer/step/step-rows.ts `keptHead`). */
  cutTokens: number;
  /** How often the update was halved to respect `maxKl`. */
  halvings: number;
  /** Why the update was undone, or null. */
  rejected: string | null;
  /** The factor the step's learning rate was scaled by for pleased users (1 without `pleasedDamping`). */
  lrScale: number;
}

/** The metrics of a step with nothing to train on. */
export const EMPTY_METRICS: Omit<StepMetrics, 'skipped'> = {
  loss: 0,
  lossAfter: 0,
  meanReward: 0,
  kl: 0,
  klRef: 0,
  clipFraction: 0,
  logprobDrift: 0,
  mismatchKl: 0,
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
