import * as tf from '@tensorflow/tfjs';
import { invalidInput } from '../../core/index.ts';

/** Shape of the built-in decoder-only transformer. */
export interface ModelConfig {
  /** Vocabulary size (bytes + special tokens for the byte tokenizer). */
  vocabSize: number;
  /**
   * Longest sequence (prompt + response) the model attends over; learned position embeddings.
   * @default 256
   */
  contextLength: number;
  /**
   * Width of the residual stream.
   * @default 128
   */
  dModel: number;
  /**
   * Number of pre-LN transformer blocks.
   * @default 2
   */
  nLayers: number;
  /**
   * Attention heads per block; must divide `dModel`.
   * @default 4
   */
  nHeads: number;
  /**
   * Hidden width of the GELU MLP.
   * @default 512
   */
  dFf: number;
  /**
   * Output head shares the token embedding matrix.
   * @default true
   */
  tiedEmbeddings: boolean;
}

export const DEFAULT_MODEL_CONFIG: Omit<ModelConfig, 'vocabSize'> = {
  contextLength: 256,
  dModel: 128,
  nLayers: 2,
  nHeads: 4,
  dFf: 512,
  tiedEmbeddings: true,
};

/** Fills defaults and checks a (partial) config. */
export function resolveModelConfig(config: Partial<ModelConfig> & { vocabSize: number }): ModelConfig {
  const c: ModelConfig = { ...DEFAULT_MODEL_CONFIG, ...config };
  for (const k of ['vocabSize', 'contextLength', 'dModel', 'nLayers', 'nHeads', 'dFf'] as const) {
    if (!Number.isInteger(c[k]) || c[k] <= 0) throw invalidInput(`model config ${k} must be a positive integer`, k);
  }
  if (c.dModel % c.nHeads !== 0) throw invalidInput('model config dModel must be divisible by nHeads', 'nHeads');
  return c;
}

/** Per-layer attention keys and values of the tokens seen so far, each [B, H, T, dHead]. */
export interface KvCache {
  keys: tf.Tensor4D[];
  values: tf.Tensor4D[];
  /** Number of positions cached. */
  length: number;
}

/** Names and shapes of every weight of a config, in a stable order (the checkpoint order). */
export function weightShapes(c: ModelConfig): Array<{ name: string; shape: number[] }> {
  const out: Array<{ name: string; shape: number[] }> = [
    { name: 'wte', shape: [c.vocabSize, c.dModel] },
    { name: 'wpe', shape: [c.contextLength, c.dModel] },
  ];
  for (let l = 0; l < c.nLayers; l++) {
    const p = `h${l}.`;
    out.push(
      { name: `${p}ln1.g`, shape: [c.dModel] },
      { name: `${p}ln1.b`, shape: [c.dModel] },
      { name: `${p}attn.qkv.w`, shape: [c.dModel, 3 * c.dModel] },
      { name: `${p}attn.qkv.b`, shape: [3 * c.dModel] },
      { name: `${p}attn.proj.w`, shape: [c.dModel, c.dModel] },
      { name: `${p}attn.proj.b`, shape: [c.dModel] },
      { name: `${p}ln2.g`, shape: [c.dModel] },
      { name: `${p}ln2.b`, shape: [c.dModel] },
      { name: `${p}mlp.fc.w`, shape: [c.dModel, c.dFf] },
      { name: `${p}mlp.fc.b`, shape: [c.dFf] },
      { name: `${p}mlp.proj.w`, shape: [c.dFf, c.dModel] },
      { name: `${p}mlp.proj.b`, shape: [c.dModel] },
    );
  }
  out.push({ name: 'lnf.g', shape: [c.dModel] }, { name: 'lnf.b', shape: [c.dModel] });
  if (!c.tiedEmbeddings) out.push({ name: 'head.w', shape: [c.dModel, c.vocabSize] });
  return out;
}

let instanceCounter = 0;

/**
 * A small GPT-style decoder: token + learned position embeddings, pre-LN blocks with causal
 * multi-head self-attention and a GELU MLP, final LayerNorm, tied or untied output head.
 * Weights are named trainable `tf.Variable`s (`model.variables`), so any tfjs optimizer can
 * train them. Every method disposes its intermediates; the caller owns returned tensors.
 */
export class TransformerModel {
  readonly config: ModelConfig;
  /** Weights by name, in `weightShapes` order. */
  readonly weights: Map<string, tf.Variable>;
  private disposed = false;

  private constructor(config: ModelConfig, weights: Map<string, tf.Variable>) {
    this.config = config;
    this.weights = weights;
  }

