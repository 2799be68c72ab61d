/** A trainable RL sample for learner-step tests: the prompt's tokens, then the response's, every response token in the loss. */
import type { Sample } from '../../schemas/index.ts';
import { exampleSample } from './fixtures.ts';

/** `prompt` then `response` as one RL sample, each response token sampled with log-prob `logprob`, no teacher; `over` sets the rest. */
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
    ...over,
  });
}
