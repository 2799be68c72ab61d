import * as tf from '@tensorflow/tfjs';

export interface AdamWOptions {
  /** Learning rate. */
  lr: number;
  /** @default 0.9 */
  beta1?: number;
  /** @default 0.98 (docs/design/algorithms.md §5) */
  beta2?: number;
  /** @default 1e-8 */
  epsilon?: number;
  /**
   * Decoupled weight decay (AdamW), applied to matrices only (not gains, biases or embeddings'
   * position rows… only names ending in `.w`, and `wte`).
   * @default 0.1
   */
  weightDecay?: number;
  /**
   * Gradients are scaled so that their global L2 norm is at most this; 0 disables clipping.
   * @default 1
   */
  maxGradNorm?: number;
}

/** The moments of one set of variables, packed into one vector each (in the variables' order). */
interface PackedState {
  /** Names and sizes, in order: the layout the vectors follow. */
  key: string;
  names: string[];
  sizes: number[];
  m: tf.Variable;
  v: tf.Variable;
  /** 1 where the value decays, 0 elsewhere (null when none does). */
  decayMask: tf.Tensor | null;
}

/**
 * Adam with decoupled weight decay and global-norm gradient clipping, on named variables.
 * tfjs's built-in Adam has neither, so this is the few lines it takes. Moments live in this
 * object (not in checkpoints): a restarted learner starts them from zero.
 *
 * The update runs on all variables at once, packed into one vector: a LoRA adapter has hundreds
 * of small factors, and a dozen ops for each of them cost more than the arithmetic (each op has
 * a fixed cost, ~40 µs on native TensorFlow).
 */
export class AdamW {
  readonly options: Required<AdamWOptions>;
  private state: PackedState | null = null;
  private t = 0;

  constructor(options: AdamWOptions) {
    this.options = { beta1: 0.9, beta2: 0.98, epsilon: 1e-8, weightDecay: 0.1, maxGradNorm: 1, ...options };
  }

  /** Steps taken. */
  get steps(): number {
    return this.t;
  }

  /**
   * One update of `vars` with `grads` (by variable name; a variable without one is left as it
   * is). Returns the global gradient norm before clipping. `lr` overrides the configured rate for
   * this step (schedules).
   */
  apply(vars: tf.Variable[], grads: Record<string, tf.Tensor>, lr = this.options.lr): number {
    const { beta1, beta2, epsilon, weightDecay, maxGradNorm } = this.options;
    const live = vars.filter((v) => grads[v.name]);
    if (live.length === 0) return 0;
    this.t++;
    const st = this.layout(live);
    const flat = (ts: tf.Tensor[]): tf.Tensor1D => tf.concat(ts.map((t) => tf.reshape(t, [-1]))) as tf.Tensor1D;
    const g0 = tf.tidy(() => flat(live.map((v) => grads[v.name])));
    const squares = tf.tidy(() => tf.sum(tf.square(g0)));
    const norm = Math.sqrt(squares.dataSync()[0]);
    squares.dispose();
    const scale = maxGradNorm > 0 && norm > maxGradNorm ? maxGradNorm / norm : 1;
    const bc1 = 1 - beta1 ** this.t;
    const bc2 = 1 - beta2 ** this.t;
    const parts = tf.tidy(() => {
      const g = scale === 1 ? g0 : tf.mul(g0, scale);
      st.m.assign(tf.add(tf.mul(st.m, beta1), tf.mul(g, 1 - beta1)));
      st.v.assign(tf.add(tf.mul(st.v, beta2), tf.mul(tf.square(g), 1 - beta2)));
      const update = tf.div(tf.div(st.m, bc1), tf.add(tf.sqrt(tf.div(st.v, bc2)), epsilon));
      const w = flat(live);
      let next = tf.sub(w, tf.mul(update, lr));
      if (weightDecay > 0 && st.decayMask) next = tf.sub(next, tf.mul(tf.mul(w, st.decayMask), lr * weightDecay));
      return tf.split(next, st.sizes);
    });
    g0.dispose();
    live.forEach((v, i) => {
      // assign() shares the tensor's data and leaves the tensor itself alive: it is ours to free.
      const next = tf.reshape(parts[i], v.shape);
      v.assign(next);
      next.dispose();
    });
    tf.dispose(parts);
    return norm;
  }

  /** The packed moments for `vars`; a new layout carries over the moments of the names it shares with the old one. */
  private layout(vars: tf.Variable[]): PackedState {
    const names = vars.map((v) => v.name);
    const sizes = vars.map((v) => v.size);
    const key = names.map((n, i) => `${n}:${sizes[i]}`).join(',');
    if (this.state?.key === key) return this.state;
    const old = this.state;
    const carried = (which: 'm' | 'v'): tf.Variable =>
      tf.tidy(() => {
        const before = new Map<string, tf.Tensor>();
        if (old) tf.split(old[which], old.sizes).forEach((t, i) => before.set(old.names[i], t));
        const pieces = names.map((n, i) => before.get(n) ?? tf.zeros([sizes[i]]));
        return tf.variable(tf.concat(pieces), false);
      });
    const decayMask = names.some(decays)
      ? tf.tidy(() => tf.concat(names.map((n, i) => (decays(n) ? tf.ones([sizes[i]]) : tf.zeros([sizes[i]])))))
      : null;
    const next: PackedState = { key, names, sizes, m: carried('m'), v: carried('v'), decayMask };
    this.disposeState();
    this.state = next;
    return next;
  }

  private disposeState(): void {
    if (!this.state) return;
    tf.dispose([this.state.m, this.state.v, ...(this.state.decayMask ? [this.state.decayMask] : [])]);
    this.state = null;
  }

  dispose(): void {
    this.disposeState();
  }
}

/** Decay matrices (`….w`, the token embedding), not LayerNorm gains, biases or positions. */
function decays(variableName: string): boolean {
  const name = variableName.slice(variableName.indexOf('/') + 1);
  return name.endsWith('.w') || name === 'wte';
}
