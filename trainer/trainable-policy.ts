/**
 * What the learner step needs of a model, whatever the family: logits at chosen positions of
 * token sequences, with and without gradients, and the variables it trains. The built-in tiny
 * model trains all its weights in one padded pass; a Llama-family model trains a LoRA adapter one
 * sequence at a time with per-layer recomputation (policy/llama), so the step walks the batch in
 * micro-batches of at most `microBatchTokens` tokens.
 */
import * as tf from '@tensorflow/tfjs';
import { plainOperandsOnly, selectRows, type LoraAdapter, type TfLlamaModel, type TransformerModel } from '../policy/index.ts';

/** One sequence: its token ids and the positions whose next-token logits are wanted. */
export interface SequenceRow {
  ids: number[];
  positions: number[];
}

export interface TrainPass {
  /** Logits [R_i, V] per row, at the row's positions. */
  readonly logits: tf.Tensor2D[];
  /** Gradients of `variables` (same order) for dL/dlogits given per row. */
  backward(dlogits: tf.Tensor2D[]): tf.Tensor[];
  dispose(): void;
}

export interface TrainablePolicy {
  readonly contextLength: number;
  readonly vocabSize: number;
  /** What the optimizer updates. */
  readonly variables: tf.Variable[];
  /** Tokens one forward pass takes at most (rows are grouped up to it). */
  readonly microBatchTokens: number;
  forward(rows: SequenceRow[]): TrainPass;
  /** Logits per row without gradients; `reference` = the frozen starting point (the LoRA base). */
  logits(rows: SequenceRow[], opts?: { reference?: boolean }): tf.Tensor2D[];
  /** True when `logits(rows, { reference: true })` is available. */
  readonly hasReference: boolean;
  /** Frees what the step kept between `forward` and later `logits` calls on the same rows. */
  endStep?(): void;
}

/** The sizes both families read from their model's config. */
abstract class ModelSizes<M extends { readonly config: { contextLength: number; vocabSize: number } }> {
  constructor(readonly model: M) {}

  get contextLength(): number {
    return this.model.config.contextLength;
  }

  get vocabSize(): number {
    return this.model.config.vocabSize;
  }
}

/** The built-in model: all weights, all rows in one padded [B, T] pass. */
export class BuiltinTrainable extends ModelSizes<TransformerModel> implements TrainablePolicy {
  readonly microBatchTokens = Number.POSITIVE_INFINITY;

  constructor(
    model: TransformerModel,
    private readonly reference: TransformerModel | null = null,
  ) {
    super(model);
  }

  get variables(): tf.Variable[] {
    return this.model.variables;
  }

  get hasReference(): boolean {
    return this.reference !== null;
  }

  private padded(rows: SequenceRow[]): tf.Tensor2D {
    const T = Math.max(1, ...rows.map((r) => r.ids.length));
    return tf.tensor2d(
      rows.map((r) => [...r.ids, ...new Array<number>(T - r.ids.length).fill(0)]),
      undefined,
      'int32',
    );
  }

  private select(m: TransformerModel, x: tf.Tensor2D, rows: SequenceRow[]): tf.Tensor2D[] {
    const [B, T] = x.shape;
    const flat = tf.reshape(m.forwardLogits(x), [B * T, this.vocabSize]) as tf.Tensor2D;
    return rows.map((r, b) =>
      selectRows(
        flat,
        r.positions.map((p) => b * T + p),
      ),
    );
  }

  forward(rows: SequenceRow[]): TrainPass {
    const x = this.padded(rows);
    const logits = tf.tidy(() => this.select(this.model, x, rows));
    return {
      logits,
      backward: (dlogits) => {
        const { value, grads } = tf.variableGrads(() => {
          const l = this.select(this.model, x, rows);
          return tf.addN(l.map((t, i) => tf.sum(tf.mul(t, dlogits[i])))) as tf.Scalar;
        }, this.variables);
        value.dispose();
        return this.variables.map((v) => grads[v.name]);
      },
      dispose: () => tf.dispose([x, ...logits]),
    };
  }

  logits(rows: SequenceRow[], opts: { reference?: boolean } = {}): tf.Tensor2D[] {
    const m = opts.reference ? this.reference : this.model;
    if (!m) throw new Error('no reference model');
    return tf.tidy(() => this.select(m, this.padded(rows), rows));
  }
}

/** A Llama-family model: the LoRA adapter's variables, one sequence per pass. */
export class LoraTrainable extends ModelSizes<TfLlamaModel> implements TrainablePolicy {
  readonly hasReference = true;
  /** Each forwarded row's hidden state at the lowest adapted layer: the frozen layers below need not run again this step. */
  private readonly kept = new Map<SequenceRow, tf.Tensor2D>();

  constructor(
    model: TfLlamaModel,
    readonly lora: LoraAdapter,
    /** Largest sequence of one pass (a longer sample's prompt is cut from the left). @default the model's context */
    readonly microBatchTokens = model.config.contextLength,
  ) {
    super(model);
  }

  get variables(): tf.Variable[] {
    return this.lora.variables;
  }

  forward(rows: SequenceRow[]): TrainPass {
    // Native TensorFlow runs a micro-batch's rows as one pass (trainPassRows); wasm one by one.
    if (!plainOperandsOnly() && rows.length > 1) {
      const pass = this.model.trainPassRows(rows, this.lora);
      pass.firstInputs.forEach((x, i) => {
        this.kept.get(rows[i])?.dispose();
        this.kept.set(rows[i], tf.clone(x));
      });
      return { logits: pass.logits, backward: (dlogits) => pass.backward(dlogits), dispose: () => pass.dispose() };
    }
    const passes = rows.map((r) => this.model.trainPass(r.ids, r.positions, this.lora));
    passes.forEach((p, i) => {
      this.kept.get(rows[i])?.dispose();
      this.kept.set(rows[i], tf.clone(p.firstInput));
    });
    return {
      logits: passes.map((p) => p.logits),
      backward: (dlogits) => {
        let sum: tf.Tensor[] | null = null;
        passes.forEach((p, i) => {
          const g = p.backward(dlogits[i]);
          if (!sum) sum = g;
          else {
            const next: tf.Tensor[] = sum.map((s, j) => tf.add(s, g[j]));
            tf.dispose([...sum, ...g]);
            sum = next;
          }
        });
        return sum ?? this.variables.map((v) => tf.zerosLike(v));
      },
      dispose: () => passes.forEach((p) => p.dispose()),
    };
  }

  logits(rows: SequenceRow[], opts: { reference?: boolean } = {}): tf.Tensor2D[] {
    return rows.map((r) => {
      const h = this.kept.get(r);
      // Below the lowest adapted layer the base and the adapted model coincide.
      if (h) return this.model.logitsFrom(this.lora.firstLayer, tf.clone(h), r.positions, opts.reference ? null : this.lora);
      return this.model.logitsAt(r.ids, r.positions, opts.reference ? null : this.lora);
    });
  }

  endStep(): void {
    for (const t of this.kept.values()) t.dispose();
    this.kept.clear();
  }
}
