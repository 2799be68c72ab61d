/**
 * The learner's defaults, each where it was measured (docs/learning.md): what every learner
 * trains with unless its settings say otherwise (trainer/learner-settings.ts). Kept in a file of
 * their own that imports nothing, so that reading the configuration (cli/config.ts, through
 * stack/settings.ts) does not load the trainer.
 */
import type { LoraTarget } from '../policy/index.ts';
import type { OpdAdvantage } from './losses/advantages.ts';

/**
 * Learning rate of the learner for the built-in model, chosen by measurement (docs/learning.md,
 * "Learning rate of the built-in model"): `turnstream eval`, 5 personas × 36 interactions, one step per 4 interactions,
 * lr ∈ {3e-4, 1e-3, 3e-3, 1e-2}. 3e-4 barely moved; 1e-3 and 3e-3 gave the same mean gain;
 * 1e-2 collapsed one persona's replies (a preference it had shown 28 % of the time went to 0 %).
 * 1e-3 is the fastest rate without collapse — 100× the reference's 1e-5 for a 4B model.
 */
export const LEARNER_LR = 1e-3;

/**
 * Learning rate of a LoRA adapter on a GGUF model, and the other defaults of that family: a
 * version needs LORA_MIN_SAMPLES trainable samples, and a step may move the policy by at most
 * LORA_MAX_KL (k3 KL, token mean). On SmolLM2-135M (docs/learning.md) 3e-4 barely moved in 16
 * interactions; 2e-3 learned a persona's form within 24 but, alone, wrecked the answers (word salad
 * after 12 steps of 2 samples). With the KL to the base and the positive-only OPD term of
 * LORA_STEP_DEFAULTS (trainer/step-defaults.ts) it keeps them.
 */
export const LORA_LR = 2e-3;
export const LORA_MIN_SAMPLES = 8;
export const LORA_MAX_KL = 0.1;

/** The learner-step settings whose default depends on the model family being trained. */
export interface FamilyStepSettings {
  /** k3 KL to the base, added to the loss (`TRAIN_KL_COEF`). */
  klCoef: number;
  /** Decay of each user's running mean reward; 0 = no baseline (`TRAIN_REWARD_BASELINE`). */
  rewardBaseline: number;
  /** A new user's running mean, in [−1, 0] (`TRAIN_REWARD_BASELINE_PRIOR`). */
  rewardBaselinePrior: number;
  /** How the OPD term's per-token advantages are used (`TRAIN_OPD_ADVANTAGE`). */
  opdAdvantage: OpdAdvantage;
  /** Smaller steps for pleased users, in [0, 1] (`TRAIN_PLEASED_DAMPING`; trainer/learner-step.ts). */
  pleasedDamping: number;
}

/** The built-in byte model: the settings its measured curves were made with (docs/learning.md). */
export const BUILTIN_STEP_DEFAULTS: Readonly<FamilyStepSettings> = {
  klCoef: 0,
  rewardBaseline: 0,
  rewardBaselinePrior: 0,
  opdAdvantage: 'raw',
  pleasedDamping: 0,
};

/**
 * A LoRA adapter on a GGUF model. Measured on SmolLM2-135M with LORA_LR (docs/learning.md): without
 * the KL to the base the adapter learned a persona's form by wrecking the answers; with the raw OPD
 * term, users the model could not please drove it to fragments and empty replies (answered 0.66),
 * while OPD's positive part with a baseline that starts at −1 kept 0.92 of the answers and learned
 * more of the hard personas (0.46 against 0.35–0.40). The pleased damping was chosen on the dev
 * personas (eval/personas.json, ten seeds, defaults-10x3 against positive-damped-10x3): the same
 * mean (0.64 and 0.65), and half the runs ending below their own peak (8 of 30 to 4 of 30): once a
 * user is pleased, the RL advantage shrinks while the KL to the base still pulls back.
 */
export const LORA_STEP_DEFAULTS: Readonly<FamilyStepSettings> = {
  klCoef: 0.25,
  rewardBaseline: 0.3,
  rewardBaselinePrior: -1,
  opdAdvantage: 'positive',
  pleasedDamping: 1,
};

/** The batcher's defaults (`TRAIN_*` when nothing is set; trainer/learner-settings.ts). */
export const BATCHER_DEFAULTS = Object.freeze({
  batchSize: 16,
  maxStaleness: 2,
  staleness: 'drop' as 'drop' | 'tis',
  maxUserShare: 0.5,
  maxWaitMs: 30_000,
  minSamples: 1,
});

/** The settings whose default does not depend on the model family. */
export const LEARNER_DEFAULTS = Object.freeze({
  batchSize: BATCHER_DEFAULTS.batchSize,
  maxStaleness: BATCHER_DEFAULTS.maxStaleness,
  staleness: BATCHER_DEFAULTS.staleness,
  maxUserShare: BATCHER_DEFAULTS.maxUserShare,
  maxWaitMs: BATCHER_DEFAULTS.maxWaitMs,
  consensus: true,
  opdOnBase: false,
  entropyCoef: 0,
  loraRank: 8,
  loraAlpha: 16,
  loraTargets: ['q', 'k', 'v', 'o'] as LoraTarget[],
  loraLastLayers: 0,
  maxTrainTokens: 1024,
  mismatchTis: true,
  /** learner-step's (trainer/step/step-types.ts tisCapOf): truncated importance weights capped at 2, as verl and slime do. */
  tisCap: 2,
  /** GRPO_STEP's (trainer/learner.ts): the reference's, no KL to the base in a GRPO step. */
  grpoKlCoef: 0,
  /** GRPO_STEP's: a GRPO batch's loss is one mean over every trained token of the batch (DAPO's). */
  grpoTokenMean: 'batch' as 'sample' | 'batch',
});

/** The settings whose default the model family decides (docs/learning.md says how each was measured). */
export const LEARNER_FAMILY_DEFAULTS: Readonly<
  Record<'lora' | 'builtin', Readonly<FamilyStepSettings & { minSamples: number; lr: number; maxKl: number | undefined }>>
> = Object.freeze({
  lora: { minSamples: LORA_MIN_SAMPLES, lr: LORA_LR, maxKl: LORA_MAX_KL, ...LORA_STEP_DEFAULTS },
  builtin: { minSamples: 1, lr: LEARNER_LR, maxKl: undefined, ...BUILTIN_STEP_DEFAULTS },
});
