/**
 * The learner as the stack builds it, the one learner of every run that trains: `turnstream
 * train` (and so `up`), eval's runs (through the pipeline, or its step called in-process) and
 * gym's seeds all take their settings from `settings.train` (`TRAIN_*`) with the model family's
 * defaults, and change only what they name in `overrides.settings` (each run's JSON lists them).
 */
import type { Logger } from '../core/index.ts';
import type { EventCodecs } from '../streams/index.ts';
import type { Kafka } from 'kafkajs';
import {
  learnerOptionsOf,
  learnerSettings,
  loraConfigOf,
  LoraLineage,
  startLearner,
  type LearnerHandle,
  type LearnerOptions,
  type LearnerSettings,
  type LoraLineageOptions,
  type ModelFamily,
} from '../trainer/index.ts';
import { familyOf, type ServedModel } from './served-model.ts';
import type { StackSettings } from './settings.ts';

/** What a run changes of the learner `settings.train` describes. */
export interface LearnerOverrides {
  /** Learner settings that differ from the configured ones, by name (a run's JSON reports them). */
  settings?: Partial<LearnerSettings>;
  /** Wiring, not learning: the model id trained. @default the served model's */
  modelId?: string;
  /** The weight store. @default settings.weightsDir */
  weightsDir?: string;
  /**
   * How the gateways get its versions (LearnerOptions.weightsTransport).
   * @default settings.weightsTransport; 'file' with a `weightsDir` of the run's own (eval's and gym's gateways share it)
   */
  weightsTransport?: 'file' | 'kafka';
  samplesTag?: string;
  fromVersion?: number;
  instanceId?: string;
  /** The base already loaded into tfjs, shared by several lineages (eval, gym). */
  baseTf?: LoraLineageOptions['baseTf'];
  onVersion?: LearnerOptions['onVersion'];
  logger?: Logger;
}

/** What {@link learnerService} starts: the family, the settings, the named overrides and the options built from them. */
export interface LearnerPlan {
  family: ModelFamily;
  /** The settings the learner trains with, every default filled in. */
  settings: LearnerSettings;
  /** The overrides it was given (`overrides.settings`, undefined ones left out). */
  overrides: Partial<LearnerSettings>;
  /** The LoRA lineage (a GGUF model); none: the built-in model's checkpoints. */
  lineage: LoraLineageOptions | undefined;
  options: Omit<LearnerOptions, 'kafka' | 'codecs' | 'lineage'>;
}

/** The overrides that are set (so a report names only what a run changed). */
export const namedOverrides = (o: Partial<LearnerSettings> = {}): Partial<LearnerSettings> =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<LearnerSettings>;

/** The learner's settings and options, built but not started. */
export function learnerPlan(settings: StackSettings, served: ServedModel, overrides: LearnerOverrides = {}): LearnerPlan {
  const family = familyOf(served);
  const named = namedOverrides(overrides.settings);
  // The learner's settings of the configuration (its service's metrics port is not one).
  const { metricsPort: _metricsPort, ...train } = settings.train;
  const s = learnerSettings(family, train, named);
  const weightsDir = overrides.weightsDir ?? settings.weightsDir;
  const modelId = overrides.modelId ?? served.modelId;
  const lineage: LoraLineageOptions | undefined =
    served.kind === 'llama'
      ? {
          weightsDir,
          modelId,
          base: { name: served.name, path: served.path, sha256: served.sha256 },
          lora: loraConfigOf(s),
          maxTrainTokens: s.maxTrainTokens,
          baseTf: overrides.baseTf,
          logger: overrides.logger,
        }
      : undefined;
  return {
    family,
    settings: s,
    overrides: named,
    lineage,
    options: {
      weightsDir,
      weightsTransport: overrides.weightsTransport ?? (overrides.weightsDir === undefined ? settings.weightsTransport : 'file'),
      modelId,
      samplesTag: overrides.samplesTag,
      fromVersion: overrides.fromVersion,
      instanceId: overrides.instanceId,
      ...learnerOptionsOf(s, family),
      onVersion: overrides.onVersion,
      logger: overrides.logger,
    },
  };
}

/** A started learner (resumed: `handle.ready` resolved) and the plan it was started from. */
export interface LearnerService {
  handle: LearnerHandle;
  plan: LearnerPlan;
}

/** Starts the learner of {@link learnerPlan} on `link`'s Kafka and topic family, and waits until it has resumed. */
export async function learnerService(
  settings: StackSettings,
  served: ServedModel,
  link: { kafka: Kafka; codecs: EventCodecs },
  overrides: LearnerOverrides = {},
): Promise<LearnerService> {
  const plan = learnerPlan(settings, served, overrides);
  const handle = await startLearner({
    ...plan.options,
    kafka: link.kafka,
    codecs: link.codecs,
    lineage: plan.lineage ? new LoraLineage(plan.lineage) : undefined,
  });
  await handle.ready;
  return { handle, plan };
}