  /**
   * Random init (GPT-2 style: N(0, 0.02), residual projections scaled by 1/√(2·nLayers),
   * LayerNorm gains 1, biases 0). Deterministic for a given seed.
   */
  static init(config: Partial<ModelConfig> & { vocabSize: number }, seed = 0): TransformerModel {
    const c = resolveModelConfig(config);
    const id = instanceCounter++;
    const weights = new Map<string, tf.Variable>();
    weightShapes(c).forEach(({ name, shape }, i) => {
      const init = tf.tidy(() => {
        if (name.endsWith('.g')) return tf.ones(shape);
        if (name.endsWith('.b')) return tf.zeros(shape);
        const std = name.endsWith('proj.w') ? 0.02 / Math.sqrt(2 * c.nLayers) : 0.02;
        return tf.randomNormal(shape, 0, std, 'float32', seed * 1000 + i);
      });
      weights.set(name, tf.variable(init, true, `m${id}/${name}`));
      init.dispose();
    });
    return new TransformerModel(c, weights);
  }

  /** Wraps given weight values (copied into variables); shapes must match the config. */
  static fromTensors(config: ModelConfig, values: Map<string, tf.Tensor>): TransformerModel {
    const c = resolveModelConfig(config);
    const id = instanceCounter++;
    const weights = new Map<string, tf.Variable>();
    for (const { name, shape } of weightShapes(c)) {
      const v = values.get(name);
      if (!v || v.shape.join(',') !== shape.join(',')) {
        for (const w of weights.values()) w.dispose();
        throw invalidInput(`weight ${name} has shape [${v?.shape ?? 'missing'}], expected [${shape}]`, name);
      }
      weights.set(name, tf.variable(v, true, `m${id}/${name}`));
    }
    return new TransformerModel(c, weights);
  }

  /** Trainable variables, in checkpoint order. */
  get variables(): tf.Variable[] {
    return [...this.weights.values()];
  }

  private w(name: string): tf.Variable {
    const v = this.weights.get(name);
    if (!v) throw new Error(`no weight ${name}`);
    return v;
  }

  /** Logits [B, T, V] for ids [B, T] (T ≤ contextLength). */
  forwardLogits(ids: tf.Tensor2D | number[][]): tf.Tensor3D {
    return tf.tidy(() => {
      const x = ids instanceof tf.Tensor ? ids : tf.tensor2d(ids, undefined, 'int32');
      return this.forward(x, null).logits;
    });
  }

  /**
   * Logits [B, n, V] for `ids` [B, n] that follow the `cache.length` positions in `cache`, and the
   * extended cache. The input cache is not disposed; the caller disposes both caches.
   */
  forwardWithCache(ids: tf.Tensor2D, cache: KvCache | null): { logits: tf.Tensor3D; cache: KvCache } {
    const keys: tf.Tensor4D[] = [];
    const values: tf.Tensor4D[] = [];
    const logits = tf.tidy(() => {
      const r = this.forward(ids, cache, keys, values);
      for (const t of [...keys, ...values]) tf.keep(t);
      return r.logits;
    });
    return { logits, cache: { keys, values, length: (cache?.length ?? 0) + ids.shape[1] } };
  }

  /**
   * Per-token log π(target | prefix) [B, T] for training: position t scores `targetIds[:, t]`
   * after `inputIds[:, :t+1]`; masked positions (mask 0) are exactly 0. Differentiable with
   * respect to the model's variables.
   */
  tokenLogprobs(inputIds: tf.Tensor2D, targetIds: tf.Tensor2D, mask: tf.Tensor2D): tf.Tensor2D {
    return tf.tidy(() => {
      const logits = this.forward(inputIds, null).logits;
      const logp = tf.logSoftmax(logits);
      const onehot = tf.oneHot(tf.cast(targetIds, 'int32'), this.config.vocabSize);
      const picked = tf.sum(tf.mul(logp, onehot), -1) as tf.Tensor2D;
      return tf.where(tf.greater(mask, 0), picked, tf.zerosLike(picked)) as tf.Tensor2D;
    });
  }

