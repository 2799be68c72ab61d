/**
 * The distribution a sample's tokens were drawn from, as the trainer scores it
 * (docs/design/algorithms.md §10): the serving engine (llama.cpp's chain, and the built-in
 * sampler) keeps the top-p nucleus of the model's own distribution, then divides the logits by
 * the temperature and renormalises. Every log-prob of the step (π_θ, π_old, the reference, a
 * deferred teacher) is taken under the same transform, so the policy trained is the one that
 * sampled, and the engine's recorded log-probs differ from π_old by the engines alone.
 *
 * The nucleus is the trainer's own (from its logits at temperature 1), united with the sampled
 * token: the engine drew it, so it was in the engine's nucleus, and a quantized engine's nucleus
 * can differ from the trainer's at its edge. The nucleus is found among the `NUCLEUS_SEARCH`
 * likeliest tokens; a distribution so flat that they hold less than top-p keeps every token.
 */
import * as tf from '@tensorflow/tfjs';
import type { Sample } from '../../schemas/index.ts';

/** Likeliest tokens searched for the top-p nucleus. */
export const NUCLEUS_SEARCH = 2048;

/** What of a sample says how its tokens were drawn. */
export type Sampling = Pick<Sample, 'samplingTemperature' | 'samplingTopP'>;

/** The temperature a sample is scored at: its own, or 1 for greedy (0) and unset. */
export const scoringTemperature = (s: Sampling): number => (s.samplingTemperature && s.samplingTemperature > 0 ? s.samplingTemperature : 1);

/** Whether scoring `s` changes the logits at all. */
export const reshapes = (s: Sampling): boolean => scoringTemperature(s) !== 1 || (s.samplingTopP ?? 1) < 1;

/**
 * The nucleus of each position ∪ the sampled token, as a bool [R, V], or null when top-p is 1.
 * Take it outside a gradient tape: it has no gradient, and `sampledLogits` inside one takes it given.
 */
export function nucleusOf(logits: tf.Tensor2D, s: Sampling, targets: readonly number[]): tf.Tensor2D | null {
  const topP = s.samplingTopP ?? 1;
  if (topP >= 1) return null;
  return tf.tidy(() => {
    const [R, V] = logits.shape;
    const probs = tf.softmax(logits);
    const { values } = tf.topk(probs, Math.min(V, NUCLEUS_SEARCH));
    // The nucleus ends at the first token whose cumulative mass reaches top-p (that token kept).
    const before = tf.sub(tf.cumsum(values, 1), values);
    const kept = tf.cast(tf.less(before, topP), 'float32');
    const reached = tf.greaterEqual(tf.sum(tf.mul(values, kept), 1, true), topP);
    const smallest = tf.min(tf.add(values, tf.mul(tf.sub(1, kept), 2)), 1, true);
    const threshold = tf.where(reached, smallest, tf.zerosLike(smallest));
    const drawn = tf.oneHot(tf.tensor1d(padTo(targets, R), 'int32'), V);
    return tf.logicalOr(tf.greaterEqual(probs, threshold), tf.greater(drawn, 0)) as tf.Tensor2D;
  });
}

/**
 * Logits [R, V] → the logits of the sampling distribution (÷ T, −1e9 outside the nucleus ∪
 * `targets`), differentiable through the kept entries; the same tensor when nothing changes.
 * `nucleus`: {@link nucleusOf} taken before, when this runs under a gradient tape.
 */
export function sampledLogits(logits: tf.Tensor2D, s: Sampling, targets: readonly number[], nucleus?: tf.Tensor2D | null): tf.Tensor2D {
  if (!reshapes(s)) return logits;
  const T = scoringTemperature(s);
  return tf.tidy(() => {
    const scaled = T === 1 ? logits : (tf.div(logits, T) as tf.Tensor2D);
    const inSet = nucleus === undefined ? nucleusOf(logits, s, targets) : nucleus;
    return inSet ? (tf.where(inSet, scaled, tf.fill(logits.shape, -1e9)) as tf.Tensor2D) : scaled;
  });
}

type RowSampling = { sample: Sampling; targets: readonly number[] };

/** Each row's logits under its sample's sampling distribution (see {@link sampledLogits}). */
export function sampledRows(logits: tf.Tensor2D[], rows: readonly RowSampling[], nuclei?: Array<tf.Tensor2D | null>): tf.Tensor2D[] {
  return logits.map((l, i) => sampledLogits(l, rows[i].sample, rows[i].targets, nuclei?.[i]));
}

/** Each row's {@link nucleusOf}. */
export const nucleiOf = (logits: tf.Tensor2D[], rows: readonly RowSampling[]): Array<tf.Tensor2D | null> =>
  logits.map((l, i) => nucleusOf(l, rows[i].sample, rows[i].targets));

const padTo = (v: readonly number[], n: number): number[] => Array.from({ length: n }, (_, i) => v[i] ?? 0);
