/** GGUF files: reading and dequantizing, writing, LoRA adapters, merged exports and tiny test models. */
export { GgmlType, elementCount, ggmlTypeFromName, ggmlTypeLayout, ggmlTypeName, tensorByteLength } from './ggml-type.ts';
export type { GgmlTypeLayout, GgmlTypeName } from './ggml-type.ts';
export { HALF_TO_FLOAT, bfloat16ToFloat, floatToHalf, roundToHalf } from './half.ts';
export { canDequantize, dequantize, dequantizeTensor } from './dequantize.ts';
export { canQuantize, quantize } from './quantize.ts';
export { openGguf, type GgufFile, type GgufTensor, type OpenGgufOptions } from './gguf-file.ts';
export {
  GgufValueType,
  kv,
  writeGguf,
  type GgufKv,
  type GgufScalarType,
  type GgufTensorData,
  type GgufTensorSpec,
  type WriteGgufOptions,
  type WrittenGguf,
} from './gguf-writer.ts';
export { readRawMetadata } from './raw-metadata.ts';
export {
  loraTensorNames,
  readLoraAdapter,
  writeLoraAdapter,
  type LoraAdapter,
  type LoraPair,
  type WriteLoraAdapterOptions,
} from './lora-adapter.ts';
export { addLoraDelta, mergeLora, type MergeLoraOptions } from './merge-lora.ts';
export { BPE_TRAINING_TEXT, BYTE_TO_UNICODE, learnMerges, toByteSymbols, type BytePairMerges } from './byte-bpe.ts';
export {
  CHATML_TEMPLATE,
  tinyVocabulary,
  writeTinyModel,
  type TinyArchitecture,
  type TinyModel,
  type TinyModelConfig,
  type TinyModelOptions,
} from './tiny-model.ts';
