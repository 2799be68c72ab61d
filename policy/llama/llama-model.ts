/**
 * The forward pass of Llama-family checkpoints (llama, qwen2, qwen3) in tfjs, on the frozen
 * weights dequantized from the GGUF, with an optional LoRA adapter: RMSNorm, rotary
 * embeddings, grouped-query causal attention, SwiGLU, tied or separate head.
 *
 * Training never builds one tape over the whole model. `trainPass` runs the forward pass once,
 * keeping only each layer's input (per-layer recomputation, "gradient checkpointing"); its
 * `backward` then recomputes one layer at a time under `tf.grads` and returns the gradients of
 * the LoRA variables. Logits are computed only at the positions asked for (the response), so a
 * long prompt costs layers, not vocabulary-sized products.
 */
import * as tf from '@tensorflow/tfjs';
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';
import { causalMask } from './causal-attention.ts';
import {
  decoderLayer,
  decoderLayerBackward,
  groupTensors,
  inputGroup,
  LayerSaved,
  savedLayerBytes,
  tableTensors,
  type InputGroup,
  type LayerContext,
  type LayerLora,
  type LayerTables,
  type LayerWeights,
} from './decoder-layer.ts';
import { frozenLinear, frozenMatrix, plainOperandsOnly, type FrozenMatrix } from './frozen-linear.ts';
import type { LlamaConfig } from './llama-config.ts';
import { LORA_TARGETS, type LoraAdapter, type LoraTarget } from './lora.ts';
import { rmsNorm } from './rms-norm.ts';
import { rotaryFullTables, rotaryTables, rotateHalfMatrix, type RotaryOptions } from './rotary.ts';
import { selectRows } from './select-rows.ts';
import type { TensorSource } from './tensor-source.ts';

/** One training forward pass; see `TfLlamaModel.trainPass`. */
export interface LlamaTrainPass {
  /** Logits [R, V] at the requested positions. */
  readonly logits: tf.Tensor2D;
  /** The input of the lowest adapted layer (owned by the pass: clone to keep it). */
  readonly firstInput: tf.Tensor2D;
  /** Gradients of the adapter's variables (in `lora.variables` order) for dL/dlogits. */
  backward(dlogits: tf.Tensor2D): tf.Tensor[];
  dispose(): void;
}

export interface LlamaLoadOptions {
  /** Called after each tensor is loaded (progress). */
  onTensor?: (loaded: number, total: number) => void;
}

/** The train pass of several sequences at once; see `TfLlamaModel.trainPassRows`. */
export interface LlamaRowsPass {
  /** Logits [R_i, V] at each row's positions. */
  readonly logits: tf.Tensor2D[];
  /** Each row's input of the lowest adapted layer [T_i, d] (owned by the pass: clone to keep). */
  readonly firstInputs: tf.Tensor2D[];
  /** Gradients of the adapter's variables (in `lora.variables` order) for each row's dL/dlogits. */
  backward(dlogits: tf.Tensor2D[]): tf.Tensor[];
  dispose(): void;
}

/** Options of {@link TfLlamaModel.trainPass}. */
export interface TrainPassOptions {
  /**
   * On native TensorFlow, bytes of layer intermediates a pass may keep for its backward pass
   * (SmolLM2-135M: ~7 MB a layer at 128 tokens, ~15 MB at 256); layers past the budget keep
   * only their input and run their forward pass again during the backward pass.
   * @default 512 MiB
   */
  keepBytes?: number;
}

/** Default of {@link TrainPassOptions.keepBytes}. */
export const DEFAULT_KEEP_BYTES = 512 * 2 ** 20;

export class TfLlamaModel {
  private readonly rotary: RotaryOptions;
  private readonly tables = new Map<number, LayerTables>();
  private disposed = false;

  private constructor(
    readonly config: LlamaConfig,
    private readonly embedding: tf.Tensor2D,
    private readonly head: FrozenMatrix,
    private readonly outputNorm: tf.Tensor1D,
    private readonly layers: LayerWeights[],
    freqFactors: Float32Array | null,
  ) {
    this.rotary = { ropeDim: config.ropeDim, headDim: config.headDim, base: config.ropeBase, type: config.ropeType, freqFactors };
  }

