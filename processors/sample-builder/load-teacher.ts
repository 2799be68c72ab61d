/**
 * The frozen teacher for OPD: an upstream engine that can score given tokens when one is named,
 * else the built-in model's base checkpoint (version 0 of the weight store), waited for when the
 * store has none yet (the gateway or trainer creates it on first start).
 */
import { ErrorCodes, TurnstreamError, retry, type Logger } from '../../core/index.ts';
import { loadPolicy, selectBackend } from '../../policy/index.ts';
import { LlamaTeacher, type LlamaTeacherOptions } from './llama-teacher.ts';
import { PolicyTeacher } from './policy-teacher.ts';
import type { Teacher } from './teacher.ts';
import { UpstreamTeacher, type UpstreamTeacherOptions } from './upstream-teacher.ts';

export interface LoadTeacherOptions {
  /** An engine that scores given tokens (see UpstreamTeacher). @default undefined (built-in) */
  upstream?: UpstreamTeacherOptions;
  /** A GGUF model: the teacher is the learner's current policy, on the hinted prompt (LlamaTeacher). */
  llama?: Omit<LlamaTeacherOptions, 'logger'>;
  /** Weight store of the built-in model. */
  weightsDir: string;
  /** @default 'turnstream-tiny' */
  modelId?: string;
  /** Version of the frozen base checkpoint. @default 0 */
  version?: number;
  /** How long to wait for that checkpoint to appear, in ms. @default 300_000 */
  waitMs?: number;
  logger?: Logger;
  signal?: AbortSignal;
}

export async function loadTeacher(options: LoadTeacherOptions): Promise<Teacher> {
  if (options.upstream) return new UpstreamTeacher(options.upstream);
  if (options.llama) return LlamaTeacher.load({ ...options.llama, logger: options.logger });
  await selectBackend();
  const version = options.version ?? 0;
  const notThereYet = (err: unknown): boolean => err instanceof TurnstreamError && err.code === ErrorCodes.NOT_FOUND;
  const policy = await retry(() => loadPolicy({ weightsDir: options.weightsDir, modelId: options.modelId, version }), {
    baseMs: 1000,
    maxMs: 5000,
    maxTimeMs: options.waitMs ?? 300_000,
    signal: options.signal,
    retryIf: notThereYet,
    onRetry: () => options.logger?.info({ weightsDir: options.weightsDir, version }, 'teacher checkpoint not there yet; waiting'),
  });
  return new PolicyTeacher(policy);
}
