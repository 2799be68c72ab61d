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

/**
 * Adam with decoupled weight decay and global-norm gradient clipping, on named variables.
 * tfjs's built-in Adam has neither, so this is the few lines it takes. Moments live in this
 * object (not in checkpoints): a restarted learner starts them from zero.
 */
export class AdamW {
  readonly options: Required<AdamWOptions>;
  private readonly m = new Map<string, tf.Variable>();
  private readonly v = new Map<string, tf.Variable>();
  private t = 0;

  constructor(options: AdamWOptions) {
    this.options = { beta1: 0.9, beta2: 0.98, epsilon: 1e-8, weightDecay: 0.1, maxGradNorm: 1, ...options };
  }

  /** Steps taken. */
  get steps(): number {
    return this.t;
  }

  /**
   * One update of `vars` with `grads` (by variable name). Returns the global gradient norm
   * before clipping. `lr` overrides the configured rate for this step (schedules).
   */
  apply(vars: tf.Variable[], grads: Record<string, tf.Tensor>, lr = this.options.lr): number {
    const { beta1, beta2, epsilon, weightDecay, maxGradNorm } = this.options;
    this.t++;
    const norm = tf.tidy(() => {
      const sq = vars.map((v) => tf.sum(tf.square(grads[v.name])));
      return Math.sqrt((tf.addN(sq) as tf.Scalar).dataSync()[0]);
    });
    const scale = maxGradNorm > 0 && norm > maxGradNorm ? maxGradNorm / norm : 1;
    const bc1 = 1 - beta1 ** this.t;
    const bc2 = 1 - beta2 ** this.t;
    for (const v of vars) {
      const g0 = grads[v.name];
      if (!g0) continue;
      let m = this.m.get(v.name);
      let s = this.v.get(v.name);
      if (!m || !s) {
        m = tf.variable(tf.zerosLike(v), false);
        s = tf.variable(tf.zerosLike(v), false);
        this.m.set(v.name, m);
        this.v.set(v.name, s);
      }
      const mm = m;
      const ss = s;
      tf.tidy(() => {
        const g = scale === 1 ? g0 : tf.mul(g0, scale);
        mm.assign(tf.add(tf.mul(mm, beta1), tf.mul(g, 1 - beta1)));
        ss.assign(tf.add(tf.mul(ss, beta2), tf.mul(tf.square(g), 1 - beta2)));
        const update = tf.div(tf.div(mm, bc1), tf.add(tf.sqrt(tf.div(ss, bc2)), epsilon));
        let next = tf.sub(v, tf.mul(update, lr));
        if (weightDecay > 0 && decays(v.name)) next = tf.sub(next, tf.mul(v, lr * weightDecay));
        v.assign(next);
      });
    }
    return norm;
  }

  dispose(): void {
    for (const t of [...this.m.values(), ...this.v.values()]) t.dispose();
    this.m.clear();
    this.v.clear();
  }
}

/** Decay matrices (`….w`, the token embedding), not LayerNorm gains, biases or positions. */
function decays(variableName: string): boolean {
  const name = variableName.slice(variableName.indexOf('/') + 1);
  return name.endsWith('.w') || name === 'wte';
}
