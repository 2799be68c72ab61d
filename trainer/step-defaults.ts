import type { LearnerStepOptions } from './learner-step.ts';
import type { OpdAdvantage } from './losses/advantages.ts';
import { RewardBaseline } from './reward-baseline.ts';

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
 * more of the hard personas (0.46 against 0.35–0.40).
 */
export const LORA_STEP_DEFAULTS: Readonly<FamilyStepSettings> = {
  klCoef: 0.25,
  rewardBaseline: 0.3,
  rewardBaselinePrior: -1,
  opdAdvantage: 'positive',
  pleasedDamping: 0,
};

/** `given` (each unset field falling back to the family's default). */
export function familyStepSettings(lora: boolean, given: Partial<FamilyStepSettings>): FamilyStepSettings {
  const d = lora ? LORA_STEP_DEFAULTS : BUILTIN_STEP_DEFAULTS;
  return {
    klCoef: given.klCoef ?? d.klCoef,
    rewardBaseline: given.rewardBaseline ?? d.rewardBaseline,
    rewardBaselinePrior: given.rewardBaselinePrior ?? d.rewardBaselinePrior,
    opdAdvantage: given.opdAdvantage ?? d.opdAdvantage,
    pleasedDamping: given.pleasedDamping ?? d.pleasedDamping,
  };
}

/** The running means' decay when the damping needs them and the baseline is off. */
const DAMPING_MEAN_DECAY = 0.3;

/**
 * These settings as learner-step options: a fresh reward baseline (per model and user, so one
 * serves every run of a process) when its decay is above 0, or when the damping needs the users'
 * means (then kept, not subtracted).
 */
export function familyStepOptions(
  s: FamilyStepSettings,
): Pick<LearnerStepOptions, 'klCoef' | 'opdAdvantage' | 'rewardBaseline' | 'pleasedDamping'> {
  const baseline =
    s.rewardBaseline > 0
      ? new RewardBaseline({ decay: s.rewardBaseline, prior: s.rewardBaselinePrior })
      : s.pleasedDamping > 0
        ? new RewardBaseline({ decay: DAMPING_MEAN_DECAY, prior: s.rewardBaselinePrior, subtract: false })
        : null;
  return {
    klCoef: s.klCoef,
    opdAdvantage: s.opdAdvantage,
    ...(baseline ? { rewardBaseline: baseline } : {}),
    ...(s.pleasedDamping > 0 ? { pleasedDamping: s.pleasedDamping } : {}),
  };
}
