/**
 * One Llama-family decoder layer: its forward pass (the one every path runs), optionally keeping
 * the intermediates its backward needs, and that backward written out by hand for native
 * TensorFlow. tfjs's own gradients rebuild the layer's graph from a recomputed forward pass and
 * spend several small ops on each broadcast and reduction; here each step of the layer has its
 * closed-form derivative (RMSNorm, rotary as a rotation by −θ, grouped attention, SwiGLU, the
 * frozen products and their LoRA factors), a third as many ops, and no second forward pass when
 * the intermediates were kept. The finite-difference checks in test/unit/policy/llama-model.test.ts
 * hold it to the same gradients.
 */
import * as tf from '@tensorflow/tfjs';
import { groupedAttentionBackward, causalAttention, groupedAttentionParts } from './causal-attention.ts';
import { frozenLinear, frozenMatrix, loraDelta, plainOperandsOnly, type FrozenMatrix } from './frozen-linear.ts';
import type { LlamaConfig } from './llama-config.ts';
import type { LoraTarget } from './lora.ts';
import { applyRotary, applyRotaryByProduct, type RotaryOptions } from './rotary.ts';

/**
 * Frozen matrices that read the same input (q/k/v; gate/up). On native TensorFlow their rows are
 * stacked into one matrix, one larger product instead of several (oneDNN runs it ~20 % more
 * efficiently, and every op has a fixed cost); on wasm each keeps its own, in both orientations.
 */
export interface InputGroup {
  /** Rows of every member stacked, [Σ out, in]; null on wasm. */
  stacked: tf.Tensor2D | null;
  /** One matrix per member (on wasm only; empty when stacked). */
  parts: FrozenMatrix[];
  /** Output width of each member. */
  sizes: number[];
}

/** Stacks the members' GGUF rows (native) or loads each (wasm); see {@link InputGroup}. */
export function inputGroup(datas: Float32Array[], sizes: number[], inDim: number): InputGroup {
  if (plainOperandsOnly()) return { stacked: null, parts: datas.map((d, i) => frozenMatrix(d, sizes[i], inDim)), sizes };
  const all = new Float32Array(datas.reduce((n, d) => n + d.length, 0));
  let at = 0;
  for (const d of datas) {
    all.set(d, at);
    at += d.length;
  }
  return { stacked: tf.tensor2d(all, [at / inDim, inDim]), parts: [], sizes };
}

/** The tensors an input group holds. */
export const groupTensors = (g: InputGroup): tf.Tensor[] => [
  ...(g.stacked ? [g.stacked] : []),
  ...g.parts.flatMap((p) => [p.raw, ...(p.t ? [p.t] : [])]),
];

export interface LayerWeights {
  attnNorm: tf.Tensor1D;
  ffnNorm: tf.Tensor1D;
  /** q, k and v. */
  qkv: InputGroup;
  o: FrozenMatrix;
  /** gate and up. */
  gateUp: InputGroup;
  down: FrozenMatrix;
  qBias: tf.Tensor1D | null;
  kBias: tf.Tensor1D | null;
  vBias: tf.Tensor1D | null;
  qNorm: tf.Tensor1D | null;
  kNorm: tf.Tensor1D | null;
}

/** The LoRA factors of one layer by target (aᵀ [in, r], bᵀ [r, out]). */
export type LayerLora = Map<LoraTarget, { a: tf.Tensor2D; b: tf.Tensor2D; scale: number }>;

/** Per-length tables: rotary cos/sin and the causal mask. */
export interface LayerTables {
  /** [T, ropeDim/2] (wasm's rotation). */
  cos: tf.Tensor2D;
  sin: tf.Tensor2D;
  mask: tf.Tensor2D;
  /** On native TensorFlow: [T, 1, headDim] tables, −sin (the inverse rotation) and the rotate-half matrix. */
  full: { cos: tf.Tensor3D; sin: tf.Tensor3D; negSin: tf.Tensor3D; p: tf.Tensor2D } | null;
}

/** The tensors of a table set. */
export const tableTensors = (t: LayerTables): tf.Tensor[] => [t.cos, t.sin, t.mask, ...(t.full ? Object.values(t.full) : [])];

