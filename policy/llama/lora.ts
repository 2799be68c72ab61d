/**
 * LoRA adapters on the frozen Llama weights: W' = W + (alpha/r)·B·A per targeted matrix, in
 * llama.cpp's GGUF adapter layout (tensors `blk.N.<name>.weight.lora_a` [in, r] and `.lora_b`
 * [r, out], metadata `adapter.lora.alpha`), so a version the trainer writes loads unchanged into
 * the serving engine. In memory A and B are kept transposed (aᵀ [in, r], bᵀ [r, out]) for x·aᵀ·bᵀ.
 */
import * as tf from '@tensorflow/tfjs';
import { ErrorCodes, TurnstreamError, invalidInput } from '../../core/index.ts';
import type { LoraPair } from '../gguf/lora-adapter.ts';
import type { LlamaConfig } from './llama-config.ts';

/** Short names of the matrices LoRA can target, and their GGUF tensor names. */
export const LORA_TARGETS = {
  q: 'attn_q',
  k: 'attn_k',
  v: 'attn_v',
  o: 'attn_output',
  gate: 'ffn_gate',
  up: 'ffn_up',
  down: 'ffn_down',
} as const;
export type LoraTarget = keyof typeof LORA_TARGETS;

export interface LoraConfig {
  /** Rank r of each update. @default 8 */
  rank: number;
  /** Scale numerator: the update is (alpha / rank)·B·A. @default 16 */
  alpha: number;
  /** Matrices adapted in every adapted layer. @default ['q', 'k', 'v', 'o'] */
  targets: LoraTarget[];
  /**
   * Adapt only the last N layers (gradients then stop there, which makes a step cheaper);
   * 0 = all layers. @default 0
   */
  lastLayers: number;
}

export const DEFAULT_LORA: LoraConfig = { rank: 8, alpha: 16, targets: ['q', 'k', 'v', 'o'], lastLayers: 0 };

/** Parses `q,k,v,o` into targets; INVALID_INPUT names the bad one. */
export function parseLoraTargets(text: string): LoraTarget[] {
  const out: LoraTarget[] = [];
  for (const t of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    if (!(t in LORA_TARGETS))
      throw invalidInput(`unknown LoRA target ${JSON.stringify(t)} (known: ${Object.keys(LORA_TARGETS).join(', ')})`, 'targets');
    if (!out.includes(t as LoraTarget)) out.push(t as LoraTarget);
  }
  if (out.length === 0) throw invalidInput('LoRA needs at least one target', 'targets');
  return out;
}

/** [in, out] of a target matrix. */
export function targetShape(c: LlamaConfig, target: LoraTarget): [number, number] {
  const q = c.heads * c.headDim;
  const kv = c.kvHeads * c.headDim;
  switch (target) {
    case 'q':
      return [c.hiddenSize, q];
    case 'k':
    case 'v':
      return [c.hiddenSize, kv];
    case 'o':
      return [q, c.hiddenSize];
    case 'gate':
    case 'up':
      return [c.hiddenSize, c.ffnSize];
    case 'down':
      return [c.ffnSize, c.hiddenSize];
  }
}

export interface LoraModule {
  layer: number;
  target: LoraTarget;
  /** aᵀ [in, r]. */
  a: tf.Variable;
  /** bᵀ [r, out]. */
  b: tf.Variable;
}

/** The base tensor a module adapts, e.g. `blk.3.attn_q.weight`. */
export const targetTensor = (layer: number, target: LoraTarget): string => `blk.${layer}.${LORA_TARGETS[target]}.weight`;

let adapterCounter = 0;

export class LoraAdapter {
  /** Modules by `${layer}.${target}`. */
  readonly modules = new Map<string, LoraModule>();
  private disposed = false;

  private constructor(
    readonly model: LlamaConfig,
    readonly config: LoraConfig,
  ) {}

  /** The layers that carry modules. */
  get layers(): number[] {
    const first = this.config.lastLayers > 0 ? Math.max(0, this.model.layers - this.config.lastLayers) : 0;
    return Array.from({ length: this.model.layers - first }, (_, i) => first + i);
  }