  /** Dequantizes and loads the frozen weights (on wasm in both orientations; see frozen-linear.ts). */
  static async load(config: LlamaConfig, src: TensorSource, opts: LlamaLoadOptions = {}): Promise<TfLlamaModel> {
    const owned: tf.Tensor[] = [];
    const total = src.names.size;
    let loaded = 0;
    const read = async (name: string, expected: number[]): Promise<Float32Array> => {
      if (!src.names.has(name)) throw new TurnstreamError(ErrorCodes.CORRUPT_WEIGHTS, `the checkpoint has no tensor ${name}`);
      const dims = src.dims(name);
      if (dims.join(',') !== expected.join(',')) {
        throw new TurnstreamError(ErrorCodes.CORRUPT_WEIGHTS, `tensor ${name} has dims [${dims}], expected [${expected}]`);
      }
      const data = await src.read(name);
      opts.onTensor?.(++loaded, total);
      return data;
    };
    const vec = async (name: string, n: number): Promise<tf.Tensor1D> => {
      const t = tf.tensor1d(await read(name, [n]));
      owned.push(t);
      return t;
    };
    const mat = async (name: string, inDim: number, outDim: number): Promise<FrozenMatrix> => {
      const m = frozenMatrix(await read(name, [inDim, outDim]), outDim, inDim);
      owned.push(m.raw, ...(m.t ? [m.t] : []));
      return m;
    };
    const group = async (names: string[], inDim: number, outs: number[]): Promise<InputGroup> => {
      const datas: Float32Array[] = [];
      for (const [i, name] of names.entries()) datas.push(await read(name, [inDim, outs[i]]));
      const g = inputGroup(datas, outs, inDim);
      owned.push(...groupTensors(g));
      return g;
    };
    const c = config;
    const d = c.hiddenSize;
    const qDim = c.heads * c.headDim;
    const kvDim = c.kvHeads * c.headDim;
    try {
      const embData = await read('token_embd.weight', [d, c.vocabSize]);
      const embedding = tf.tensor2d(embData, [c.vocabSize, d]);
      owned.push(embedding);
      const head: FrozenMatrix = c.tiedEmbeddings
        ? { raw: embedding, t: plainOperandsOnly() ? (tf.transpose(embedding) as tf.Tensor2D) : null }
        : await mat('output.weight', d, c.vocabSize);
      if (c.tiedEmbeddings && head.t) owned.push(head.t);
      const outputNorm = await vec('output_norm.weight', d);
      const freqFactors = c.ropeFreqFactors ? await read('rope_freqs.weight', [c.ropeDim / 2]) : null;
      const layers: LayerWeights[] = [];
      for (let l = 0; l < c.layers; l++) {
        const p = `blk.${l}.`;
        layers.push({
          attnNorm: await vec(`${p}attn_norm.weight`, d),
          ffnNorm: await vec(`${p}ffn_norm.weight`, d),
          qkv: await group([`${p}attn_q.weight`, `${p}attn_k.weight`, `${p}attn_v.weight`], d, [qDim, kvDim, kvDim]),
          o: await mat(`${p}attn_output.weight`, qDim, d),
          gateUp: await group([`${p}ffn_gate.weight`, `${p}ffn_up.weight`], d, [c.ffnSize, c.ffnSize]),
          down: await mat(`${p}ffn_down.weight`, c.ffnSize, d),
          qBias: c.attentionBias ? await vec(`${p}attn_q.bias`, qDim) : null,
          kBias: c.attentionBias ? await vec(`${p}attn_k.bias`, kvDim) : null,
          vBias: c.attentionBias ? await vec(`${p}attn_v.bias`, kvDim) : null,
          qNorm: c.qkNorm ? await vec(`${p}attn_q_norm.weight`, c.headDim) : null,
          kNorm: c.qkNorm ? await vec(`${p}attn_k_norm.weight`, c.headDim) : null,
        });
      }
      return new TfLlamaModel(c, embedding, head, outputNorm, layers, freqFactors);
    } catch (err) {
      tf.dispose(owned);
      throw err;
    }
  }

  /** Bytes held by the frozen weights (both orientations on wasm). */
  get frozenBytes(): number {
    let n = this.embedding.size + (this.head.t?.size ?? 0) + (this.config.tiedEmbeddings ? 0 : this.head.raw.size);
    for (const l of this.layers) {
      for (const t of [...groupTensors(l.qkv), ...groupTensors(l.gateUp)]) n += t.size;
      for (const m of [l.o, l.down]) n += m.raw.size + (m.t?.size ?? 0);
    }
    return n * 4;
  }

