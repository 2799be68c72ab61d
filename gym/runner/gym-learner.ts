/**
 * The gym's learner: the learner `turnstream up` trains (stack/learner-service.ts, `TRAIN_*`),
 * with what a gym run changes of it named here, and each name in gym.json (`learner.overrides`).
 */
import { learnerPlan, type LearnerOverrides, type LearnerPlan, type ServedModel, type StackSettings } from '../../stack/index.ts';
import type { LearnerSettings } from '../../trainer/index.ts';
import type { GymSettings } from './gym-options.ts';

/**
 * What a gym run changes of the configured learner: a rollout batch is one step (the batcher
 * takes it whole: it comes in one transaction, from one "user" and never stale), waited for as
 * long as a step may take; the run's learning rate and its KL pull towards the base in a GRPO step
 * (`--lr`, `--kl`; gym-options.ts says how they were chosen), the layers its adapter spans
 * (`--lora-layers`), and its importance weights' cap
 * (`--tis-cap`, by default the learner's 2), and how a step averages its loss (`--loss-agg`, by
 * default the learner's GRPO per-token mean over the batch).
 */
export function gymLearnerOverrides(
  s: Pick<GymSettings, 'lr' | 'klCoef' | 'loraLayers' | 'tisCap' | 'lossAggregation' | 'stepTimeoutMs'>,
): Partial<LearnerSettings> {
  return {
    batchSize: 1,
    minSamples: 1,
    maxWaitMs: s.stepTimeoutMs,
    maxUserShare: 1,
    maxStaleness: 1000,
    lr: s.lr,
    grpoKlCoef: s.klCoef,
    loraLastLayers: s.loraLayers,
    tisCap: s.tisCap,
    grpoTokenMean: s.lossAggregation === 'sample' ? 'sample' : 'batch',
  };
}

/** The learner of a gym seed on `served` (its settings, named overrides and options). */
export function gymLearnerPlan(
  settings: StackSettings,
  served: ServedModel,
  s: Pick<GymSettings, 'lr' | 'klCoef' | 'loraLayers' | 'tisCap' | 'lossAggregation' | 'stepTimeoutMs'>,
  wiring: Omit<LearnerOverrides, 'settings'> = {},
): LearnerPlan {
  return learnerPlan(settings, served, { ...wiring, settings: gymLearnerOverrides(s) });
}

/** The served model of a gym run: its GGUF model as the lineage `modelId`. */
export const gymServed = (s: Pick<GymSettings, 'model' | 'systemPrompt'>, modelId: string): ServedModel => ({
  kind: 'llama',
  name: s.model.name,
  modelId,
  path: s.model.path,
  sha256: s.model.sha256,
  systemPrompt: s.systemPrompt,
});
