// Public surface of trainer/: what the gateway, processors and CLI may use.
export * from './losses/index.ts';
export { GRPO_STEP, PolicyStepper, trainMetricsOf, type PolicyStepperOptions } from './policy-stepper.ts';
export { AdamW, type AdamWOptions } from './adamw.ts';
export {
  corpus,
  TOPICS,
  SHIPPED_NAMES,
  REAL_NAMES,
  HELD_OUT_NAMES,
  drawName,
  generatedName,
  INSTRUCTIONS,
  PROPERTIES,
  BASE_RATES,
  HINT_HEADER,
  type Exchange,
  type Property,
  type ReplyStyle,
  type Topic,
} from './corpus.ts';
export {
  pretrain,
  sampleReplies,
  exchangeIds,
  lossCurveSvg,
  BASE_MODEL_CONFIG,
  type PretrainOptions,
  type PretrainResult,
} from './pretrain.ts';
export { SampleBatcher, BATCHER_DEFAULTS, type BatcherOptions, type Pending, type StalenessMode, type TakenBatch } from './batcher.ts';
export { learnerStep, packBatch, type LearnerStepOptions, type StepMetrics, type StepSample } from './learner-step.ts';
export { RewardBaseline, type RewardBaselineOptions } from './reward-baseline.ts';
export { ratedTurnOf, weighByConsensus, type SampleText } from './consensus-weighting.ts';
export { UserConsensus, type Conflict, type UserStats } from './user-consensus.ts';
export {
  familyStepSettings,
  familyStepOptions,
  BUILTIN_STEP_DEFAULTS,
  LORA_STEP_DEFAULTS,
  type FamilyStepSettings,
} from './step-defaults.ts';
export {
  startLearner,
  lastPublishedVersion,
  LEARNER_LR,
  LORA_LR,
  LORA_MIN_SAMPLES,
  LORA_MAX_KL,
  type LearnerHandle,
  type LearnerOptions,
  type LearnerStats,
} from './learner.ts';
export {
  learnerSettings,
  learnerOptionsOf,
  loraConfigOf,
  LEARNER_DEFAULTS,
  LEARNER_FAMILY_DEFAULTS,
  type LearnerSettings,
  type ModelFamily,
} from './learner-settings.ts';
export {
  BuiltinLineage,
  LoraLineage,
  type LoraLineageOptions,
  type PolicyLineage,
  type LoadedVersion,
  type SavedVersion,
} from './policy-lineage.ts';
export { BuiltinTrainable, LoraTrainable, type TrainablePolicy, type TrainPass, type SequenceRow } from './trainable-policy.ts';
