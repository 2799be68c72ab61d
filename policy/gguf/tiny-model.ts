/**
 * Tiny Llama-family GGUF models the project writes itself, for tests and benchmarks: a few layers,
 * a small hidden size, grouped-query attention, SwiGLU, random weights from a seed, the byte-level
 * BPE vocabulary of byte-bpe.ts and a ChatML template. llama.cpp loads and runs them like any
 * checkpoint of the family; what they generate is gibberish.
 */
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';
import { BPE_TRAINING_TEXT, BYTE_TO_UNICODE, learnMerges } from './byte-bpe.ts';
import { GgmlType, ggmlTypeLayout, type GgmlTypeName } from './ggml-type.ts';
import { kv, writeGguf, type GgufKv, type GgufTensorSpec, type WrittenGguf } from './gguf-writer.ts';

/** Architectures a tiny model can have. */
export type TinyArchitecture = 'llama' | 'qwen2' | 'qwen3';

/** Options of {@link writeTinyModel}. */
export interface TinyModelOptions {
  /** `llama` (SmolLM2, Llama 3), `qwen2` (q/k/v biases, NEOX rope), `qwen3` (per-head q/k RMSNorm). @default 'llama' */
  architecture?: TinyArchitecture;
  /** Transformer blocks. @default 2 */
  layers?: number;
  /** Hidden size (K-quant weights need a multiple of 256). @default 64 */
  hidden?: number;
  /** Attention heads. @default 4 */
  heads?: number;
  /** Key/value heads (grouped-query attention); divides `heads`. @default 2 */
  kvHeads?: number;
  /** SwiGLU inner size. @default 2 × hidden */
  ffn?: number;
  /** `<arch>.context_length`. @default 512 */
  contextLength?: number;
  /** `<arch>.rope.freq_base`. @default 10000 */
  ropeFreqBase?: number;
  /** `<arch>.attention.layer_norm_rms_epsilon`. @default 1e-5 */
  rmsEps?: number;
  /**
   * Storage type of the 2-D weights; a weight whose rows are not whole blocks of it is stored as
   * F32 (as llama-quantize falls back). Norms and biases are always F32. @default 'F32'
   */
  weightType?: GgmlTypeName;
  /**
   * Storage type of `token_embd.weight`. llama.cpp reads embeddings by dequantizing rows exactly
   * (no activation quantization as in its matrix products), so a model whose only quantized tensor
   * is an untied embedding shows a dequantizer's exact agreement with ggml's. @default weightType
   */
  embeddingType?: GgmlTypeName;
  /** Tied embeddings (no `output.weight`, the head reuses `token_embd.weight`). @default true */
  tiedEmbeddings?: boolean;
  /** Seed of the random weights. @default 1 */
  seed?: number;
  /** BPE merges learnt for the vocabulary. @default 200 */
  merges?: number;
  /** `tokenizer.ggml.pre`. @default 'smollm' for llama, 'qwen2' for the Qwen architectures */
  pre?: string;
  /** `general.name`. @default 'turnstream-tiny-<architecture>' */
  name?: string;
}

/** The shape a tiny model was written with. */
export interface TinyModelConfig {
  architecture: TinyArchitecture;
  layers: number;
  hidden: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  ffn: number;
  vocabSize: number;
  contextLength: number;
  ropeFreqBase: number;
  rmsEps: number;
  tiedEmbeddings: boolean;
  weightType: GgmlTypeName;
}

/** A written tiny model. */
export interface TinyModel extends WrittenGguf {
  config: TinyModelConfig;
  /** The vocabulary, by id. */
  tokens: string[];
  /** Ids of the special tokens. */
  special: { endOfText: number; imStart: number; imEnd: number };
}

/** ChatML, as SmolLM2 and Qwen use it, without a default system prompt. */
export const CHATML_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

const SPECIAL_TOKENS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'];
const TOKEN_TYPE = { normal: 1, control: 3 };

// llama_ftype values (llama.h), for general.file_type.
const FILE_TYPE: Partial<Record<GgmlTypeName, number>> = {
  F32: 0,
  F16: 1,
  Q4_0: 2,
  Q4_1: 3,
  Q8_0: 7,
  Q5_0: 8,
  Q5_1: 9,
  Q2_K: 10,
  Q3_K: 11,
  Q4_K: 14,
  Q5_K: 16,
  Q6_K: 18,
  BF16: 32,
};

