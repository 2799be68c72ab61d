import type { LearnerStepOptions } from './learner-step.ts';
import { BUILTIN_STEP_DEFAULTS, LORA_STEP_DEFAULTS, type FamilyStepSettings } from './defaults.ts';
import { RewardBaseline } from './reward-baseline.ts';

export { BUILTIN_STEP_DEFAULTS, LORA_STEP_DEFAULTS, type FamilyStepSettings } from './defaults.ts';

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
