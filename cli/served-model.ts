/**
 * The model this installation serves and trains (`TURNSTREAM_MODEL`, `--model`): the built-in
 * tiny model, or a GGUF checkpoint fetched into the models cache on first use (with progress on
 * stderr) and checked against its sha256. Every service resolves it the same way, so the gateway,
 * the sample builder's teacher and the learner agree on the file and the model id.
 */
import { resolveModel, type ResolvedModel } from '../policy/index.ts';
import type { Logger } from '../core/index.ts';
import { progressReporter } from './commands/model.ts';
import type { TurnstreamConfig } from './config.ts';

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
      /** System prompt of conversations without one (config, else the catalog's suggestion). */
      systemPrompt: string | undefined;
    };

export interface ServedModelOptions {
  /** Overrides `TURNSTREAM_MODEL` (`--model`). */
  spec?: string;
  /** Show download progress on stderr. @default true */
  progress?: boolean;
  logger?: Pick<Logger, 'info'>;
}

/** Resolves (and, the first time, fetches) the served model. */
export async function servedModel(config: TurnstreamConfig, opts: ServedModelOptions = {}): Promise<ServedModel> {
  const spec = opts.spec ?? config.model.spec;
  const progress = opts.progress === false ? null : progressReporter(process.stderr);
  let m: ResolvedModel;
  try {
    m = await resolveModel(spec, {
      cacheDir: config.model.cacheDir,
      hfEndpoint: config.model.hfEndpoint,
      hfToken: config.model.hfToken,
      onProgress: progress?.onProgress,
    });
  } finally {
    progress?.stop();
  }
  if (m.source === 'builtin' || !m.path || !m.sha256) return { kind: 'builtin', modelId: config.modelId ?? m.modelId };
  if (m.downloaded) opts.logger?.info({ model: m.name, path: m.path }, 'model fetched into the cache');
  const short = m.source === 'catalog' ? m.name : m.modelId;
  return {
    kind: 'llama',
    name: short,
    modelId: config.modelId ?? m.modelId,
    path: m.path,
    sha256: m.sha256,
    systemPrompt: config.llama.systemPrompt ?? m.catalog?.defaults?.systemPrompt,
  };
}
