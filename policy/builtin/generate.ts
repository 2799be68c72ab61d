import * as tf from '@tensorflow/tfjs';
import { ErrorCodes, TurnstreamError, invalidInput, mulberry32 } from '../../core/index.ts';
import { disposeCache, type KvCache, type TransformerModel } from './model.ts';
import { ByteTokenizer } from './tokenizer.ts';

export interface GenerateOptions {
  /**
   * Most tokens to generate (the stop token counts). Also capped so that prompt + response fit
   * the model's context length.
   * @default 128
   */
  maxTokens?: number;
  /**
   * Sampling temperature; 0 is greedy (argmax).
   * @default 1
   */
  temperature?: number;
  /**
   * Nucleus sampling: sample from the smallest set of tokens whose probability reaches `topP`.
   * @default 1
   */
  topP?: number;
  /** Strings that end the answer; the stop string is not part of the returned text. */
  stop?: string[];
  /**
   * Seed of the sampler's PRNG; the same seed, prompt and weights give the same tokens.
   * @default a random seed
   */
  seed?: number;
  /** Aborts generation with `TurnstreamError(ABORTED)` between tokens. */
  signal?: AbortSignal;
  /**
   * Tokenizer that turns ids into text (stop strings, streaming text).
   * @default a ByteTokenizer
   */
  tokenizer?: ByteTokenizer;
  /**
   * Also report the `topLogprobs` most likely tokens of each step (`GeneratedToken.top`); 0 adds
   * nothing and costs nothing.
   * @default 0
   */
  topLogprobs?: number;
}

export type FinishReason = 'stop' | 'length';

export interface GeneratedToken {
  /** The token id, as generated (also the ids of a stop string and the final `<|end|>`). */
  id: number;
  /**
   * log π(id | prefix) under the model at temperature 1 (its plain log-softmax), whatever the
   * sampling temperature or top-p: the quantity the trainer's ratio and `score()` use.
   */
  logprob: number;
  /**
   * log-prob of `id` under the distribution it was drawn from (top-p, then temperature; see
   * {@link drawFrom}): what a Turn records, and the trainer scores.
   */
  drawnLogprob: number;
  /**
   * Text released by this token: '' while a UTF-8 character is incomplete or the text could be
   * the start of a stop string. The concatenation of all `text` is the answer, without the stop
   * string and without special tokens.
   */
  text: string;
  /**
   * The `topLogprobs` most likely ids of this step with their log-probs (temperature 1, like
   * `logprob`), most likely first (ties: lower id first). Only when `topLogprobs` > 0.
   */
  top?: Array<{ id: number; logprob: number }>;
  /** Set on the last token only. */
  finishReason?: FinishReason;
}

/** log-softmax of one row of logits, in float64. */
export function logSoftmaxRow(logits: ArrayLike<number>): Float64Array {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) if (logits[i] > max) max = logits[i];
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp(logits[i] - max);
  const lse = max + Math.log(sum);
  const out = new Float64Array(logits.length);
  for (let i = 0; i < logits.length; i++) out[i] = logits[i] - lse;
  return out;
}

/** Picks a token from log-probs with top-p and temperature; temperature 0 is argmax. */
export function sampleToken(logp: Float64Array, temperature: number, topP: number, rand: () => number): number {
  return drawFrom(logp, temperature, topP, rand).id;
}

/**
 * Draws a token as llama.cpp's chain does (the engines share one convention, which the trainer
 * scores): the top-p nucleus of the model's own distribution, then its log-probs ÷ temperature,
 * renormalised over the nucleus. Returns the id and its log-prob under that distribution
 * (temperature 0: the argmax and its own log-prob).
 */