  private tablesFor(T: number): LayerTables {
    let t = this.tables.get(T);
    if (!t) {
      // Every tensor kept: this may run inside a layer's tidy scope.
      const r = rotaryTables(T, this.rotary);
      let full: LayerTables['full'] = null;
      if (!plainOperandsOnly()) {
        const f = rotaryFullTables(T, this.rotary);
        full = { cos: tf.keep(f.cos), sin: tf.keep(f.sin), negSin: tf.keep(tf.neg(f.sin)), p: tf.keep(rotateHalfMatrix(this.rotary)) };
      }
      t = { cos: tf.keep(r.cos), sin: tf.keep(r.sin), mask: tf.keep(causalMask(T)), full };
      // Sequence lengths vary per sample; keep a few tables, not one per length ever seen.
      if (this.tables.size >= 8) {
        const [oldest] = this.tables.keys();
        tf.dispose(tableTensors(this.tables.get(oldest)!));
        this.tables.delete(oldest);
      }
      this.tables.set(T, t);
    }
    return t;
  }

  private context(T: number): LayerContext {
    return { config: this.config, rotary: this.rotary, tables: this.tablesFor(T) };
  }

  /** One decoder layer on x [T, d]; differentiable with respect to x and the LoRA tensors given. */
  private layer(l: number, x: tf.Tensor2D, lora: LoraTensors | null, save?: LayerSaved): tf.Tensor2D {
    return decoderLayer(this.context(x.shape[0]), this.layers[l], x, layerLora(lora, l), save);
  }