/** mulberry32 with Box–Muller: a seeded normal sampler. */
function normalSampler(seed: number): () => number {
  let a = seed >>> 0;
  const uniform = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform());
}

/** The vocabulary of a tiny model: specials, the 256 byte symbols, then the learnt merges' tokens. */
export function tinyVocabulary(merges = 200): { tokens: string[]; types: number[]; merges: string[] } {
  const learnt = learnMerges(BPE_TRAINING_TEXT, merges);
  const tokens = [...SPECIAL_TOKENS, ...BYTE_TO_UNICODE, ...learnt.tokens];
  const types = tokens.map((_, i) => (i < SPECIAL_TOKENS.length ? TOKEN_TYPE.control : TOKEN_TYPE.normal));
  return { tokens, types, merges: learnt.merges };
}

/**
 * Writes a tiny model GGUF at `path` (atomically).
 * @throws TurnstreamError TS_ERR_INVALID_INPUT for shapes that do not fit (heads not dividing hidden, …)
 */
export async function writeTinyModel(path: string, options: TinyModelOptions = {}): Promise<TinyModel> {
  const { config, vocab } = tinyShape(options);
  const tensors = tinyTensors(config, options);
  const special = { endOfText: 0, imStart: 1, imEnd: 2 };
  const metadata = tinyMetadata(config, vocab, special, options);
  const written = await writeGguf(path, { metadata, tensors });
  return { ...written, config, tokens: vocab.tokens, special };
}

/** The options with their defaults, checked, and the vocabulary they give. */
function tinyShape(options: TinyModelOptions): { config: TinyModelConfig; vocab: ReturnType<typeof tinyVocabulary> } {
  const architecture = options.architecture ?? 'llama';
  const hidden = options.hidden ?? 64;
  const heads = options.heads ?? 4;
  const kvHeads = options.kvHeads ?? 2;
  const layers = options.layers ?? 2;
  const ffn = options.ffn ?? 2 * hidden;
  const weightType = options.weightType ?? 'F32';
  const tied = options.tiedEmbeddings ?? true;
  if (!['llama', 'qwen2', 'qwen3'].includes(architecture)) {
    throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `unknown tiny architecture ${architecture}`);
  }
  if (hidden % heads !== 0 || heads % kvHeads !== 0 || (hidden / heads) % 2 !== 0) {
    throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `hidden ${hidden}, heads ${heads}, kvHeads ${kvHeads} do not make even head sizes`);
  }
  if (GgmlType[weightType] === undefined || GgmlType[options.embeddingType ?? weightType] === undefined)
    throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `unknown weight type ${weightType} / ${options.embeddingType}`);
  const headDim = hidden / heads;
  const vocab = tinyVocabulary(options.merges ?? 200);
  const config: TinyModelConfig = {
    architecture,
    layers,
    hidden,
    heads,
    kvHeads,
    headDim,
    ffn,
    vocabSize: vocab.tokens.length,
    contextLength: options.contextLength ?? 512,
    ropeFreqBase: options.ropeFreqBase ?? 10000,
    rmsEps: options.rmsEps ?? 1e-5,
    tiedEmbeddings: tied,
    weightType,
  };
  return { config, vocab };
}