export function drawFrom(logp: Float64Array, temperature: number, topP: number, rand: () => number): { id: number; logprob: number } {
  if (temperature <= 0) {
    let best = 0;
    for (let i = 1; i < logp.length; i++) if (logp[i] > logp[best]) best = i;
    return { id: best, logprob: logp[best] };
  }
  const order = Array.from(logp, (_, i) => i).sort((a, b) => logp[b] - logp[a] || a - b);
  const keep: number[] = [];
  let cum = 0;
  for (const i of order) {
    keep.push(i);
    cum += Math.exp(logp[i]);
    if (cum >= topP) break;
  }
  const scaled = logSoftmaxRow(keep.map((i) => logp[i] / temperature));
  let r = rand();
  for (let k = 0; k < keep.length; k++) {
    r -= Math.exp(scaled[k]);
    if (r < 0) return { id: keep[k], logprob: scaled[k] };
  }
  return { id: keep[keep.length - 1], logprob: scaled[keep.length - 1] };
}

/** The `k` largest entries of `logp`, largest first (ties: lower id first); O(V·k), no sort of V. */
export function topK(logp: ArrayLike<number>, k: number): Array<{ id: number; logprob: number }> {
  const out: Array<{ id: number; logprob: number }> = [];
  if (k <= 0) return out;
  for (let id = 0; id < logp.length; id++) {
    const v = logp[id];
    if (out.length === k && !(v > out[k - 1].logprob)) continue;
    let at = out.length;
    while (at > 0 && v > out[at - 1].logprob) at--;
    out.splice(at, 0, { id, logprob: v });
    if (out.length > k) out.pop();
  }
  return out;
}

const defaultTokenizer = new ByteTokenizer();

function checkPrompt(model: TransformerModel, tokenizer: ByteTokenizer, promptIds: readonly number[]): void {
  if (promptIds.length === 0) throw invalidInput('prompt must have at least one token', 'promptIds');
  if (promptIds.length >= model.config.contextLength) {
    throw invalidInput(
      `prompt of ${promptIds.length} tokens leaves no room in the context length ${model.config.contextLength}`,
      'promptIds',
    );
  }
  for (const id of promptIds) tokenizer.check(id);
  if (tokenizer.vocabSize !== model.config.vocabSize) {
    throw invalidInput(`tokenizer vocabulary ${tokenizer.vocabSize} ≠ model vocabulary ${model.config.vocabSize}`);
  }
}

/** Longest suffix of `text` that is a proper prefix of some stop string (held back). */
function heldBackLength(text: string, stops: readonly string[]): number {
  let best = 0;
  for (const s of stops) {
    for (let k = Math.min(s.length - 1, text.length); k > best; k--) {
      if (text.endsWith(s.slice(0, k))) {
        best = k;
        break;
      }
    }
  }
  return best;
}

const nextTick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Generates tokens one at a time with a KV cache, yielding each as soon as it is sampled and
 * giving the event loop a turn between tokens (so HTTP streaming is real and concurrent
 * generations interleave per token).
 *
 * Stops at `<|end|>` or `<|eos|>` (yielded, with finish reason `stop`), at a stop string
 * (its tokens are yielded with no text; finish reason `stop`), or after `maxTokens` tokens or
 * when prompt + response reach the context length (finish reason `length`). There is no sliding
 * window: the model has learned positions only up to its context length.
 */
