// Public surface of policy/: the model families (the built-in tiny model, Llama-family GGUF
// checkpoints with LoRA) that gateway, processors, trainer and eval use.
export {
  selectBackend,
  selectBackendStatus,
  selectedBackend,
  backendStatus,
  configureBackend,
  BACKEND_ORDER,
  type BackendName,
  type BackendPreference,
  type BackendStatus,
  type NativeTensorflowOptions,
  type SelectBackendOptions,
} from './tfjs-backend.ts';
export * from './native/index.ts';
export { renderPrompt, type ChatMessage, type ChatRole, type RenderPromptOptions, type RenderedPrompt } from './builtin/chat-template.ts';
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
} from './builtin/checkpoint.ts';
export { generate, scoreTokens, type FinishReason, type GenerateOptions, type GeneratedToken } from './builtin/generate.ts';
export {
  DEFAULT_MODEL_CONFIG,
  TransformerModel,
  disposeCache,
  resolveModelConfig,
  weightShapes,
  type KvCache,
  type ModelConfig,
} from './builtin/model.ts';
export { loadPolicy, type LoadPolicyOptions, type PolicyHandle } from './builtin/policy.ts';
export { BYTE_VOCAB, ByteTokenizer, SPECIAL_TOKENS, StreamDecoder, type SpecialToken } from './builtin/tokenizer.ts';
export {
  WeightStore,
  initCheckpoint,
  SHIPPED_BASE_DIR,
  type InitCheckpointOptions,
  type WeightVersionRef,
} from './builtin/weight-store.ts';
export { toPolicyMessages } from './builtin/policy-messages.ts';
export {
  AdapterStore,
  ADAPTER_FORMAT,
  baseModelRef,
  untrainedLoraVersion,
  type AdapterManifest,
  type AdapterVersionRef,
} from './adapter-store.ts';
export { ChatFormat, type ChatFormatOptions, type OpenAITool, type ParsedOutput, type RenderedChat } from './llama/chat-format.ts';
export { llamaRuntime, llamaBackendName, type LlamaRuntimeOptions } from './llama/llama-runtime.ts';
export { TokenBytes } from './llama/token-bytes.ts';
export { drawToken, type DrawOptions, type Drawn } from './llama/sample-from.ts';
export { llamaConfigFrom, isTrainableArchitecture, TRAINABLE_ARCHITECTURES, type LlamaConfig } from './llama/llama-config.ts';
export { TfLlamaModel, DEFAULT_KEEP_BYTES, type LlamaTrainPass, type LlamaRowsPass, type TrainPassOptions } from './llama/llama-model.ts';
export { plainOperandsOnly } from './llama/frozen-linear.ts';
export { LoraAdapter, DEFAULT_LORA, LORA_TARGETS, parseLoraTargets, targetTensor, type LoraConfig, type LoraTarget } from './llama/lora.ts';
export type { TensorSource } from './llama/tensor-source.ts';
export * from './models/index.ts';
export {
  openGguf,
  writeGguf,
  writeLoraAdapter,
  readLoraAdapter,
  mergeLora,
  writeTinyModel,
  kv,
  GgmlType,
  type GgufFile,
  type GgufTensor,
  type LoraPair,
  type TinyModel,
  type TinyModelOptions,
} from './gguf/index.ts';
export { ggufTensorSource } from './llama/gguf-tensor-source.ts';
export { loadTfLlama, llamaConfigOf } from './llama/load-tf-llama.ts';
export { selectRows } from './llama/select-rows.ts';
export { sampleMany, type SampledReply, type SampleManyOptions } from './builtin/sample-many.ts';
export {
  WeightTransport,
  type Localized,
  type RemoteWeights,
  type WeightsTransportKind,
  type WeightTransportOptions,
} from './weight-transport.ts';