  private checkSequence(ids: number[], positions: number[]): void {
    const T = ids.length;
    if (T === 0 || T > this.config.contextLength) {
      throw new TurnstreamError(
        ErrorCodes.INVALID_INPUT,
        `a sequence of ${T} tokens does not fit the context of ${this.config.contextLength}`,
      );
    }
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0 || id >= this.config.vocabSize)
        throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `token id ${id} is outside the vocabulary`);
    }
    for (const p of positions) {
      if (!Number.isInteger(p) || p < 0 || p >= T)
        throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `position ${p} is outside the sequence`);
    }
  }

  private embed(ids: number[]): tf.Tensor2D {
    return tf.tidy(() => tf.gather(this.embedding, tf.tensor1d(ids, 'int32'))) as tf.Tensor2D;
  }

  private headAt(x: tf.Tensor2D, positions: number[]): tf.Tensor2D {
    return frozenLinear(selectRows(rmsNorm(x, this.outputNorm, this.config.rmsEps), positions), this.head);
  }

  /** Logits [R, V] at `positions` of `ids` (no gradient). Position t predicts token t + 1. */
  logitsAt(ids: number[], positions: number[], lora: LoraAdapter | null = null): tf.Tensor2D {
    this.checkSequence(ids, positions);
    return this.logitsFrom(0, this.embed(ids), positions, lora);
  }

  /**
   * Logits at `positions` from the input `x` of layer `from` on (no gradient); `x` is consumed.
   * With the hidden state a train pass kept at its lowest adapted layer, the frozen layers below
   * are not run again.
   */
  logitsFrom(from: number, x: tf.Tensor2D, positions: number[], lora: LoraAdapter | null = null): tf.Tensor2D {
    const lt = lora ? loraTensors(lora) : null;
    for (let l = from; l < this.config.layers; l++) {
      const next = tf.tidy(() => this.layer(l, x, lt));
      x.dispose();
      x = next;
    }
    const logits = tf.tidy(() => this.headAt(x, positions));
    x.dispose();
    return logits;
  }

  /** log π(ids[t+1] | ids[..t]) for each t in `positions` (no gradient). */
  async tokenLogprobs(ids: number[], positions: number[], lora: LoraAdapter | null = null): Promise<number[]> {
    const logits = this.logitsAt(ids, positions, lora);
    const picked = tf.tidy(() => {
      const lp = tf.logSoftmax(logits);
      const targets = tf.tensor1d(
        positions.map((p) => ids[p + 1] ?? 0),
        'int32',
      );
      return tf.sum(tf.mul(lp, tf.oneHot(targets, this.config.vocabSize)), -1);
    });
    logits.dispose();
    const out = Array.from(await picked.data());
    picked.dispose();
    return out;
  }

  /**
   * The forward pass of one sequence for training: logits at `positions`, and a `backward` that
   * turns dL/dlogits into the gradients of `lora`'s variables, from the top down to the lowest
   * adapted layer. On native TensorFlow each layer keeps its intermediates (within
   * `keepBytes`) for a hand-written backward pass (decoder-layer.ts); elsewhere only each
   * layer's input is kept, and `backward` recomputes the layer under `tf.grads`.
   */
  trainPass(ids: number[], positions: number[], lora: LoraAdapter, opts: TrainPassOptions = {}): LlamaTrainPass {
    this.checkSequence(ids, positions);
    return plainOperandsOnly() ? this.recomputingTrainPass(ids, positions, lora) : this.keepingTrainPass(ids, positions, lora, opts);
  }

  private keepingTrainPass(ids: number[], positions: number[], lora: LoraAdapter, opts: TrainPassOptions): LlamaTrainPass {
    const pass = this.trainPassRows([{ ids, positions }], lora, opts);
    return {
      logits: pass.logits[0],
      firstInput: pass.firstInputs[0],
      backward: (dlogits) => pass.backward([dlogits]),
      dispose: () => pass.dispose(),
    };
  }

  /**
   * The train pass of several sequences at once, on native TensorFlow: right-padded to the longest
   * and run as one [rows·T, d] stream, so each of the layer's ops serves every row (a GRPO batch is
   * dozens of short samples; each op has a fixed cost). Padding sits after a row's tokens, which
   * causal attention never lets a real token see. Logits, first inputs and gradients per row.
   */
  trainPassRows(
    seqs: ReadonlyArray<{ ids: number[]; positions: number[] }>,
    lora: LoraAdapter,
    opts: TrainPassOptions = {},
  ): LlamaRowsPass {
    for (const s of seqs) this.checkSequence(s.ids, s.positions);
    const rows = seqs.length;
    const T = Math.max(...seqs.map((s) => s.ids.length));
    const d = this.config.hiddenSize;
    const flatIds = seqs.flatMap((s) => [...s.ids, ...new Array<number>(T - s.ids.length).fill(0)]);
    const flatPositions = seqs.flatMap((s, r) => s.positions.map((p) => r * T + p));
    const lt = loraTensors(lora);
    const ctx = (): LayerContext => ({ ...this.context(T), rows });
    const keepLayers = Math.floor((opts.keepBytes ?? DEFAULT_KEEP_BYTES) / (rows * savedLayerBytes(this.config, T)));
    const saves: Array<LayerSaved | null> = [];
    const inputs: tf.Tensor2D[] = [];
    let x = this.embed(flatIds);
    for (let l = 0; l < this.config.layers; l++) {
      const input = x;
      const adapted = l >= lora.firstLayer;
      const save = adapted && saves.length < keepLayers ? new LayerSaved() : null;
      if (adapted) {
        saves.push(save);
        inputs.push(input);
      }
      x = tf.tidy(() => decoderLayer(ctx(), this.layers[l], input, layerLora(lt, l), save ?? undefined));
      if (!adapted) input.dispose();
    }
    const top = x;
    const rOut = tf.tidy(() => tf.rsqrt(tf.add(tf.mean(tf.square(top), -1, true), this.config.rmsEps))) as tf.Tensor2D;
    const logits = tf.tidy(() => {
      const all = this.headAt(top, flatPositions);
      return rows === 1
        ? [all]
        : (tf.split(
            all,
            seqs.map((s) => s.positions.length),
          ) as tf.Tensor2D[]);
    });
    const first = inputs[0] ?? top;
    const firstInputs = rows === 1 ? [first] : seqs.map((s, r) => tf.slice(first, [r * T, 0], [s.ids.length, d]) as tf.Tensor2D);
    let disposed = false;
    const dispose = (): void => {
      if (disposed) return;
      disposed = true;
      for (const sv of saves) sv?.dispose();
      tf.dispose([...inputs, top, rOut, ...logits, ...(rows === 1 ? [] : firstInputs)]);
    };
    return {
      logits,
      firstInputs,
      backward: (dlogits: tf.Tensor2D[]): tf.Tensor[] => {
        const grads = new Map<tf.Variable, tf.Tensor>();
        let dx = tf.tidy(() => {
          const dRows = tf.matMul(rows === 1 ? dlogits[0] : tf.concat(dlogits), this.head.raw);
          const dNormed = tf.scatterND(tf.tensor2d(flatPositions, [flatPositions.length, 1], 'int32'), dRows, [rows * T, d]);
          const u = tf.mul(dNormed, this.outputNorm);
          return tf.mul(rOut, tf.sub(u, tf.mul(top, tf.mul(tf.square(rOut), tf.mean(tf.mul(u, top), -1, true))))) as tf.Tensor2D;
        });
        for (let l = this.config.layers - 1; l >= lora.firstLayer; l--) {
          const i = l - lora.firstLayer;
          const own = saves[i] ?? new LayerSaved();
          const local = layerLora(lt, l)!;
          if (!saves[i]) tf.tidy(() => void decoderLayer(ctx(), this.layers[l], inputs[i], local, own));
          const byTarget = new Map<LoraTarget, { da: tf.Tensor; db: tf.Tensor }>();
          const next = tf.tidy(() => {
            // Tables are looked up now: others' lengths may have evicted this one's since the forward pass.
            const out = decoderLayerBackward(ctx(), this.layers[l], own, dx, local, byTarget);
            for (const g of byTarget.values()) {
              tf.keep(g.da);
              tf.keep(g.db);
            }
            return out;
          });
          if (!saves[i]) own.dispose();
          dx.dispose();
          dx = next;
          for (const [target, g] of byTarget) {
            const m = lora.module(l, target)!;
            grads.set(m.a, g.da);
            grads.set(m.b, g.db);
          }
        }
        dx.dispose();
        return lora.variables.map((v) => grads.get(v) ?? tf.zerosLike(v));
      },
      dispose,
    };
  }

  private recomputingTrainPass(ids: number[], positions: number[], lora: LoraAdapter): LlamaTrainPass {
    const lt = loraTensors(lora);
    const inputs: tf.Tensor2D[] = [];
    let x = this.embed(ids);
    for (let l = 0; l < this.config.layers; l++) {
      if (l >= lora.firstLayer) inputs.push(x);
      const next = tf.tidy(() => this.layer(l, x, lt));
      if (l < lora.firstLayer) x.dispose();
      x = next;
    }
    const top = x;
    const logits = tf.tidy(() => this.headAt(top, positions));
    let disposed = false;
    return {
      logits,
      firstInput: inputs[0] ?? top,
      backward: (dlogits: tf.Tensor2D): tf.Tensor[] => {
        const grads = new Map<tf.Variable, tf.Tensor>();
        let dx = tf.tidy(() => tf.grads((xt: tf.Tensor) => this.headAt(xt as tf.Tensor2D, positions))([top], dlogits)[0]) as tf.Tensor2D;
        for (let l = this.config.layers - 1; l >= lora.firstLayer; l--) {
          const input = inputs[l - lora.firstLayer];
          const mods = LORA_ORDER.map((t) => lora.module(l, t)).filter((m) => m !== undefined);
          const vars = mods.flatMap((m) => [m.a, m.b]);
          const out = tf.tidy(() =>
            tf.grads((xi: tf.Tensor, ...ws: tf.Tensor[]) => {
              const local: LoraTensors = new Map();
              mods.forEach((m, i) =>
                local.set(`${l}.${m.target}`, { a: ws[2 * i] as tf.Tensor2D, b: ws[2 * i + 1] as tf.Tensor2D, scale: lora.scale }),
              );
              return this.layer(l, xi as tf.Tensor2D, local);
            })([input, ...vars], dx),
          );
          dx.dispose();
          dx = out[0] as tf.Tensor2D;
          vars.forEach((v, i) => grads.set(v, out[i + 1]));
        }
        dx.dispose();
        return lora.variables.map((v) => grads.get(v) ?? tf.zerosLike(v));
      },
      dispose: (): void => {
        if (disposed) return;
        disposed = true;
        tf.dispose([...inputs, top, logits]);
      },
    };
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    const seen = new Set<tf.Tensor>();
    const add = (t: tf.Tensor | null): void => {
      if (t) seen.add(t);
    };
    add(this.embedding);
    add(this.head.t);
    add(this.head.raw);
    add(this.outputNorm);
    for (const l of this.layers) {
      for (const t of [...groupTensors(l.qkv), ...groupTensors(l.gateUp)]) add(t);
      for (const m of [l.o, l.down]) {
        add(m.raw);
        add(m.t);
      }
      for (const t of [l.attnNorm, l.ffnNorm, l.qBias, l.kBias, l.vBias, l.qNorm, l.kNorm]) add(t);
    }
    tf.dispose([...seen]);
    for (const t of this.tables.values()) tf.dispose(tableTensors(t));
    this.tables.clear();
  }
}

const LORA_ORDER = Object.keys(LORA_TARGETS) as LoraTarget[];

type LoraTensors = Map<string, { a: tf.Tensor2D; b: tf.Tensor2D; scale: number }>;

/** The factors of layer `l` in `lora`, by target; null without any. */
function layerLora(lora: LoraTensors | null, l: number): LayerLora | null {
  if (!lora) return null;
  const out: LayerLora = new Map();
  for (const t of LORA_ORDER) {
    const m = lora.get(`${l}.${t}`);
    if (m) out.set(t, m);
  }
  return out;
}

function loraTensors(lora: LoraAdapter): LoraTensors {
  const out: LoraTensors = new Map();
  for (const m of lora.modules.values())
    out.set(`${m.layer}.${m.target}`, { a: m.a as tf.Tensor2D, b: m.b as tf.Tensor2D, scale: lora.scale });
  return out;
}
