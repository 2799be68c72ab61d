/**
 * The learner's step on one policy: its optimizer, the step options (GRPO's when every sample of
 * the batch is a rollout of a group), and the metrics a version records. The Kafka learner
 * (learner.ts) and eval's in-process runs train through it, so a run measured in-process takes the
 * very step `turnstream train` takes.
 */
import type { TransformerModel } from '../policy/index.ts';
import type { TrainMetrics } from '../schemas/index.ts';
import { AdamW, type AdamWOptions } from './adamw.ts';
import { LEARNER_LR } from './defaults.ts';
import { learnerStep, type LearnerStepOptions, type StepMetrics, type StepSample } from './learner-step.ts';
import type { TrainablePolicy } from './trainable-policy.ts';

/** What a GRPO rollout batch's step changes of the configured step options (LearnerOptions.grpoStep). */
export const GRPO_STEP: Partial<LearnerStepOptions> = Object.freeze({
  tokenMean: 'batch',
  klCoef: 0,
  rewardBaseline: undefined,
  pleasedDamping: 0,
  wOpd: 0,
  wRl: 1,
});

export interface PolicyStepperOptions {
  /** AdamW settings. @default { lr: LEARNER_LR } */
  optimizer?: Partial<AdamWOptions>;
  /** The step's options (the learner's `step`). @default learnerStep's */
  step?: LearnerStepOptions;
  /** What a batch of GRPO rollouts changes of `step`, over {@link GRPO_STEP}. @default {} */
  grpoStep?: Partial<LearnerStepOptions>;
}

export class PolicyStepper {
  private readonly optimizer: AdamW;

  constructor(
    private readonly policy: TrainablePolicy | TransformerModel,
    private readonly o: PolicyStepperOptions = {},
  ) {
    this.optimizer = new AdamW({ lr: LEARNER_LR, ...o.optimizer });
  }

  /** One step on `items`; the policy's variables are updated in place (unless the step is undone: `rejected`). */
  step(items: StepSample[]): Promise<StepMetrics> {
    const grpo = items.length > 0 && items.every((i) => i.sample.group);
    return learnerStep(this.policy, this.optimizer, items, grpo ? { ...this.o.step, ...GRPO_STEP, ...this.o.grpoStep } : this.o.step);
  }

  dispose(): void {
    this.optimizer.dispose();
  }
}

/** What a version records of the step that made it: its metrics, the samples dropped as stale, and its place in the lineage. */
export function trainMetricsOf(
  m: StepMetrics,
  at: { steps: number; droppedStale: number; stepSeconds: number },
): { [K in keyof TrainMetrics]-?: number } {
  return {
    loss: m.loss,
    meanReward: m.meanReward,
    kl: m.kl,
    clipFraction: m.clipFraction,
    samples: m.samples,
    tokens: m.tokens,
    logprobDrift: m.logprobDrift,
    droppedStale: at.droppedStale,
    steps: at.steps,
    mismatchKl: m.mismatchKl,
    tisMean: m.tisMean,
    tisTruncated: m.tisTruncated,
    stepSeconds: at.stepSeconds,
  };
}
