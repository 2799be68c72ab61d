/**
 * Eval's learner: the learner `turnstream up` trains (stack/learner-service.ts, `TRAIN_*`), with
 * what an eval run changes of it named here, and each name in eval.json (`learner.overrides`).
 */
import { learnerPlan, type LearnerPlan, type ServedModel, type StackSettings } from '../stack/index.ts';
import type { LearnerSettings } from '../trainer/index.ts';

export interface EvalLearnerOptions {
  /** Interactions per version (`--batch-size`). */
  batchSize: number;
  /** `--lr`; unset: the configured learner's (`TRAIN_LR`, else the model family's). */
  lr?: number;
  /** `--lora-last-layers`; unset: `TRAIN_LORA_LAST_LAYERS`. */
  loraLastLayers?: number;
}

/**
 * What an eval run changes of the configured learner. A version per block of `batchSize`
 * interactions, as in-process: one user fills every batch (`maxUserShare` 1), the learner waits
 * for the whole block (`minSamples`; without it a sample that waited 4 s behind a slow generation
 * trained alone, and a run's cadence, 14–21 versions in 24 interactions, followed the machine's
 * load), never longer than 4 s past its first sample, and no sample of a run is stale.
 */
export function evalLearnerOverrides(o: EvalLearnerOptions): Partial<LearnerSettings> {
  return {
    batchSize: o.batchSize,
    minSamples: o.batchSize,
    maxWaitMs: 4000,
    maxUserShare: 1,
    maxStaleness: 1000,
    lr: o.lr,
    loraLastLayers: o.loraLastLayers,
  };
}

/** The learner of an eval run on `served` (its settings, named overrides and options). */
export function evalLearnerPlan(
  settings: StackSettings,
  served: ServedModel,
  o: EvalLearnerOptions,
  wiring: Omit<Parameters<typeof learnerPlan>[2], 'settings'> = {},
): LearnerPlan {
  return learnerPlan(settings, served, { ...wiring, settings: evalLearnerOverrides(o) });
}

/** What eval.json says of the learner the runs trained: its settings and the overrides eval applied. */
export interface EvalLearnerReport {
  settings: LearnerSettings;
  overrides: Partial<LearnerSettings>;
}

export const learnerReport = (plan: LearnerPlan): EvalLearnerReport => ({ settings: plan.settings, overrides: plan.overrides });