  /** The lowest adapted layer: no gradient needs to flow below it. */
  get firstLayer(): number {
    return this.layers[0] ?? this.model.layers;
  }

  get scale(): number {
    return this.config.alpha / this.config.rank;
  }

  /** Trainable variables, in a stable order. */
  get variables(): tf.Variable[] {
    return [...this.modules.values()].flatMap((m) => [m.a, m.b]);
  }

  get parameterCount(): number {
    return this.variables.reduce((n, v) => n + v.size, 0);
  }

  module(layer: number, target: LoraTarget): LoraModule | undefined {
    return this.modules.get(`${layer}.${target}`);
  }

  /**
   * A fresh adapter: A uniform in ±1/√in (as PEFT's default), B zero, so the adapted model
   * starts exactly at the base. Deterministic for a seed.
   */
  static init(model: LlamaConfig, config: Partial<LoraConfig> = {}, seed = 0): LoraAdapter {
    const c: LoraConfig = { ...DEFAULT_LORA, ...config };
    if (!Number.isInteger(c.rank) || c.rank < 1) throw invalidInput('LoRA rank must be a positive integer', 'rank');
    if (!(c.alpha > 0)) throw invalidInput('LoRA alpha must be > 0', 'alpha');
    const lora = new LoraAdapter(model, c);
    const id = adapterCounter++;
    let i = 0;
    for (const layer of lora.layers) {
      for (const target of c.targets) {
        const [inDim, outDim] = targetShape(model, target);
        const bound = 1 / Math.sqrt(inDim);
        const a = tf.variable(
          tf.randomUniform([inDim, c.rank], -bound, bound, 'float32', seed * 100_003 + i++),
          true,
          `lora${id}/${layer}.${target}.a`,
        );
        const b = tf.variable(tf.zeros([c.rank, outDim]), true, `lora${id}/${layer}.${target}.b`);
        lora.modules.set(`${layer}.${target}`, { layer, target, a, b });
      }
    }
    return lora;
  }

  /** The adapter as GGUF LoRA pairs: A row-major [r][in], B row-major [out][r] (llama.cpp's layout). */
  async toPairs(): Promise<LoraPair[]> {
    const out: LoraPair[] = [];
    for (const m of this.modules.values()) {
      const [inFeatures, outFeatures] = targetShape(this.model, m.target);
      const A = tf.transpose(m.a);
      const B = tf.transpose(m.b);
      out.push({
        target: targetTensor(m.layer, m.target),
        inFeatures,
        outFeatures,
        a: (await A.data()) as Float32Array,
        b: (await B.data()) as Float32Array,
      });
      tf.dispose([A, B]);
    }
    return out;
  }

  /** Rebuilds an adapter from its GGUF pairs (a version the learner resumes from); CORRUPT_WEIGHTS when one is missing. */
  static fromPairs(model: LlamaConfig, config: LoraConfig, pairs: ReadonlyMap<string, LoraPair>): LoraAdapter {
    const lora = new LoraAdapter(model, config);
    const id = adapterCounter++;
    try {
      for (const layer of lora.layers) {
        for (const target of config.targets) {
          const [inDim, outDim] = targetShape(model, target);
          const name = targetTensor(layer, target);
          const p = pairs.get(name);
          if (!p || p.a.length !== inDim * config.rank || p.b.length !== config.rank * outDim) {
            throw new TurnstreamError(ErrorCodes.CORRUPT_WEIGHTS, `adapter pair ${name} missing or not of rank ${config.rank}`);
          }
          const a = tf.tidy(() =>
            tf.variable(tf.transpose(tf.tensor2d(p.a, [config.rank, inDim])), true, `lora${id}/${layer}.${target}.a`),
          );
          const b = tf.tidy(() =>
            tf.variable(tf.transpose(tf.tensor2d(p.b, [outDim, config.rank])), true, `lora${id}/${layer}.${target}.b`),
          );
          lora.modules.set(`${layer}.${target}`, { layer, target, a, b });
        }
      }
    } catch (err) {
      lora.dispose();
      throw err;
    }
    return lora;
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const v of this.variables) v.dispose();
  }
}
