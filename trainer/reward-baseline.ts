/**
 * A running mean of each user's non-zero rewards, subtracted from their next ones: REINFORCE
 * with a baseline, for the RL term only. Why: a user the model never satisfies sends −1 after
 * −1, and without a baseline each one pushes the sampled replies down at full strength. Twelve
 * such steps (lr 2e-3, KL 0.25) turned SmolLM2's answers into gibberish for three personas
 * whose wish it never met (results/eval/real-model/README.md). With the baseline a steady −1 soon moves
 * nothing, while a +1 after a run of −1 counts nearly double. Only a mean below 0 is
 * subtracted: a full mean let a satisfied user's +1 count for nothing and each −1 double, and
 * concise-carl fell back from 1.00 to 0.25 held-out after 24 interactions.
 *
 * `prior` is the mean a user starts with. At 0 a new user's first −1 pushes at full strength,
 * and the early steps of a user the model cannot please did their damage before the mean
 * caught up (3 seeds × 4 personas, results/eval/real-model/README.md). At −1 a user's dissatisfaction pushes
 * nothing until some reply has pleased them: the per-user counterpart of a group whose replies
 * all got −1 (zero advantage), while their first +1 counts double.
 */
import type { Sample } from '../schemas/index.ts';

export interface RewardBaselineOptions {
  /** Weight of the newest reward in the running mean, in (0, 1]. @default 0.3 */
  decay?: number;
  /** Users (per model) remembered at most; the least recently seen go first. @default 10000 */
  maxUsers?: number;
  /** The running mean of a user not seen yet, in [−1, 0]. @default 0 */
  prior?: number;
  /** Subtract the mean from rewards ({@link of}); false keeps the means for {@link meanOf} only. @default true */
  subtract?: boolean;
}

const keyOf = (s: Pick<Sample, 'policyModelId' | 'userId'>): string => `${s.policyModelId}\u0000${s.userId ?? ''}`;

export class RewardBaseline {
  private readonly means = new Map<string, number>();
  private readonly decay: number;
  private readonly maxUsers: number;
  private readonly prior: number;
  private readonly subtract: boolean;

  constructor(o: RewardBaselineOptions = {}) {
    this.decay = o.decay ?? 0.3;
    this.maxUsers = o.maxUsers ?? 10_000;
    this.prior = o.prior ?? 0;
    this.subtract = o.subtract ?? true;
    if (!(this.prior >= -1 && this.prior <= 0)) throw new RangeError(`reward baseline prior must be in [-1, 0], got ${this.prior}`);
    if (!(this.decay > 0 && this.decay <= 1)) throw new RangeError(`reward baseline decay must be in (0, 1], got ${this.decay}`);
  }

  /** What to subtract from this sample's reward: its user's running mean if below 0; 0 for a reward of 0 (no RL signal to shift). */
  of(s: Pick<Sample, 'policyModelId' | 'userId' | 'reward'>): number {
    return s.reward === 0 || !this.subtract ? 0 : Math.min(0, this.meanOf(s));
  }

  /** This sample's user's running mean reward (the prior for a user not seen yet). */
  meanOf(s: Pick<Sample, 'policyModelId' | 'userId'>): number {
    return this.means.get(keyOf(s)) ?? this.prior;
  }

  /** Takes the non-zero rewards of a step that was applied into each user's mean, in order. */
  observe(samples: ReadonlyArray<Pick<Sample, 'policyModelId' | 'userId' | 'reward'>>): void {
    for (const s of samples) {
      if (s.reward === 0) continue;
      const k = keyOf(s);
      const prev = this.means.get(k) ?? this.prior;
      this.means.delete(k);
      this.means.set(k, prev + this.decay * (s.reward - prev));
      if (this.means.size > this.maxUsers) this.means.delete(this.means.keys().next().value!);
    }
  }
}
