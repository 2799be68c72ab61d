/**
 * LoRA adapters in llama.cpp's GGUF adapter format. For a base weight W with GGUF dims
 * [ne0 = in, ne1 = out], the adapter holds `<name>.lora_a` with dims [in, r] (row-major [r][in],
 * PEFT's lora_A) and `<name>.lora_b` with dims [r, out] (row-major [out][r], PEFT's lora_B);
 * llama.cpp computes W·x + (alpha / r)·scale·B·(A·x), scale being the one given at load time.
 */
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';
import type { GgufFile } from './gguf-file.ts';
import { GgmlType } from './ggml-type.ts';
import { kv, writeGguf, type GgufKv, type GgufTensorSpec, type WrittenGguf } from './gguf-writer.ts';

/** The A and B matrices adapting one base weight. */
export interface LoraPair {
  /** The base weight's tensor name, e.g. `blk.0.attn_q.weight`. */
  target: string;
  /** Input features (the base weight's ne0). */
  inFeatures: number;
  /** Output features (the base weight's ne1). */
  outFeatures: number;
  /** A, row-major [rank][inFeatures]. */
  a: Float32Array;
  /** B, row-major [outFeatures][rank]. */
  b: Float32Array;
}

/** Options of {@link writeLoraAdapter}. */
export interface WriteLoraAdapterOptions {
  /** The base model's `general.architecture` (llama.cpp refuses an adapter of another). */
  architecture: string;
  /** LoRA alpha; llama.cpp scales by alpha / rank. */
  alpha: number;
  /** The adapted weights; all of one rank. */
  pairs: readonly LoraPair[];
  /** Storage type of A and B. @default 'F32' */
  type?: 'F32' | 'F16';
  /** `general.name`. @default undefined = none */
  name?: string;
  /** Checked against the base's tensor shapes when given (a mismatch fails here, not at load in llama.cpp). @default undefined */
  base?: GgufFile;
  /** More key/values (e.g. `training.*`). @default [] */
  metadata?: readonly GgufKv[];
}

/** Tensor names of a pair: `blk.0.attn_q.weight` → `blk.0.attn_q.weight.lora_a` / `.lora_b`. */
export const loraTensorNames = (target: string): { a: string; b: string } => ({ a: `${target}.lora_a`, b: `${target}.lora_b` });

/**
 * Writes a LoRA adapter GGUF (atomically) and returns its size and sha256.
 * @throws TurnstreamError TS_ERR_INVALID_INPUT for inconsistent shapes or ranks, or a target the base lacks
 */
export async function writeLoraAdapter(path: string, options: WriteLoraAdapterOptions): Promise<WrittenGguf> {
  if (options.pairs.length === 0) throw new TurnstreamError(ErrorCodes.INVALID_INPUT, 'a LoRA adapter needs at least one pair');
  const bad = (message: string): TurnstreamError => new TurnstreamError(ErrorCodes.INVALID_INPUT, message);
  const rank = options.pairs[0].a.length / options.pairs[0].inFeatures;
  const type = options.type === 'F16' ? GgmlType.F16 : GgmlType.F32;
  const tensors: GgufTensorSpec[] = [];
  for (const p of options.pairs) {
    // llama.cpp flips A and B for the token embedding (a lookup, not a product); not supported here.
    if (p.target === 'token_embd.weight') throw bad('a LoRA on token_embd.weight is not supported');
    const r = p.a.length / p.inFeatures;
    if (!Number.isInteger(r) || r < 1 || r !== rank) throw bad(`${p.target}: A holds ${p.a.length} values, not ${rank} × ${p.inFeatures}`);
    if (p.b.length !== p.outFeatures * rank) throw bad(`${p.target}: B holds ${p.b.length} values, not ${p.outFeatures} × ${rank}`);
    if (options.base) {
      if (!options.base.has(p.target)) throw bad(`the base model has no tensor ${p.target}`);
      const dims = options.base.tensor(p.target).dims;
      if (dims.length !== 2 || dims[0] !== p.inFeatures || dims[1] !== p.outFeatures) {
        throw bad(`${p.target} is [${dims.join(', ')}] in the base, the pair is [${p.inFeatures}, ${p.outFeatures}]`);
      }
    }
    const names = loraTensorNames(p.target);
    tensors.push({ name: names.a, dims: [p.inFeatures, rank], type, data: p.a });
    tensors.push({ name: names.b, dims: [rank, p.outFeatures], type, data: p.b });
  }
  const metadata: GgufKv[] = [
    kv.string('general.architecture', options.architecture),
    kv.string('general.type', 'adapter'),
    ...(options.name ? [kv.string('general.name', options.name)] : []),
    kv.string('adapter.type', 'lora'),
    kv.f32('adapter.lora.alpha', options.alpha),
    ...(options.metadata ?? []),
  ];
  return writeGguf(path, { metadata, tensors });
}

/** An adapter read back: alpha, rank and its pairs by target name. */
export interface LoraAdapter {
  architecture: string;
  alpha: number;
  rank: number;
  pairs: Map<string, LoraPair>;
}

/**
 * Reads a LoRA adapter written by {@link writeLoraAdapter} (or any llama.cpp LoRA GGUF).
 * @throws TurnstreamError TS_ERR_INVALID_INPUT when the file is not a LoRA adapter
 */
export async function readLoraAdapter(file: GgufFile): Promise<LoraAdapter> {
  const general = file.metadata.general as { type?: unknown } | undefined;
  const adapter = (file.metadata as { adapter?: { type?: unknown; lora?: { alpha?: unknown } } }).adapter;
  if (general?.type !== 'adapter' || adapter?.type !== 'lora') {
    throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `${file.path} is not a LoRA adapter (general.type / adapter.type)`);
  }
  const pairs = new Map<string, LoraPair>();
  let rank = 0;
  for (const t of file.tensors) {
    if (!t.name.endsWith('.lora_a')) continue;
    const target = t.name.slice(0, -'.lora_a'.length);
    const bName = `${target}.lora_b`;
    if (!file.has(bName)) throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `${file.path}: ${t.name} has no ${bName}`);
    const [inFeatures, r] = t.dims;
    const outFeatures = file.tensor(bName).dims[1];
    rank = r;
    pairs.set(target, { target, inFeatures, outFeatures, a: await file.readTensor(t.name), b: await file.readTensor(bName) });
  }
  return { architecture: file.architecture, alpha: Number(adapter.lora?.alpha ?? 0), rank, pairs };
}
