/**
 * A full model with a LoRA adapter folded in (`turnstream export --merged`): W' = W + s·B·A with
 * s = scale · alpha / rank (llama.cpp's rule; alpha 0 means s = scale), written tensor by tensor.
 * Adapted weights are stored in `type`; every other tensor is copied byte for byte, and every
 * key/value verbatim, so the result loads wherever the base did (llama.cpp, Ollama).
 */
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';
import { openGguf, type GgufFile } from './gguf-file.ts';
import { GgmlType, ggmlTypeLayout } from './ggml-type.ts';
import { writeGguf, type GgufTensorSpec, type WrittenGguf } from './gguf-writer.ts';
import { readLoraAdapter, type LoraPair } from './lora-adapter.ts';
import { readRawMetadata } from './raw-metadata.ts';

/** Options of {@link mergeLora}. */
export interface MergeLoraOptions {
  /** The base model GGUF (a path, or an open file left open). */
  base: string | GgufFile;
  /** The LoRA adapter GGUF (a path, or an open file left open). */
  adapter: string | GgufFile;
  /** Where to write the merged model. */
  output: string;
  /** Storage type of the merged weights. @default 'F16' */
  type?: 'F32' | 'F16' | 'Q8_0';
  /** Adapter strength, as llama.cpp's per-adapter scale. @default 1 */
  scale?: number;
}

/** W (row-major [out][in]) += s · B [out][r] · A [r][in], in place. */
export function addLoraDelta(w: Float32Array, pair: LoraPair, rank: number, s: number): void {
  const { a, b, inFeatures: n, outFeatures: m } = pair;
  const row = new Float64Array(n);
  for (let o = 0; o < m; o++) {
    row.fill(0);
    for (let k = 0; k < rank; k++) {
      const bk = b[o * rank + k];
      if (bk === 0) continue;
      const ao = k * n;
      for (let i = 0; i < n; i++) row[i] += bk * a[ao + i];
    }
    const wo = o * n;
    for (let i = 0; i < n; i++) w[wo + i] += s * row[i];
  }
}

/**
 * Writes `base` with `adapter` merged into `output` (atomically).
 * @throws TurnstreamError TS_ERR_INVALID_INPUT when the adapter does not fit the base (architecture,
 *   a target it lacks, shapes)
 */
export async function mergeLora(options: MergeLoraOptions): Promise<WrittenGguf> {
  const base = typeof options.base === 'string' ? await openGguf(options.base) : options.base;
  const adapterFile = typeof options.adapter === 'string' ? await openGguf(options.adapter) : options.adapter;
  try {
    const adapter = await readLoraAdapter(adapterFile);
    const bad = (message: string): TurnstreamError => new TurnstreamError(ErrorCodes.INVALID_INPUT, message);
    if (adapter.architecture !== base.architecture) {
      throw bad(`the adapter is for ${adapter.architecture}, the base is ${base.architecture}`);
    }
    for (const [target, p] of adapter.pairs) {
      if (target === 'token_embd.weight') throw bad('merging a LoRA on token_embd.weight is not supported (llama.cpp flips its A and B)');
      if (!base.has(target)) throw bad(`the base model has no tensor ${target}`);
      const dims = base.tensor(target).dims;
      if (dims[0] !== p.inFeatures || dims[1] !== p.outFeatures) {
        throw bad(`${target} is [${dims.join(', ')}] in the base, the adapter's pair is [${p.inFeatures}, ${p.outFeatures}]`);
      }
    }
    const s = (options.scale ?? 1) * (adapter.alpha ? adapter.alpha / adapter.rank : 1);
    const wanted = GgmlType[options.type ?? 'F16'];
    const tensors: GgufTensorSpec[] = base.tensors.map((t) => {
      const pair = adapter.pairs.get(t.name);
      if (!pair) return { name: t.name, dims: t.dims, type: t.type, data: () => base.readTensorBytes(t.name) };
      // Q8_0 needs rows of whole blocks; a row that is not falls back to F16.
      const type = t.dims[0] % (ggmlTypeLayout(wanted)?.blockSize ?? 1) === 0 ? wanted : GgmlType.F16;
      return {
        name: t.name,
        dims: t.dims,
        type,
        data: async () => {
          const w = await base.readTensor(t.name);
          addLoraDelta(w, pair, adapter.rank, s);
          return w;
        },
      };
    });
    const alignment = Number((base.metadata.general as { alignment?: unknown } | undefined)?.alignment ?? 32);
    return await writeGguf(options.output, { metadata: await readRawMetadata(base), tensors, alignment });
  } finally {
    if (typeof options.base === 'string') await base.close();
    if (typeof options.adapter === 'string') await adapterFile.close();
  }
}
