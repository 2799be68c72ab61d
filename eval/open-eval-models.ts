/** The model side of `turnstream eval`'s in-process runs: the served GGUF model as LoRA versions, or the built-in model. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadPolicy } from '../policy/index.ts';
import type { LearnerPlan } from '../stack/index.ts';
import type { EvalConfig, EvalServedModel } from './eval-config.ts';
import type { EvalFlags } from './eval-flags.ts';
import { builtinEvalModels, llamaEvalModels, type EvalModels } from './eval-model.ts';

/**
 * The model side of in-process runs: the served GGUF model as LoRA versions, or the built-in
 * model, each trained by the step of `plan` (the learner of eval's runs: eval/eval-learner.ts).
 */
export async function openEvalModels(
  config: EvalConfig,
  served: EvalServedModel,
  baseUri: string,
  f: Pick<EvalFlags, 'temperature' | 'maxTokens'>,
  plan: LearnerPlan,
): Promise<EvalModels> {
  const sampling = { temperature: Number(f.temperature), maxTokens: Number(f.maxTokens) };
  if (served.kind === 'builtin') {
    // The frozen base is the OPD teacher of the in-process loop (the pipeline's sample builder loads its own).
    const teacherPolicy = await loadPolicy({ weightsDir: config.weightsDir, version: 0 });
    const models = builtinEvalModels({ baseUri, teacherPolicy, lr: plan.settings.lr, step: plan.options.step });
    return { open: (id) => models.open(id), close: async () => teacherPolicy.dispose() };
  }
  const dir = await mkdtemp(join(tmpdir(), 'turnstream-eval-'));
  const models = await llamaEvalModels({
    model: { name: served.name, path: served.path, sha256: served.sha256 },
    dir,
    systemPrompt: served.systemPrompt,
    sampling,
    lora: plan.lineage?.lora,
    lr: plan.settings.lr,
    step: plan.options.step,
    maxTrainTokens: plan.settings.maxTrainTokens,
  });
  return {
    open: (id) => models.open(id),
    close: async () => {
      await models.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
