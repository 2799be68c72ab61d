/**
 * An engine answers a chat request: the built-in tfjs policy or an upstream OpenAI-compatible
 * server. Both stream deltas as they are produced and return what the Turn records.
 */
import type { ChatMessage, ToolCall, Turn } from '../schemas/index.ts';
import type { ChatRequest } from './chat-request.ts';
import type { ChoiceLogprobs, TokenLogprob } from './logprobs.ts';

/** A piece of the answer, as an OpenAI streaming `delta`. */
export interface Delta {
  content?: string;
  toolCalls?: Array<{
    index: number;
    id?: string;
    type?: 'function';
    function: { name?: string; arguments?: string };
  }>;
  /** The chunk's `logprobs` for the client; only when the request asked for `logprobs`. */
  logprobs?: ChoiceLogprobs;
}

/** A request's own prompt as the engine read it (`/v1/completions`): for `echo`. */
export interface PromptEcho {
  /** The prompt as text (token ids decoded). */
  text: string;
  /** With `logprobs`: one entry per prompt token, the first one's `logprob` null (nothing precedes it). */
  logprobs: PromptTokenLogprob[] | null;
}

/** A prompt token's entry: as an answer token's, but the first one has no log-prob. */
export type PromptTokenLogprob = Omit<TokenLogprob, 'logprob'> & { logprob: number | null };

export interface EngineCallOptions {
  /** Called for every delta, in order (streaming responses forward them at once). */
  onDelta?: (delta: Delta) => void;
  /** Called once before the first delta when the request has a prompt of its own (`/v1/completions`). */
  onPrompt?: (prompt: PromptEcho) => void;
  /** Aborts the generation (client gone, timeout, shutdown). */
  signal: AbortSignal;
}

/** Everything the Turn needs from the engine. */
export interface EngineResult {
  content: string | null;
  toolCalls: ToolCall[];
  finishReason: string;
  /** Which weights answered. */
  policyModelId: string;
  policyVersion: number;
  promptTokenIds: number[];
  responseTokenIds: number[];
  /** One per response token, or empty when the engine gave none. */
  responseLogprobs: number[];
  /**
   * `choices[0].logprobs` for the client: set only when the request asked for `logprobs`
   * (an engine may fetch log-probs for the Turn without the client asking; those stay here).
   */
  logprobs: ChoiceLogprobs | null;
  /** The engine gave token ids (false: not trainable by token-level methods). */
  tokenized: boolean;
  /** `responseLogprobs` are the engine's under the recorded sampling distribution; see Turn.exactLogprobs. */
  exactLogprobs: boolean;
  promptTruncatedTokens: number;
  /** Prompt tokens of the task (system message and first user message), when the engine knows (Turn.promptHeadTokens). */
  promptHeadTokens?: number;
  promptTokens: number;
  /** Leading prompt tokens whose evaluation was reused (prefix cache), when the engine knows. */
  cachedPromptTokens?: number;
  completionTokens: number;
  /** Sampling parameters actually used (after defaults and clamps), and what else shaped the answer. */
  sampling: Turn['sampling'];
  /** A request's own prompt (`/v1/completions`) as text: token ids decoded, for the Turn. */
  promptText?: string;
}

export interface ModelCard {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
}

export interface Engine {
  readonly kind: 'builtin' | 'proxy' | 'llama';
  /** Loaded and able to answer. */
  ready(): boolean;
  models(): Promise<ModelCard[]>;
  /**
   * Refuses a request's `model` that the engine does not serve: TurnstreamError(NOT_FOUND,
   * param 'model'), answered 404 `model_not_found`. An empty name means the current model.
   */
  checkModel(model: string): void;
  /**
   * Refuses what this engine cannot honour before anything is generated: a TurnstreamError
   * (INVALID_INPUT) naming the field (`param`), answered 400. Never ignores a field silently.
   */
  checkRequest(req: ChatRequest): void;
  complete(req: ChatRequest, opts: EngineCallOptions): Promise<EngineResult>;
  close(): Promise<void>;
}

export type { ChatMessage };
