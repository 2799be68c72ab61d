/** A trainable RL sample for learner-step tests: the prompt's tokens, then the response's, every response token in the loss. */
import type { Sample } from '../../schemas/index.ts';
import { exampleSample } from './fixtures.ts';

/**
 * `prompt` then `response` as one RL sample, each response token recorded with log-prob `logprob`,
 * no teacher; `over` sets the rest. Made-up log-probs are no engine's: the sample is not exact
 * (no mismatch correction, no drift) unless `over` says so.
 */
export function rlSample(prompt: number[], response: number[], logprob: number, over: Partial<Sample> = {}): Sample {
  return exampleSample({
    tokens: [...prompt, ...response],
    promptLength: prompt.length,
    responseLength: response.length,
    lossMask: response.map(() => 1),
    rolloutLogprobs: response.map(() => logprob),
    teacherLogprobs: null,
    teacherTopK: null,
    method: 'RL',
    exactLogprobs: false,
    ...over,
  });
}
