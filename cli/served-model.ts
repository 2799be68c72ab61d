/** The served model (stack/served-model.ts), with its download's progress on stderr. */
import { servedModel as resolveServed, type ServedModel } from '../stack/served-model.ts';
import type { Logger } from '../core/index.ts';
import { progressReporter } from './commands/model.ts';
import type { TurnstreamConfig } from './config.ts';

export type { ServedModel };

export interface ServedModelOptions {
  /** Overrides `TURNSTREAM_MODEL` (`--model`). */
  spec?: string;
  /** Show download progress on stderr. @default true */
  progress?: boolean;
  logger?: Pick<Logger, 'info'>;
}

/** Resolves (and, the first time, fetches) the served model. */
export async function servedModel(config: TurnstreamConfig, opts: ServedModelOptions = {}): Promise<ServedModel> {
  const progress = opts.progress === false ? null : progressReporter(process.stderr);
  try {
    return await resolveServed(config, { spec: opts.spec, logger: opts.logger, onProgress: progress?.onProgress });
  } finally {
    progress?.stop();
  }
}