/** Rotates x [T, n·headDim] forward, or back (the backward pass of the rotation). */
function rotate(x: tf.Tensor2D, n: number, ctx: LayerContext, inverse = false): tf.Tensor2D {
  const f = ctx.tables.full;
  if (f) return applyRotaryByProduct(x, n, { cos: f.cos, sin: inverse ? f.negSin : f.sin, p: f.p }, ctx.config.headDim, ctx.rows ?? 1);
  const t = ctx.tables;
  return applyRotary(x, n, inverse ? { cos: t.cos, sin: tf.neg(t.sin) as tf.Tensor2D } : t, ctx.rotary);
}

export interface LayerContext {
  config: LlamaConfig;
  rotary: RotaryOptions;
  /** Tables for T tokens. */
  tables: LayerTables;
  /**
   * Sequences in x [rows·T, d], one after another, right-padded to T (native TensorFlow only: the
   * layer's products then serve them all at once). @default 1
   */
  rows?: number;
}

/** What a forward pass keeps for the backward pass; every tensor in it is kept out of tidy scopes. */
export class LayerSaved {
  private readonly held = new Map<string, tf.Tensor>();

  /** Keeps `t` under `name` and returns it. */
  put<T extends tf.Tensor>(name: string, t: T): T {
    this.held.set(name, tf.keep(t));
    return t;
  }

  get<T extends tf.Tensor = tf.Tensor2D>(name: string): T {
    const t = this.held.get(name);
    if (!t) throw new Error(`decoder layer: ${name} was not kept`);
    return t as T;
  }

  has(name: string): boolean {
    return this.held.has(name);
  }

  dispose(): void {
    tf.dispose([...this.held.values()]);
    this.held.clear();
  }
}

/** Bytes a kept forward pass of one layer holds for T tokens (float32). */
export function savedLayerBytes(c: LlamaConfig, T: number): number {
  const q = c.heads * c.headDim;
  const kv = c.kvHeads * c.headDim;
  const perToken = 5 * c.hiddenSize + 3 * c.ffnSize + 3 * q + 4 * kv + (c.qkNorm ? q + kv : 0) + 8 * 8;
  return 4 * (T * perToken + c.heads * T * T);
}

/** x·r·g with r = 1/√(mean(x²) + eps), r kept when saving. */
function rmsNormSaving(x: tf.Tensor, g: tf.Tensor1D, eps: number, save: LayerSaved | undefined, name: string): tf.Tensor {
  const r = tf.rsqrt(tf.add(tf.mean(tf.square(x), -1, true), eps));
  save?.put(name, r);
  return tf.mul(tf.mul(x, r), g);
}

/** dL/dx of y = x·r·g: r·(u − x·r²·mean(u·x)) with u = dy·g. */
function rmsNormBackward(x: tf.Tensor, r: tf.Tensor, g: tf.Tensor1D, dy: tf.Tensor): tf.Tensor {
  const u = tf.mul(dy, g);
  return tf.mul(r, tf.sub(u, tf.mul(x, tf.mul(tf.square(r), tf.mean(tf.mul(u, x), -1, true)))));
}

/** The frozen products of an input group: one output per member. */
function groupProducts(x: tf.Tensor2D, g: InputGroup): tf.Tensor2D[] {
  if (!g.stacked) return g.parts.map((p) => frozenLinear(x, p));
  return tf.split(tf.matMul(x, g.stacked, false, true), g.sizes, 1) as tf.Tensor2D[];
}

/** A frozen product's output `y` (or x·W when not given), its bias and its LoRA update. */
function project(
  x: tf.Tensor2D,
  w: FrozenMatrix | tf.Tensor2D,
  target: LoraTarget,
  lora: LayerLora | null,
  bias: tf.Tensor1D | null,
  save: LayerSaved | undefined,
): tf.Tensor2D {
  let y = w instanceof tf.Tensor ? w : frozenLinear(x, w);
  if (bias) y = tf.add(y, bias);
  const m = lora?.get(target);
  if (!m) return y;
  if (!save) return tf.add(y, loraDelta(x, m.a, m.b, m.scale));
  // The same products as loraDelta's, with x·A kept for B's gradient.
  const u = save.put(`u.${target}`, tf.matMul(x, m.a));
  return tf.add(y, tf.mul(tf.matMul(u, m.b), m.scale));
}

