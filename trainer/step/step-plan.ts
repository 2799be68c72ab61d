/**
 * What a step will do, before any tensor: the samples that fit, in content order, as rows; those
 * with trained tokens; the micro-batches (by token budget); each row's reward baseline; the
 * teacher top-k size; the learning rate's scale for pleased users.
 */
import type { RewardBaseline } from '../reward-baseline.ts';
import type { TrainablePolicy } from '../trainable-policy.ts';
import { byContent, fits, toRow, type Row } from './step-rows.ts';
import { DISTRIBUTION_TOP_K, type LearnerStepOptions, type StepSample } from './step-types.ts';

export interface StepPlan {
  rows: Row[];
  /** Samples that do not fit the model. */
  skipped: number;
  /** Rows with at least one trained token, and their count (N) and trained tokens. */
  withTokens: Row[];
  N: number;
  tokens: number;
  /** Micro-batches of `withTokens`, each within the policy's token budget. */
  groups: Row[][];
  /** Ids per position of teacher top-k (given, or a deferred teacher's under 'distribution'); 0: none. */
  K: number;
  /** Each row's user's mean reward before the step (0 without a baseline). */
  baselines: Map<Row, number>;
  /** The learning rate's factor for pleased users. */
  lrScale: number;
}

function checkOptions(policy: TrainablePolicy, opts: LearnerStepOptions): void {
  if ((opts.klCoef ?? 0) !== 0 && !policy.hasReference) throw new Error('klCoef ≠ 0 needs a reference model');
  if (opts.opdOnReference && !policy.hasReference) throw new Error('opdOnReference needs a reference model');
  const damping = opts.pleasedDamping ?? 0;
  if (!(damping >= 0 && damping <= 1)) throw new RangeError(`pleasedDamping must be in [0, 1], got ${damping}`);
  if (damping > 0 && !opts.rewardBaseline) throw new Error("pleasedDamping needs a rewardBaseline (the users' running means)");
}

/** Micro-batches of rows, in order, each at most `budget` tokens (a longer row alone). */
function microBatches(rows: Row[], budget: number): Row[][] {
  const groups: Row[][] = [];
  let size = Number.POSITIVE_INFINITY;
  for (const r of rows) {
    if (groups.length === 0 || size + r.seq.ids.length > budget) {
      groups.push([]);
      size = 0;
    }
    groups[groups.length - 1].push(r);
    size += r.seq.ids.length;
  }
  return groups;
}

/** Smaller steps for pleased users: 1 − damping · mean over rows of max(0, the user's mean reward). */
function pleasedScale(rows: Row[], damping: number, baseline: RewardBaseline | undefined): number {
  if (damping === 0 || !baseline) return 1;
  return 1 - (damping * rows.reduce((a, r) => a + Math.max(0, baseline.meanOf(r.sample)), 0)) / rows.length;
}

export function planStep(policy: TrainablePolicy, items: StepSample[], opts: LearnerStepOptions): StepPlan {
  checkOptions(policy, opts);
  const ok = [...items].sort(byContent).filter(({ sample: s }) => fits(s, policy.contextLength));
  const rows = ok.map((i) => toRow(i, Math.min(policy.microBatchTokens, policy.contextLength)));
  const trained = rows.map((r) => r.mask.reduce((a, b) => a + b, 0));
  const withTokens = rows.filter((_, i) => trained[i] > 0);
  const givenK = Math.max(0, ...rows.map((r) => r.sample.teacherTopK?.[0]?.ids.length ?? 0));
  // A deferred teacher's distribution is cut to the same k as any given one, so that they stack.
  const deferred = opts.opdAdvantage === 'distribution' && givenK === 0 && rows.some((r) => r.sample.teacherPromptTokens);
  return {
    rows,
    skipped: items.length - ok.length,
    withTokens,
    N: withTokens.length,
    tokens: trained.reduce((a, b) => a + b, 0),
    groups: microBatches(withTokens, policy.microBatchTokens),
    K: deferred ? DISTRIBUTION_TOP_K : givenK,
    // Every sample of the step is measured against its user's mean before the step.
    baselines: new Map(withTokens.map((r) => [r, opts.rewardBaseline?.of(r.sample) ?? 0])),
    lrScale: pleasedScale(withTokens, opts.pleasedDamping ?? 0, opts.rewardBaseline),
  };
}
