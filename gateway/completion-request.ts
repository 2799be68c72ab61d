/**
 * Validation of `POST /v1/completions` bodies (OpenAI's legacy completions, which
 * lm-eval-harness and older SDKs speak): a prompt of its own, as a string, an array of strings,
 * an array of token ids or an array of arrays of token ids, each prompt answered with `n`
 * choices. The fields it shares with chat are validated as chat validates them; every bad input
 * is a `TurnstreamError(INVALID_INPUT)` naming the field.
 */
import { invalidInput } from '../core/index.ts';
import { MAX_N, parseCommon, type ChatRequest, type ChatRequestLimits, type RawPrompt } from './chat-request.ts';
import { wellFormed } from './content.ts';

/** Every request field of OpenAI's completions reference (docs/api.md has what each does here). */
export const COMPLETION_FIELDS: ReadonlySet<string> = new Set([
  'model',
  'prompt',
  'best_of',
  'echo',
  'frequency_penalty',
  'logit_bias',
  'logprobs',
  'max_tokens',
  'n',
  'presence_penalty',
  'seed',
  'stop',
  'stream',
  'stream_options',
  'suffix',
  'temperature',
  'top_p',
  'user',
]);

/** Most alternatives per position of the completions `logprobs`, as OpenAI. */
export const MAX_COMPLETION_LOGPROBS = 5;
/** `max_tokens` when a completions request gives none, as OpenAI. */
export const DEFAULT_COMPLETION_TOKENS = 16;

/** A validated completions request: what every choice shares, and the prompts. */
export interface CompletionRequest {
  /** The shared fields as a chat request with no messages (`prompt` is set per choice). */
  base: ChatRequest;
  prompts: RawPrompt[];
  /** The completions `logprobs` (0…5: alternatives per position), null when not asked. */
  logprobs: number | null;
}

const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
const isTokenId = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < 2 ** 31;

/** `prompt` as OpenAI takes it: one or several, as text or token ids. */
function parsePrompts(v: unknown): RawPrompt[] {
  if (typeof v === 'string') return [{ text: wellFormed(v, 'prompt') }];
  if (!Array.isArray(v) || v.length === 0) {
    throw invalidInput(
      "Invalid 'prompt': expected a string, an array of strings, an array of token ids or an array of arrays of token ids.",
      'prompt',
    );
  }
  if (v.every((x) => typeof x === 'number')) {
    if (!v.every(isTokenId)) throw invalidInput("Invalid 'prompt': token ids must be integers ≥ 0.", 'prompt');
    return [{ tokens: v as number[] }];
  }
  return v.map((p, i): RawPrompt => {
    if (typeof p === 'string') return { text: wellFormed(p, `prompt[${i}]`) };
    if (Array.isArray(p) && p.length > 0 && p.every(isTokenId)) return { tokens: p as number[] };
    throw invalidInput(`Invalid 'prompt[${i}]': expected a string or a non-empty array of token ids (integers ≥ 0).`, `prompt[${i}]`);
  });
}

/** Validates a parsed JSON body; throws `TurnstreamError(INVALID_INPUT)` on the first problem. */
export function parseCompletionRequest(body: unknown, limits: ChatRequestLimits = {}): CompletionRequest {
  if (!isObj(body)) throw invalidInput('the request body must be a JSON object');
  if (body.model !== undefined && typeof body.model !== 'string') throw invalidInput('model must be a string', 'model');
  if (body.prompt === undefined || body.prompt === null) throw invalidInput("Missing required parameter: 'prompt'.", 'prompt');
  const prompts = parsePrompts(body.prompt);
  const echo = body.echo ?? false;
  if (typeof echo !== 'boolean') throw invalidInput("Invalid type for 'echo': expected a boolean.", 'echo');
  // With `echo` a completion may be the prompt alone (scoring it: max_tokens 0).
  const common = parseCommon(body, limits.maxTokensLimit ?? 262_144, echo ? 0 : 1, COMPLETION_FIELDS);
  const n = common.n ?? 1;
  if (prompts.length * n > MAX_N) {
    throw invalidInput(`Invalid 'n': ${prompts.length} prompts × n = ${prompts.length * n} choices, more than ${MAX_N}.`, 'n');
  }
  const bestOf = body.best_of;
  if (bestOf !== undefined && bestOf !== null) {
    if (typeof bestOf !== 'number' || !Number.isInteger(bestOf) || bestOf < 1 || bestOf > 20)
      throw invalidInput("Invalid 'best_of': expected an integer between 1 and 20.", 'best_of');
    if (bestOf !== n) {
      throw invalidInput(
        `'best_of' other than 'n' is not supported: ask for n = ${bestOf} choices and pick by their logprobs (this gateway returns every choice it generates).`,
        'best_of',
      );
    }
  }
  const lp = body.logprobs;
  let logprobs: number | null = null;
  if (lp !== undefined && lp !== null) {
    if (typeof lp !== 'number' || !Number.isInteger(lp) || lp < 0 || lp > MAX_COMPLETION_LOGPROBS)
      throw invalidInput(`Invalid 'logprobs': expected an integer between 0 and ${MAX_COMPLETION_LOGPROBS}.`, 'logprobs');
    logprobs = lp;
  }
  const suffix = body.suffix;
  if (suffix !== undefined && suffix !== null && typeof suffix !== 'string')
    throw invalidInput("Invalid type for 'suffix': expected a string.", 'suffix');
  return {
    base: {
      ...common,
      maxTokens: common.maxTokens ?? DEFAULT_COMPLETION_TOKENS,
      messages: [],
      tools: null,
      toolChoice: null,
      logprobs: logprobs !== null,
      topLogprobs: logprobs,
      metadata: {},
      echo,
      suffix: typeof suffix === 'string' && suffix ? suffix : null,
    },
    prompts,
    logprobs,
  };
}
