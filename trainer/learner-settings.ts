/**
 * The learner as it is configured: one flat set of settings (`TRAIN_*`, `turnstream train`'s
 * flags), the same for every learner that trains — the learner service of `turnstream up`,
 * `turnstream eval`'s runs and `turnstream gym`'s seeds (stack/ builds them all) — except the
 * overrides a run names. The defaults are LEARNER_DEFAULTS and, where the model family decides,
 * LEARNER_FAMILY_DEFAULTS.
 */
import type { LoraConfig, LoraTarget } from '../policy/index.ts';
import type { StalenessMode } from './batcher.ts';
import { LEARNER_DEFAULTS, LEARNER_FAMILY_DEFAULTS, type FamilyStepSettings } from './defaults.ts';
import type { LearnerOptions } from './learner.ts';
import { familyStepOptions } from './step-defaults.ts';

export { LEARNER_DEFAULTS, LEARNER_FAMILY_DEFAULTS };

/** What is trained: a LoRA adapter on a GGUF model, or the built-in tiny model (all its weights). */
export type ModelFamily = 'lora' | 'builtin';

export interface LearnerSettings extends FamilyStepSettings {
  /** Samples per step. `TRAIN_BATCH_SIZE` @default LEARNER_DEFAULTS.batchSize (16) */
  batchSize: number;
  /** Samples more than this many versions old are stale. `TRAIN_MAX_STALENESS` @default LEARNER_DEFAULTS.maxStaleness (2) */
  maxStaleness: number;
  /** Stale samples dropped, or kept with truncated importance sampling. `TRAIN_STALENESS` @default LEARNER_DEFAULTS.staleness ('drop') */
  staleness: StalenessMode;
  /** One user's largest share of a batch, in (0, 1]. `TRAIN_MAX_USER_SHARE` @default LEARNER_DEFAULTS.maxUserShare (0.5) */
  maxUserShare: number;
  /** A smaller batch is trained once its oldest sample waited this long, ms. `TRAIN_MAX_WAIT_MS` @default LEARNER_DEFAULTS.maxWaitMs (30000) */
  maxWaitMs: number;
  /** Fewest trainable samples a version is made from (at most `batchSize`). `TRAIN_MIN_SAMPLES` @default the family's (8 LoRA, 1 built-in) */
  minSamples: number;
  /** Learning rate. `TRAIN_LR` @default the family's (LORA_LR 2e-3, LEARNER_LR 1e-3) */
  lr: number;
  /** Weight users' feedback by their agreement with the others. `TRAIN_CONSENSUS` @default LEARNER_DEFAULTS.consensus (true) */
  consensus: boolean;
  /** Measure the OPD hint's effect on the frozen base (LoRA). `TRAIN_OPD_ON_BASE` @default LEARNER_DEFAULTS.opdOnBase (false) */
  opdOnBase: boolean;
  /** Entropy bonus coefficient. `TRAIN_ENTROPY_COEF` @default LEARNER_DEFAULTS.entropyCoef (0) */
  entropyCoef: number;
  /** LoRA rank. `TRAIN_LORA_RANK` @default LEARNER_DEFAULTS.loraRank (8) */
  loraRank: number;
  /** LoRA alpha (scale alpha / rank). `TRAIN_LORA_ALPHA` @default LEARNER_DEFAULTS.loraAlpha (16) */
  loraAlpha: number;
  /** Matrices LoRA adapts. `TRAIN_LORA_TARGETS` @default LEARNER_DEFAULTS.loraTargets (q, k, v, o) */
  loraTargets: LoraTarget[];
  /** Adapt only the last N layers; 0 = all. `TRAIN_LORA_LAST_LAYERS` @default LEARNER_DEFAULTS.loraLastLayers (0) */
  loraLastLayers: number;
  /** Tokens of one training pass; a longer sample loses its prompt's head. `TRAIN_MAX_TOKENS` @default LEARNER_DEFAULTS.maxTrainTokens (1024) */
  maxTrainTokens: number;
  /** Largest KL(π_old‖π_new) of one step before it is halved, then undone; undefined = none. `TRAIN_MAX_KL` @default the family's (0.1 LoRA, none built-in) */
  maxKl: number | undefined;
  /** Truncated importance weights for the serving engine's log-prob mismatch. `TRAIN_MISMATCH_TIS` @default LEARNER_DEFAULTS.mismatchTis (true) */
  mismatchTis: boolean;
  /** Cap of the truncated importance weights (stale samples, and the engine's log-prob mismatch); 0 turns the mismatch correction off. @default LEARNER_DEFAULTS.tisCap (2) */
  tisCap: number;
  /** KL to the base in a GRPO rollout batch's step (LearnerOptions.grpoStep). @default LEARNER_DEFAULTS.grpoKlCoef (GRPO_STEP's 0) */
  grpoKlCoef: number;
  /** How a GRPO batch's step averages its per-token loss (LearnerOptions.grpoStep). @default LEARNER_DEFAULTS.grpoTokenMean (GRPO_STEP's 'batch') */
  grpoTokenMean: 'sample' | 'batch';
}

/**
 * The settings of a `family` learner: the defaults, then each of `given` in turn (a field left
 * undefined keeps what is below it). `minSamples` is at most `batchSize`.
 */
export function learnerSettings(family: ModelFamily, ...given: Array<Partial<LearnerSettings> | undefined>): LearnerSettings {
  const s: Record<string, unknown> = { ...LEARNER_DEFAULTS, ...LEARNER_FAMILY_DEFAULTS[family] };
  for (const g of given) for (const [k, v] of Object.entries(g ?? {})) if (v !== undefined) s[k] = v;
  const out = s as unknown as LearnerSettings;
  return { ...out, loraTargets: [...out.loraTargets], minSamples: Math.min(out.batchSize, out.minSamples) };
}

/** The LoRA adapter of a new lineage. */
export const loraConfigOf = (s: LearnerSettings): LoraConfig => ({
  rank: s.loraRank,
  alpha: s.loraAlpha,
  targets: s.loraTargets,
  lastLayers: s.loraLastLayers,
});

/**
 * The learner's options from its settings: the batcher, the optimizer, the consensus, the step
 * (a fresh reward baseline each call: it holds per-user state) and what a GRPO batch changes of it.
 */
export function learnerOptionsOf(
  s: LearnerSettings,
  family: ModelFamily,
): Required<Pick<LearnerOptions, 'batch' | 'optimizer' | 'consensus' | 'step' | 'grpoStep'>> {
  return {
    batch: {
      batchSize: s.batchSize,
      maxStaleness: s.maxStaleness,
      staleness: s.staleness,
      maxUserShare: s.maxUserShare,
      maxWaitMs: s.maxWaitMs,
      minSamples: s.minSamples,
    },
    optimizer: { lr: s.lr },
    consensus: s.consensus,
    step: {
      ...familyStepOptions(s),
      entropyCoef: s.entropyCoef,
      ...(family === 'lora' && s.opdOnBase ? { opdOnReference: true } : {}),
      mismatchTis: s.mismatchTis,
      tisCap: s.tisCap,
      ...(s.maxKl !== undefined ? { maxKl: s.maxKl } : {}),
    },
    grpoStep: { klCoef: s.grpoKlCoef, tokenMean: s.grpoTokenMean },
  };
}