/** The model's tensors, with random weights drawn from the seed in a fixed order. */
function tinyTensors(config: TinyModelConfig, options: TinyModelOptions): GgufTensorSpec[] {
  const { architecture, layers, hidden, heads, kvHeads, headDim, ffn, weightType, vocabSize: nVocab } = config;
  const normal = normalSampler(options.seed ?? 1);
  const random = (n: number, std: number, mean = 0): Float32Array => {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = mean + std * normal();
    return out;
  };
  const tensors: GgufTensorSpec[] = [];
  /** A weight [in, out] (row-major [out][in]), scaled so activations keep unit size. */
  const weight = (name: string, inDim: number, outDim: number, std = 1 / Math.sqrt(inDim), typeName = weightType): void => {
    const type = GgmlType[typeName];
    const blockSize = ggmlTypeLayout(type)?.blockSize ?? 1;
    tensors.push({ name, dims: [inDim, outDim], type: inDim % blockSize === 0 ? type : GgmlType.F32, data: random(inDim * outDim, std) });
  };
  const vector = (name: string, n: number, std: number, mean: number): void => {
    tensors.push({ name, dims: [n], type: GgmlType.F32, data: random(n, std, mean) });
  };

  // Embeddings of std 2/√hidden give the (tied) head logits of std ~2: a peaked, non-degenerate distribution.
  weight('token_embd.weight', hidden, nVocab, 2 / Math.sqrt(hidden), options.embeddingType ?? weightType);
  for (let l = 0; l < layers; l++) {
    const p = `blk.${l}`;
    vector(`${p}.attn_norm.weight`, hidden, 0.1, 1);
    weight(`${p}.attn_q.weight`, hidden, heads * headDim);
    weight(`${p}.attn_k.weight`, hidden, kvHeads * headDim);
    weight(`${p}.attn_v.weight`, hidden, kvHeads * headDim);
    if (architecture === 'qwen2') {
      vector(`${p}.attn_q.bias`, heads * headDim, 0.1, 0);
      vector(`${p}.attn_k.bias`, kvHeads * headDim, 0.1, 0);
      vector(`${p}.attn_v.bias`, kvHeads * headDim, 0.1, 0);
    }
    if (architecture === 'qwen3') {
      vector(`${p}.attn_q_norm.weight`, headDim, 0.1, 1);
      vector(`${p}.attn_k_norm.weight`, headDim, 0.1, 1);
    }
    weight(`${p}.attn_output.weight`, heads * headDim, hidden);
    vector(`${p}.ffn_norm.weight`, hidden, 0.1, 1);
    weight(`${p}.ffn_gate.weight`, hidden, ffn);
    weight(`${p}.ffn_up.weight`, hidden, ffn);
    weight(`${p}.ffn_down.weight`, ffn, hidden);
  }
  vector('output_norm.weight', hidden, 0.1, 1);
  if (!config.tiedEmbeddings) weight('output.weight', hidden, nVocab, 2 / Math.sqrt(hidden));
  return tensors;
}

/** The GGUF metadata llama.cpp reads: the architecture's hyperparameters, the tokenizer and the chat template. */
function tinyMetadata(
  config: TinyModelConfig,
  vocab: ReturnType<typeof tinyVocabulary>,
  special: TinyModel['special'],
  options: TinyModelOptions,
): GgufKv[] {
  const { architecture: a, hidden, layers, ffn, heads, kvHeads, headDim, weightType, vocabSize: nVocab } = config;
  return [
    kv.string('general.architecture', a),
    kv.string('general.type', 'model'),
    kv.string('general.name', options.name ?? `turnstream-tiny-${a}`),
    kv.u32('general.file_type', FILE_TYPE[weightType] ?? 0),
    kv.u32('general.quantization_version', 2),
    kv.u32(`${a}.context_length`, config.contextLength),
    kv.u32(`${a}.embedding_length`, hidden),
    kv.u32(`${a}.block_count`, layers),
    kv.u32(`${a}.feed_forward_length`, ffn),
    kv.u32(`${a}.attention.head_count`, heads),
    kv.u32(`${a}.attention.head_count_kv`, kvHeads),
    kv.f32(`${a}.attention.layer_norm_rms_epsilon`, config.rmsEps),
    kv.f32(`${a}.rope.freq_base`, config.ropeFreqBase),
    kv.u32(`${a}.rope.dimension_count`, headDim),
    ...(a === 'qwen3' ? [kv.u32(`${a}.attention.key_length`, headDim), kv.u32(`${a}.attention.value_length`, headDim)] : []),
    kv.u32(`${a}.vocab_size`, nVocab),
    kv.string('tokenizer.ggml.model', 'gpt2'),
    kv.string('tokenizer.ggml.pre', options.pre ?? (a === 'llama' ? 'smollm' : 'qwen2')),
    kv.strings('tokenizer.ggml.tokens', vocab.tokens),
    kv.i32s('tokenizer.ggml.token_type', vocab.types),
    kv.strings('tokenizer.ggml.merges', vocab.merges),
    kv.u32('tokenizer.ggml.bos_token_id', special.endOfText),
    kv.u32('tokenizer.ggml.eos_token_id', special.imEnd),
    kv.u32('tokenizer.ggml.padding_token_id', special.endOfText),
    kv.bool('tokenizer.ggml.add_bos_token', false),
    kv.string('tokenizer.chat_template', CHATML_TEMPLATE),
  ];
}
