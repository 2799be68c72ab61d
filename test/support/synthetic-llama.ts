/**
 * A small random Llama-family checkpoint in memory (a TensorSource), for pure-logic tests of the
 * tfjs forward pass and LoRA gradients. Files llama.cpp can load come from the GGUF writer.
 */
import type { LlamaConfig } from '../../policy/llama/llama-config.ts';
import type { TensorSource } from '../../policy/llama/tensor-source.ts';

export function syntheticConfig(over: Partial<LlamaConfig> = {}): LlamaConfig {
  return {
    architecture: 'llama',
    vocabSize: 50,
    hiddenSize: 16,
    layers: 2,
    heads: 4,
    kvHeads: 2,
    headDim: 4,
    ffnSize: 24,
    rmsEps: 1e-5,
    ropeBase: 10000,
    ropeDim: 4,
    ropeType: 'norm',
    contextLength: 64,
    attentionBias: false,
    qkNorm: false,
    tiedEmbeddings: true,
    ropeFreqFactors: false,
    ...over,
  };
}

/** Deterministic pseudo-random values in ±scale. */
function values(n: number, seed: number, scale: number, offset = 0): Float32Array {
  let s = seed >>> 0 || 1;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = offset + ((s >>> 0) / 0xffffffff - 0.5) * 2 * scale;
  }
  return out;
}

export function syntheticSource(c: LlamaConfig, seed = 1): TensorSource {
  const t = new Map<string, { dims: number[]; data: Float32Array }>();
  let k = seed * 1000;
  const add = (name: string, dims: number[], scale: number, offset = 0): void => {
    t.set(name, {
      dims,
      data: values(
        dims.reduce((a, b) => a * b, 1),
        ++k,
        scale,
        offset,
      ),
    });
  };
  const d = c.hiddenSize;
  const q = c.heads * c.headDim;
  const kv = c.kvHeads * c.headDim;
  add('token_embd.weight', [d, c.vocabSize], 0.5);
  if (!c.tiedEmbeddings) add('output.weight', [d, c.vocabSize], 0.3);
  add('output_norm.weight', [d], 0.1, 1);
  if (c.ropeFreqFactors) add('rope_freqs.weight', [c.ropeDim / 2], 0.5, 2);
  for (let l = 0; l < c.layers; l++) {
    const p = `blk.${l}.`;
    add(`${p}attn_norm.weight`, [d], 0.1, 1);
    add(`${p}ffn_norm.weight`, [d], 0.1, 1);
    add(`${p}attn_q.weight`, [d, q], 0.4);
    add(`${p}attn_k.weight`, [d, kv], 0.4);
    add(`${p}attn_v.weight`, [d, kv], 0.4);
    add(`${p}attn_output.weight`, [q, d], 0.4);
    add(`${p}ffn_gate.weight`, [d, c.ffnSize], 0.4);
    add(`${p}ffn_up.weight`, [d, c.ffnSize], 0.4);
    add(`${p}ffn_down.weight`, [c.ffnSize, d], 0.4);
    if (c.attentionBias) {
      add(`${p}attn_q.bias`, [q], 0.2);
      add(`${p}attn_k.bias`, [kv], 0.2);
      add(`${p}attn_v.bias`, [kv], 0.2);
    }
    if (c.qkNorm) {
      add(`${p}attn_q_norm.weight`, [c.headDim], 0.1, 1);
      add(`${p}attn_k_norm.weight`, [c.headDim], 0.1, 1);
    }
  }
  return {
    names: new Set(t.keys()),
    dims: (n) => t.get(n)!.dims,
    read: async (n) => t.get(n)!.data,
  };
}
