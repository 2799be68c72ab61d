/** The model side of `turnstream eval`'s in-process runs: the served GGUF model as LoRA versions, or the built-in model. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadPolicy, type LoraConfig } from '../policy/index.ts';
import { familyStepOptions, familyStepSettings, LEARNER_LR, LORA_LR, LORA_MAX_KL } from '../trainer/index.ts';
import type { EvalConfig, EvalServedModel } from './eval-config.ts';
import type { EvalFlags } from './eval-flags.ts';
import { builtinEvalModels, llamaEvalModels, type EvalModels } from './eval-model.ts';

/** The LoRA of a run: `TRAIN_LORA_*`, `--lora-last-layers` over `TRAIN_LORA_LAST_LAYERS`. */
export const loraOf = (config: EvalConfig, f: Pick<EvalFlags, 'loraLastLayers'>): Partial<LoraConfig> => ({
  rank: config.train.loraRank,
  alpha: config.train.loraAlpha,
  targets: config.train.loraTargets as LoraConfig['targets'],
  lastLayers: f.loraLastLayers ? Number(f.loraLastLayers) : config.train.loraLastLayers,
});

/** The model side of in-process runs: the served GGUF model as LoRA versions, or the built-in model. */
export async function openEvalModels(
  config: EvalConfig,
  served: EvalServedModel,
  baseUri: string,
  f: Pick<EvalFlags, 'loraLastLayers' | 'temperature' | 'maxTokens'>,
  lr: number | undefined,
): Promise<EvalModels> {
  const sampling = { temperature: Number(f.temperature), maxTokens: Number(f.maxTokens) };
  if (served.kind === 'builtin') {
    // The frozen base is the OPD teacher of the in-process loop (the pipeline's sample builder loads its own).
    const teacherPolicy = await loadPolicy({ weightsDir: config.weightsDir, version: 0 });
    const models = builtinEvalModels({ baseUri, teacherPolicy, lr: lr ?? LEARNER_LR });
    return { open: (id) => models.open(id), close: async () => teacherPolicy.dispose() };
  }
  const dir = await mkdtemp(join(tmpdir(), 'turnstream-eval-'));
  const models = await llamaEvalModels({
    model: { name: served.name, path: served.path, sha256: served.sha256 },
    dir,
    systemPrompt: served.systemPrompt,
    sampling,
    lora: loraOf(config, f),
    lr: lr ?? LORA_LR,
    step: {
      maxKl: config.train.maxKl ?? LORA_MAX_KL,
      ...familyStepOptions(familyStepSettings(true, config.train)),
      opdOnReference: config.train.opdOnBase,
      mismatchTis: config.train.mismatchTis,
    },
    maxTrainTokens: Math.min(config.train.maxTrainTokens, 512),
  });
  return {
    open: (id) => models.open(id),
    close: async () => {
      await models.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
