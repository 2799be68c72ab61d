import { ErrorCodes, TurnstreamError } from '../../core/index.ts';
import { renderPrompt, type ChatMessage } from './chat-template.ts';
import { loadCheckpoint } from './checkpoint.ts';
import { generate, scoreTokens, type GenerateOptions, type GeneratedToken } from './generate.ts';
import type { ModelConfig, TransformerModel } from './model.ts';
import { ByteTokenizer } from './tokenizer.ts';
import { WeightStore } from './weight-store.ts';

export type { ChatMessage, GenerateOptions, GeneratedToken, ModelConfig };

/**
 * One loaded version of the built-in model, as the gateway serves it. Several generations may
 * run at once (they interleave per token on tfjs's single thread). `dispose()` is safe while
 * generations are in flight: the weights are freed when the last one finishes, so a hot swap
 * lets in-flight requests finish on the version they started with.
 */
export interface PolicyHandle {
  readonly modelId: string;
  readonly version: number;
  /** sha256 of the checkpoint's weights.bin. */
  readonly sha256: string;
  readonly config: ModelConfig;
  readonly tokenizer: ByteTokenizer;
  /**
   * Chat messages → prompt ids, with the truncation policy of `renderPrompt` (never an error).
   * @param maxPromptTokens default: three quarters of the context length (the rest is room for
   * the answer).
   */
  renderPrompt(messages: ChatMessage[], maxPromptTokens?: number): { ids: number[]; truncatedTokens: number };
  /** Streams generated tokens; see `generate`. Throws `TurnstreamError(ABORTED)` on abort. */
  generate(promptIds: number[], opts: GenerateOptions): AsyncGenerator<GeneratedToken>;
  /** log π of each given response token after the prompt (temperature 1). */
  score(promptIds: number[], responseIds: number[]): Promise<number[]>;
  dispose(): void;
}

export interface LoadPolicyOptions {
  /** Root of the weight store. */
  weightsDir: string;
  /** @default 'turnstream-tiny' */
  modelId?: string;
  /** @default the latest version in the store */
  version?: number;
  /** When given, the checkpoint's weights.bin must have this sha256. */
  expectedSha256?: string;
}

class LoadedPolicy implements PolicyHandle {
  readonly tokenizer = new ByteTokenizer();
  private inFlight = 0;
  private disposeRequested = false;

  constructor(
    readonly modelId: string,
    readonly version: number,
    readonly sha256: string,
    private readonly model: TransformerModel,
  ) {}

  get config(): ModelConfig {
    return this.model.config;
  }

  renderPrompt(messages: ChatMessage[], maxPromptTokens?: number): { ids: number[]; truncatedTokens: number } {
    const max = maxPromptTokens ?? Math.floor((this.config.contextLength * 3) / 4);
    return renderPrompt(this.tokenizer, messages, { maxPromptTokens: Math.min(max, this.config.contextLength - 1) });
  }

  async *generate(promptIds: number[], opts: GenerateOptions): AsyncGenerator<GeneratedToken> {
    this.acquire();
    try {
      yield* generate(this.model, promptIds, { ...opts, tokenizer: this.tokenizer });
    } finally {
      this.release();
    }
  }

  async score(promptIds: number[], responseIds: number[]): Promise<number[]> {
    this.acquire();
    try {
      return await scoreTokens(this.model, promptIds, responseIds, this.tokenizer);
    } finally {
      this.release();
    }
  }

  dispose(): void {
    this.disposeRequested = true;
    if (this.inFlight === 0) this.model.dispose();
  }

  private acquire(): void {
    if (this.disposeRequested) {
      throw new TurnstreamError(ErrorCodes.INTERNAL, `policy ${this.modelId} v${this.version} is disposed`);
    }
    this.inFlight++;
  }

  private release(): void {
    this.inFlight--;
    if (this.disposeRequested && this.inFlight === 0) this.model.dispose();
  }
}

/**
 * Loads a version of the built-in model from the weight store (the latest when `version` is not
 * given), verifying its sha256. Throws `TurnstreamError(NOT_FOUND)` when the store has no such
 * model or version, `CORRUPT_WEIGHTS` when verification fails. Call `selectBackend()` first to
 * pick the fastest tfjs backend (otherwise tfjs's default is used).
 */
export async function loadPolicy(opts: LoadPolicyOptions): Promise<PolicyHandle> {
  const modelId = opts.modelId ?? 'turnstream-tiny';
  const store = new WeightStore(opts.weightsDir);
  let version = opts.version;
  if (version === undefined) {
    const latest = await store.latest(modelId);
    if (!latest) throw new TurnstreamError(ErrorCodes.NOT_FOUND, `no versions of model ${modelId} in ${opts.weightsDir}`);
    version = latest.version;
  }
  const { model, manifest } = await loadCheckpoint(store.path(modelId, version), { expectedSha256: opts.expectedSha256 });
  return new LoadedPolicy(modelId, version, manifest.sha256, model);
}
