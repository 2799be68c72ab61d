/**
 * The shape of a Llama-family checkpoint, read from its GGUF metadata: the architectures whose
 * forward pass `LlamaModel` implements (llama — which covers Llama 2/3.x, SmolLM2, Mistral
 * dense — qwen2 and qwen3).
 */
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';

/** GGUF architectures the tfjs forward pass (and so the LoRA trainer) supports. */
export const TRAINABLE_ARCHITECTURES = ['llama', 'qwen2', 'qwen3'] as const;
export type TrainableArchitecture = (typeof TRAINABLE_ARCHITECTURES)[number];

export interface LlamaConfig {
  architecture: TrainableArchitecture;
  vocabSize: number;
  hiddenSize: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  ffnSize: number;
  rmsEps: number;
  ropeBase: number;
  /** Dimensions of each head that are rotated (the rest pass through). */
  ropeDim: number;
  /** `norm`: adjacent pairs (GGUF llama, whose q/k rows the converter permuted); `neox`: halves. */
  ropeType: 'norm' | 'neox';
  contextLength: number;
  /** q/k/v projections carry biases (qwen2). */
  attentionBias: boolean;
  /** Per-head RMSNorm of q and k before RoPE (qwen3). */
  qkNorm: boolean;
  /** The output head is the token embedding (no `output.weight`). */
  tiedEmbeddings: boolean;
  /** `rope_freqs.weight` divides each rotary frequency (Llama 3.1+ long-context scaling). */
  ropeFreqFactors: boolean;
}

/** The part of GGUF metadata this reads: `<arch>.*` keys, flattened by node-llama-cpp. */
export interface LlamaMetadataSource {
  architecture: string;
  /** `metadata[architecture]`, e.g. `{ block_count, embedding_length, attention: {...}, rope: {...} }`. */
  arch: Record<string, unknown>;
  /** Vocabulary size when the arch block has none (the tokenizer's token count). */
  tokenCount: number;
  tensorNames: ReadonlySet<string>;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

function need(value: number | undefined, key: string, arch: string): number {
  if (value === undefined) {
    throw new TurnstreamError(ErrorCodes.CORRUPT_WEIGHTS, `GGUF metadata ${arch}.${key} is missing or not a number`);
  }
  return value;
}

export function isTrainableArchitecture(arch: string): arch is TrainableArchitecture {
  return (TRAINABLE_ARCHITECTURES as readonly string[]).includes(arch);
}

/** Reads the config; throws INVALID_INPUT for an architecture the trainer does not implement. */
export function llamaConfigFrom(src: LlamaMetadataSource): LlamaConfig {
  const a = src.architecture;
  if (!isTrainableArchitecture(a)) {
    throw new TurnstreamError(
      ErrorCodes.INVALID_INPUT,
      `architecture ${a} is not supported by the trainer (supported: ${TRAINABLE_ARCHITECTURES.join(', ')})`,
      { param: 'model' },
    );
  }
  const m = src.arch;
  const attention = (m.attention ?? {}) as Record<string, unknown>;
  const rope = (m.rope ?? {}) as Record<string, unknown>;
  const hiddenSize = need(num(m.embedding_length), 'embedding_length', a);
  const heads = need(num(attention.head_count), 'attention.head_count', a);
  const headDim = num(attention.key_length) ?? hiddenSize / heads;
  const config: LlamaConfig = {
    architecture: a,
    vocabSize: num(m.vocab_size) ?? src.tokenCount,
    hiddenSize,
    layers: need(num(m.block_count), 'block_count', a),
    heads,
    kvHeads: num(attention.head_count_kv) ?? heads,
    headDim,
    ffnSize: need(num(m.feed_forward_length), 'feed_forward_length', a),
    rmsEps: num(attention.layer_norm_rms_epsilon) ?? 1e-6,
    ropeBase: num(rope.freq_base) ?? 10000,
    ropeDim: num(rope.dimension_count) ?? headDim,
    // llama.cpp: LLM_ARCH_LLAMA ropes adjacent pairs, the Qwen family ropes NeoX-style halves.
    ropeType: a === 'llama' ? 'norm' : 'neox',
    contextLength: num(m.context_length) ?? 2048,
    attentionBias: src.tensorNames.has('blk.0.attn_q.bias'),
    qkNorm: src.tensorNames.has('blk.0.attn_q_norm.weight'),
    tiedEmbeddings: !src.tensorNames.has('output.weight'),
    ropeFreqFactors: src.tensorNames.has('rope_freqs.weight'),
  };
  if (
    !Number.isInteger(config.headDim) ||
    config.heads % config.kvHeads !== 0 ||
    config.ropeDim % 2 !== 0 ||
    config.ropeDim > config.headDim
  ) {
    throw new TurnstreamError(ErrorCodes.CORRUPT_WEIGHTS, `inconsistent ${a} attention shape: ${JSON.stringify(config)}`);
  }
  return config;
}