/**
 * Gradients of a frozen product (+ LoRA) for dy: dx, and dA/dB into `grads`. With `w` null the
 * frozen part's dx is left to the caller (a group's members share one product).
 */
function projectBackward(
  dy: tf.Tensor2D,
  input: tf.Tensor2D,
  w: FrozenMatrix | null,
  target: LoraTarget,
  lora: LayerLora,
  save: LayerSaved,
  grads: Map<LoraTarget, { da: tf.Tensor; db: tf.Tensor }>,
): tf.Tensor2D | null {
  const dx = w ? (tf.matMul(dy, w.raw) as tf.Tensor2D) : null;
  const m = lora.get(target);
  if (!m) return dx;
  const dyB = tf.matMul(dy, m.b, false, true); // [T, r]
  grads.set(target, {
    da: tf.mul(tf.matMul(input, dyB, true, false), m.scale),
    db: tf.mul(tf.matMul(save.get(`u.${target}`), dy, true, false), m.scale),
  });
  const dLora = tf.mul(tf.matMul(dyB, m.a, false, true), m.scale) as tf.Tensor2D;
  return dx ? (tf.add(dx, dLora) as tf.Tensor2D) : dLora;
}

/** dx of an input group (stacked, on native) for its members' dys, LoRA gradients into `grads`. */
function groupBackward(
  dys: tf.Tensor2D[],
  input: tf.Tensor2D,
  g: InputGroup,
  targets: LoraTarget[],
  lora: LayerLora,
  save: LayerSaved,
  grads: Map<LoraTarget, { da: tf.Tensor; db: tf.Tensor }>,
): tf.Tensor2D {
  let dx = tf.matMul(tf.concat(dys, 1), g.stacked!) as tf.Tensor2D;
  dys.forEach((dy, i) => {
    const d = projectBackward(dy, input, null, targets[i], lora, save, grads);
    if (d) dx = tf.add(dx, d) as tf.Tensor2D;
  });
  return dx;
}

function headNorm(x: tf.Tensor2D, n: number, g: tf.Tensor1D, eps: number, save: LayerSaved | undefined, name: string): tf.Tensor2D {
  const [T, nd] = x.shape;
  if (save) save.put(`${name}.in`, x);
  return tf.reshape(rmsNormSaving(tf.reshape(x, [T, n, nd / n]), g, eps, save, `${name}.r`), [T, nd]) as tf.Tensor2D;
}

/**
 * One decoder layer on x [T, d]; with `save`, keeps what {@link decoderLayerBackward} needs (on
 * native TensorFlow only: the attention it saves is the grouped one).
 */
export function decoderLayer(ctx: LayerContext, w: LayerWeights, x: tf.Tensor2D, lora: LayerLora | null, save?: LayerSaved): tf.Tensor2D {
  const c = ctx.config;
  save?.put('x', x);
  const a = save
    ? save.put('a', rmsNormSaving(x, w.attnNorm, c.rmsEps, save, 'rA'))
    : rmsNormSaving(x, w.attnNorm, c.rmsEps, undefined, '');
  const [yq, yk, yv] = groupProducts(a as tf.Tensor2D, w.qkv);
  let q = project(a as tf.Tensor2D, yq, 'q', lora, w.qBias, save);
  let k = project(a as tf.Tensor2D, yk, 'k', lora, w.kBias, save);
  const v = project(a as tf.Tensor2D, yv, 'v', lora, w.vBias, save);
  if (w.qNorm && w.kNorm) {
    q = headNorm(q, c.heads, w.qNorm, c.rmsEps, save, 'qn');
    k = headNorm(k, c.kvHeads, w.kNorm, c.rmsEps, save, 'kn');
  }
  q = rotate(q, c.heads, ctx);
  k = rotate(k, c.kvHeads, ctx);
  const shape = { heads: c.heads, kvHeads: c.kvHeads, headDim: c.headDim };
  let att: tf.Tensor2D;
  if (save) {
    const parts = groupedAttentionParts(q, k, v, shape, ctx.tables.mask, ctx.rows ?? 1);
    for (const [name, t] of Object.entries(parts.saved)) save.put(`att.${name}`, t);
    att = save.put('att', parts.out);
  } else
    att =
      (ctx.rows ?? 1) > 1
        ? groupedAttentionParts(q, k, v, shape, ctx.tables.mask, ctx.rows).out
        : causalAttention(q, k, v, shape, ctx.tables.mask);
  const x1 = tf.add(x, project(att, w.o, 'o', lora, null, save)) as tf.Tensor2D;
  save?.put('x1', x1);
  const b = rmsNormSaving(x1, w.ffnNorm, c.rmsEps, save, 'rB') as tf.Tensor2D;
  save?.put('b', b);
  const [yGate, yUp] = groupProducts(b, w.gateUp);
  const gate = project(b, yGate, 'gate', lora, null, save);
  const up = project(b, yUp, 'up', lora, null, save);
  const sg = tf.sigmoid(gate);
  const act = tf.mul(tf.mul(gate, sg), up) as tf.Tensor2D;
  if (save) {
    save.put('gate', gate);
    save.put('sg', sg);
    save.put('up', up);
    save.put('act', act);
  }
  return tf.add(x1, project(act, w.down, 'down', lora, null, save)) as tf.Tensor2D;
}