export async function* generate(
  model: TransformerModel,
  promptIds: readonly number[],
  opts: GenerateOptions = {},
): AsyncGenerator<GeneratedToken, FinishReason, void> {
  const tokenizer = opts.tokenizer ?? defaultTokenizer;
  checkPrompt(model, tokenizer, promptIds);
  const maxTokens = opts.maxTokens ?? 128;
  const temperature = opts.temperature ?? 1;
  const topP = opts.topP ?? 1;
  if (!Number.isInteger(maxTokens) || maxTokens < 0) throw invalidInput('maxTokens must be an integer ≥ 0', 'maxTokens');
  if (!(temperature >= 0)) throw invalidInput('temperature must be ≥ 0', 'temperature');
  if (!(topP > 0 && topP <= 1)) throw invalidInput('topP must be in (0, 1]', 'topP');
  const topLogprobs = opts.topLogprobs ?? 0;
  if (!Number.isInteger(topLogprobs) || topLogprobs < 0) throw invalidInput('topLogprobs must be an integer ≥ 0', 'topLogprobs');
  const stops = (opts.stop ?? []).filter((s) => s.length > 0);
  const rand = mulberry32(opts.seed ?? Math.floor(Math.random() * 2 ** 32));
  const budget = Math.min(maxTokens, model.config.contextLength - promptIds.length);
  const decoder = tokenizer.streamDecoder();
  const checkAbort = (): void => {
    if (opts.signal?.aborted) throw new TurnstreamError(ErrorCodes.ABORTED, 'generation aborted', { cause: opts.signal.reason });
  };

  let cache: KvCache | null = null;
  let pending = '';
  try {
    if (budget <= 0) return 'length';
    checkAbort();
    let input = tf.tensor2d([Array.from(promptIds)], undefined, 'int32');
    for (let n = 1; ; n++) {
      const step = model.forwardWithCache(input, cache);
      input.dispose();
      disposeCache(cache);
      cache = step.cache;
      const T = step.logits.shape[1];
      const row = tf.tidy(() => tf.slice(step.logits, [0, T - 1, 0], [1, 1, -1]));
      step.logits.dispose();
      const logits = await row.data();
      row.dispose();
      checkAbort();

      const logp = logSoftmaxRow(logits);
      const { id, logprob: drawnLogprob } = drawFrom(logp, temperature, topP, rand);
      const token: GeneratedToken = { id, logprob: logp[id], drawnLogprob, text: '' };
      if (topLogprobs > 0) token.top = topK(logp, topLogprobs);
      if (id === tokenizer.end || id === tokenizer.eos) {
        token.text = pending + decoder.flush();
        token.finishReason = 'stop';
        yield token;
        return 'stop';
      }
      pending += decoder.push(id);
      const hit = stops.reduce((best, s) => {
        const i = pending.indexOf(s);
        return i >= 0 && (best < 0 || i < best) ? i : best;
      }, -1);
      if (hit >= 0) {
        token.text = pending.slice(0, hit);
        token.finishReason = 'stop';
        yield token;
        return 'stop';
      }
      if (n >= budget) {
        const rest = pending + decoder.flush();
        const end = stops.reduce((best, s) => {
          const i = rest.indexOf(s);
          return i >= 0 && i < best ? i : best;
        }, rest.length);
        token.text = rest.slice(0, end);
        token.finishReason = end < rest.length ? 'stop' : 'length';
        yield token;
        return token.finishReason;
      }
      const hold = heldBackLength(pending, stops);
      token.text = pending.slice(0, pending.length - hold);
      pending = pending.slice(pending.length - hold);
      yield token;
      await nextTick();
      checkAbort();
      input = tf.tensor2d([[id]], undefined, 'int32');
    }
  } finally {
    disposeCache(cache);
  }
}

/**
 * log π(response[i] | prompt, response[:i]) for each given response token, at temperature 1:
 * the same numbers `generate` reports for tokens it produced (used for the OPD teacher and to
 * recompute π_old). prompt + response must fit the context length.
 */
export async function scoreTokens(
  model: TransformerModel,
  promptIds: readonly number[],
  responseIds: readonly number[],
  tokenizer: ByteTokenizer = defaultTokenizer,
): Promise<number[]> {
  checkPrompt(model, tokenizer, promptIds);
  for (const id of responseIds) tokenizer.check(id);
  if (responseIds.length === 0) return [];
  const all = [...promptIds, ...responseIds];
  if (all.length > model.config.contextLength) {
    throw invalidInput(`prompt + response of ${all.length} tokens exceed the context length ${model.config.contextLength}`, 'responseIds');
  }
  const P = promptIds.length;
  const R = responseIds.length;
  const rows = tf.tidy(() => {
    const logits = model.forwardLogits(tf.tensor2d([all.slice(0, -1)], undefined, 'int32'));
    return tf.slice(logits, [0, P - 1, 0], [1, R, -1]);
  });
  const data = await rows.data();
  rows.dispose();
  const V = model.config.vocabSize;
  const out: number[] = [];
  for (let i = 0; i < R; i++) out.push(logSoftmaxRow(data.subarray(i * V, (i + 1) * V))[responseIds[i]]);
  return out;
}
