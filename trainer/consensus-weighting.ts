/**
 * Consensus weighting of a training batch (docs/design/algorithms.md §7, "many users, one model"): every
 * sample is folded into a `UserConsensus` as `{ userId, prompt: the last user message of its
 * prompt, response, reward sign }`, and its loss weight becomes `sample.weight × f(user)`, with
 * `f = min(1, w / w_prior)`: `w` is the user's agreement-with-the-others weight (how well what they
 * reward matches what the others reward, trainer/user-consensus.ts) AFTER the whole batch was
 * observed (so a contradiction inside one batch already counts for that batch; the weights are
 * recomputed once per batch), measured against a stranger's (the prior, 0.8).
 *
 * Why relative: only evidence against a user should lower what their feedback moves. With `w`
 * itself, a lone user (nobody to compare with) trained at 0.8 forever — a weaker policy term
 * against the same KL penalty — and `eval --pipeline` parted from the in-process loop (no crowd to
 * weigh) at its first version; with the relative factor it replays it. The batcher's per-user share
 * cap is independent of this and still applies.
 */
import type { Sample } from '../schemas/index.ts';
import type { StepSample } from './learner-step.ts';
import { ByteTokenizer } from '../policy/index.ts';
import type { UserConsensus } from './user-consensus.ts';

const tok = new ByteTokenizer();

/**
 * The last user message of a prompt rendered by the chat template
 * (`<|bos|>` (`<|role|>` content `<|end|>`)* `<|assistant|>`); the whole decoded prompt when it
 * has no user segment.
 */
export function lastUserMessage(promptIds: readonly number[]): string {
  const user = tok.special('<|user|>');
  const end = tok.special('<|end|>');
  const start = promptIds.lastIndexOf(user);
  if (start < 0) return tok.decode(promptIds, { skipSpecial: true });
  let stop = promptIds.indexOf(end, start + 1);
  if (stop < 0) stop = promptIds.length;
  return tok.decode(promptIds.slice(start + 1, stop), { skipSpecial: true });
}

/** A sample's prompt and response as text: how the trained model's tokenizer reads them. */
export type SampleText = (sample: Sample) => { prompt: string; response: string };

/** The built-in model's reading: the last user message of the prompt, and the response. */
export const builtinSampleText: SampleText = (sample) => ({
  prompt: lastUserMessage(sample.tokens.slice(0, sample.promptLength)),
  response: tok.decode(sample.tokens.slice(sample.promptLength), { skipSpecial: true }),
});

/** The sample's turn as the consensus sees it. */
export function ratedTurnOf(
  sample: Sample,
  text: SampleText = builtinSampleText,
): { userId: string | null; prompt: string; response: string; reward: number } {
  return { userId: sample.userId, ...text(sample), reward: Math.sign(sample.reward) };
}

export interface WeighedBatch {
  /** The step's items, each sample's `weight` multiplied by its factor. */
  items: StepSample[];
  /** The consensus factor applied to each item, in (0, 1] (1 for all when weighting is off). */
  factors: number[];
}

/** Observes the batch, then scales each sample's weight by its user's consensus weight relative to a stranger's (at most 1). */
export function weighByConsensus(
  consensus: UserConsensus,
  items: readonly StepSample[],
  text: SampleText = builtinSampleText,
): WeighedBatch {
  for (const it of items) consensus.observe(ratedTurnOf(it.sample, text));
  const stranger = consensus.priorWeight();
  const factors = items.map((it) => Math.min(1, consensus.weight(it.sample.userId) / stranger));
  return {
    items: items.map((it, i) => ({ ...it, sample: { ...it.sample, weight: it.sample.weight * factors[i] } })),
    factors,
  };
}