/**
 * dL/dx of a layer whose forward pass kept `saved`, for dL/dout `dy`; the LoRA gradients go to
 * `grads` by target.
 */
export function decoderLayerBackward(
  ctx: LayerContext,
  w: LayerWeights,
  saved: LayerSaved,
  dy: tf.Tensor2D,
  lora: LayerLora,
  grads: Map<LoraTarget, { da: tf.Tensor; db: tf.Tensor }>,
): tf.Tensor2D {
  const c = ctx.config;
  const T = dy.shape[0];
  // FFN: out = x1 + down(silu(gate)·up)
  const dAct = projectBackward(dy, saved.get('act'), w.down, 'down', lora, saved, grads)!;
  const sg = saved.get('sg');
  const gate = saved.get('gate');
  const dUp = tf.mul(dAct, tf.mul(gate, sg)) as tf.Tensor2D;
  // silu'(z) = σ(z)·(1 + z·(1 − σ(z)))
  const dGate = tf.mul(tf.mul(dAct, saved.get('up')), tf.mul(sg, tf.add(1, tf.mul(gate, tf.sub(1, sg))))) as tf.Tensor2D;
  const b = saved.get('b');
  const dB = groupBackward([dGate, dUp], b, w.gateUp, ['gate', 'up'], lora, saved, grads);
  const dx1 = tf.add(dy, rmsNormBackward(saved.get('x1'), saved.get('rB'), w.ffnNorm, dB)) as tf.Tensor2D;
  // Attention: x1 = x + o(attention(rope(q), rope(k), v))
  const dAtt = projectBackward(dx1, saved.get('att'), w.o, 'o', lora, saved, grads)!;
  const shape = { heads: c.heads, kvHeads: c.kvHeads, headDim: c.headDim };
  const g = groupedAttentionBackward(
    dAtt,
    shape,
    {
      qg: saved.get<tf.Tensor3D>('att.qg'),
      kg: saved.get<tf.Tensor3D>('att.kg'),
      vg: saved.get<tf.Tensor3D>('att.vg'),
      probs: saved.get<tf.Tensor3D>('att.probs'),
    },
    ctx.rows ?? 1,
  );
  let dq = rotate(g.dq, c.heads, ctx, true);
  let dk = rotate(g.dk, c.kvHeads, ctx, true);
  if (w.qNorm && w.kNorm) {
    const back = (d: tf.Tensor2D, n: number, gain: tf.Tensor1D, name: string): tf.Tensor2D => {
      const x = saved.get(`${name}.in`);
      const x3 = tf.reshape(x, [T, n, x.shape[1] / n]);
      return tf.reshape(rmsNormBackward(x3, saved.get(`${name}.r`), gain, tf.reshape(d, x3.shape)), [T, x.shape[1]]) as tf.Tensor2D;
    };
    dq = back(dq, c.heads, w.qNorm, 'qn');
    dk = back(dk, c.kvHeads, w.kNorm, 'kn');
  }
  const a = saved.get('a');
  const dA = groupBackward([dq, dk, g.dv], a, w.qkv, ['q', 'k', 'v'], lora, saved, grads);
  return tf.add(dx1, rmsNormBackward(saved.get('x'), saved.get('rA'), w.attnNorm, dA)) as tf.Tensor2D;
}
