/**
 * The model this installation serves and trains (`TURNSTREAM_MODEL`, `--model`): the built-in
 * tiny model, or a GGUF checkpoint fetched into the models cache on first use and checked against
 * its sha256. Every service resolves it the same way, so the gateway, the sample builder's teacher
 * and the learner agree on the file and the model id.
 */
import { resolveModel, type ModelProgress, type ResolvedModel } from '../policy/index.ts';
import type { Logger } from '../core/index.ts';
import type { StackSettings } from './settings.ts';

export type ServedModel =
  | { kind: 'builtin'; modelId: string }
  | {
      kind: 'llama';
      /** Display name (what clients put in `model`). */
      name: string;
      /** Model id of events and the weight store. */
      modelId: string;
      path: string;
      sha256: string;
      /** System prompt of conversations without one (settings, else the catalog's suggestion). */
      systemPrompt: string | undefined;
    };

export interface ServedModelOptions {
  /** Overrides `settings.model.spec` (`--model`). */
  spec?: string;
  /** Download progress. */
  onProgress?: (p: ModelProgress) => void;
  logger?: Pick<Logger, 'info'>;
}

/** Resolves (and, the first time, fetches) the served model. */
export async function servedModel(
  settings: Pick<StackSettings, 'model' | 'modelId' | 'llama'>,
  opts: ServedModelOptions = {},
): Promise<ServedModel> {
  const m: ResolvedModel = await resolveModel(opts.spec ?? settings.model.spec, {
    cacheDir: settings.model.cacheDir,
    hfEndpoint: settings.model.hfEndpoint,
    hfToken: settings.model.hfToken,
    onProgress: opts.onProgress,
  });
  if (m.source === 'builtin' || !m.path || !m.sha256) return { kind: 'builtin', modelId: settings.modelId ?? m.modelId };
  if (m.downloaded) opts.logger?.info({ model: m.name, path: m.path }, 'model fetched into the cache');
  const short = m.source === 'catalog' ? m.name : m.modelId;
  return {
    kind: 'llama',
    name: short,
    modelId: settings.modelId ?? m.modelId,
    path: m.path,
    sha256: m.sha256,
    systemPrompt: settings.llama.systemPrompt ?? m.catalog?.defaults?.systemPrompt,
  };
}

/** The model family trained on a served model: a LoRA adapter on a GGUF model, else the built-in model. */
export const familyOf = (served: ServedModel): 'lora' | 'builtin' => (served.kind === 'llama' ? 'lora' : 'builtin');