  private forward(ids: tf.Tensor2D, cache: KvCache | null, outKeys?: tf.Tensor4D[], outValues?: tf.Tensor4D[]): { logits: tf.Tensor3D } {
    const c = this.config;
    const [B, T] = ids.shape;
    const past = cache?.length ?? 0;
    if (past + T > c.contextLength) {
      throw invalidInput(`sequence of ${past + T} tokens exceeds the context length ${c.contextLength}`);
    }
    const H = c.nHeads;
    const dh = c.dModel / H;
    // One-hot · matrix rather than gather: its gradient is a matMul, which every backend has
    // (gather's gradient needs UnsortedSegmentSum, missing on wasm), and V is small.
    const onehot = tf.oneHot(tf.reshape(tf.cast(ids, 'int32'), [B * T]), c.vocabSize);
    const tok = tf.reshape(tf.matMul(onehot, this.w('wte')), [B, T, c.dModel]);
    const pos = tf.slice(this.w('wpe'), [past, 0], [T, c.dModel]);
    let x = tf.add(tok, pos) as tf.Tensor3D;
    const mask = causalMask(T, past);
    for (let l = 0; l < c.nLayers; l++) {
      const p = `h${l}.`;
      const h = layerNorm(x, this.w(`${p}ln1.g`), this.w(`${p}ln1.b`));
      const qkv = tf.add(dense(h, this.w(`${p}attn.qkv.w`)), this.w(`${p}attn.qkv.b`));
      const [q, k, v] = tf.split(qkv, 3, -1).map((t) => tf.transpose(tf.reshape(t, [B, T, H, dh]), [0, 2, 1, 3])) as [
        tf.Tensor4D,
        tf.Tensor4D,
        tf.Tensor4D,
      ];
      const kAll = cache ? (tf.concat([cache.keys[l], k], 2) as tf.Tensor4D) : k;
      const vAll = cache ? (tf.concat([cache.values[l], v], 2) as tf.Tensor4D) : v;
      outKeys?.push(kAll);
      outValues?.push(vAll);
      const scores = tf.add(tf.mul(tf.matMul(q, kAll, false, true), 1 / Math.sqrt(dh)), mask);
      const att = tf.matMul(tf.softmax(scores), vAll);
      const merged = tf.reshape(tf.transpose(att, [0, 2, 1, 3]), [B, T, c.dModel]);
      x = tf.add(x, tf.add(dense(merged, this.w(`${p}attn.proj.w`)), this.w(`${p}attn.proj.b`)));
      const h2 = layerNorm(x, this.w(`${p}ln2.g`), this.w(`${p}ln2.b`));
      const f = gelu(tf.add(dense(h2, this.w(`${p}mlp.fc.w`)), this.w(`${p}mlp.fc.b`)));
      x = tf.add(x, tf.add(dense(f, this.w(`${p}mlp.proj.w`)), this.w(`${p}mlp.proj.b`)));
    }
    const hf = layerNorm(x, this.w('lnf.g'), this.w('lnf.b'));
    const head = c.tiedEmbeddings ? tf.transpose(this.w('wte')) : this.w('head.w');
    return { logits: dense(hf, head) as tf.Tensor3D };
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const v of this.weights.values()) v.dispose();
  }

  get isDisposed(): boolean {
    return this.disposed;
  }
}

/** Disposes a KV cache's tensors. */
export function disposeCache(cache: KvCache | null): void {
  if (!cache) return;
  for (const t of [...cache.keys, ...cache.values]) t.dispose();
}

/** [B, T, d] · [d, e] → [B, T, e]. */
function dense(x: tf.Tensor, w: tf.Tensor): tf.Tensor3D {
  const [B, T, d] = x.shape as [number, number, number];
  return tf.reshape(tf.matMul(tf.reshape(x, [B * T, d]), w), [B, T, w.shape[1] as number]);
}

function layerNorm(x: tf.Tensor, g: tf.Tensor, b: tf.Tensor): tf.Tensor3D {
  const { mean, variance } = tf.moments(x, -1, true);
  return tf.add(tf.mul(tf.div(tf.sub(x, mean), tf.sqrt(tf.add(variance, 1e-5))), g), b) as tf.Tensor3D;
}

/** GELU, tanh approximation (as GPT-2). */
function gelu(x: tf.Tensor): tf.Tensor {
  const inner = tf.mul(Math.sqrt(2 / Math.PI), tf.add(x, tf.mul(0.044715, tf.mul(tf.mul(x, x), x))));
  return tf.mul(tf.mul(0.5, x), tf.add(1, tf.tanh(inner)));
}

/** Additive mask [T, past+T]: query i (absolute past+i) may see keys j ≤ past+i. */
function causalMask(T: number, past: number): tf.Tensor2D {
  const n = past + T;
  const m = new Float32Array(T * n);
  for (let i = 0; i < T; i++) for (let j = past + i + 1; j < n; j++) m[i * n + j] = -1e9;
  return tf.tensor2d(m, [T, n]);
}
