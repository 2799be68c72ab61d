// Public surface of trainer/: what the gateway, processors and CLI may use.
export { selectBackend, selectedBackend, BACKEND_ORDER, type BackendName, type SelectBackendOptions } from './backend.ts';
export { renderPrompt, type ChatMessage, type ChatRole, type RenderPromptOptions, type RenderedPrompt } from './chat-template.ts';
export {
  CHECKPOINT_FORMAT,
  checkpointPath,
  loadCheckpoint,
  readManifest,
  saveCheckpoint,
  type CheckpointManifest,
  type LoadCheckpointOptions,
  type SaveCheckpointOptions,
  type SavedCheckpoint,
  type TensorEntry,
} from './checkpoint.ts';
export { generate, scoreTokens, mulberry32, type FinishReason, type GenerateOptions, type GeneratedToken } from './generate.ts';
export {
  DEFAULT_MODEL_CONFIG,
  TransformerModel,
  disposeCache,
  resolveModelConfig,
  weightShapes,
  type KvCache,
  type ModelConfig,
} from './model.ts';
export { loadPolicy, type LoadPolicyOptions, type PolicyHandle } from './policy.ts';
export { BYTE_VOCAB, ByteTokenizer, SPECIAL_TOKENS, StreamDecoder, type SpecialToken } from './tokenizer.ts';
export { WeightStore, initCheckpoint, SHIPPED_BASE_DIR, type InitCheckpointOptions, type WeightVersionRef } from './weight-store.ts';
export * from './losses/index.ts';
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
export { SampleBatcher, type BatcherOptions, type Pending, type StalenessMode, type TakenBatch } from './batcher.ts';
export { learnerStep, packBatch, type LearnerStepOptions, type StepMetrics, type StepSample } from './learner-step.ts';
export { startLearner, lastPublishedVersion, LEARNER_LR, type LearnerHandle, type LearnerOptions, type LearnerStats } from './learner.ts';
export { sampleMany, type SampledReply, type SampleManyOptions } from './sample-many.ts';
