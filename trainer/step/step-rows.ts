/**
 * A step's samples as rows: the (possibly cut) sequence and its response's per-token data,
 * padded into [rows, R] tensors; the content order a batch is walked in.
 */
import * as tf from '@tensorflow/tfjs';
import type { Sample } from '../../schemas/index.ts';
import type { SequenceRow } from '../trainable-policy.ts';
import type { StepSample } from './step-types.ts';

export interface Packed {
  x: number[][];
  y: number[][];
  mask: number[][];
  rollout: number[][];
  teacher: number[][];
  hasTeacher: number[];
  reward: number[];
  weight: number[];
  stale: number[];
  topK: { ids: number[][][]; lps: number[][][]; has: number[] } | null;
  samples: Sample[];
  skipped: number;
}

/** Samples → right-padded [B, T] arrays; response token i of a sample sits at target position P−1+i. */
export function packBatch(items: StepSample[], contextLength: number): Packed {
  const ok = items.filter(({ sample: s }) => fits(s, contextLength));
  const T = Math.max(1, ...ok.map(({ sample: s }) => s.tokens.length - 1));
  const K = Math.max(0, ...ok.map(({ sample: s }) => s.teacherTopK?.[0]?.ids.length ?? 0));
  const p: Packed = {
    x: [],
    y: [],
    mask: [],
    rollout: [],
    teacher: [],
    hasTeacher: [],
    reward: [],
    weight: [],
    stale: [],
    topK: K > 0 ? { ids: [], lps: [], has: [] } : null,
    samples: [],
    skipped: items.length - ok.length,
  };
  for (const { sample: s, stale } of ok) {
    const row = (fill: number): number[] => new Array<number>(T).fill(fill);
    const x = row(0);
    const y = row(0);
    const mask = row(0);
    const rollout = row(0);
    const teacher = row(0);
    for (let t = 0; t < s.tokens.length - 1; t++) {
      x[t] = s.tokens[t];
      y[t] = s.tokens[t + 1];
    }
    const P = s.promptLength;
    for (let i = 0; i < s.responseLength; i++) {
      const t = P - 1 + i;
      mask[t] = s.lossMask[i] ?? 0;
      rollout[t] = s.rolloutLogprobs[i] ?? 0;
      teacher[t] = s.teacherLogprobs?.[i] ?? 0;
    }
    p.x.push(x);
    p.y.push(y);
    p.mask.push(mask);
    p.rollout.push(rollout);
    p.teacher.push(teacher);
    const hasTopK = K > 0 && topKOk(s, K);
    p.hasTeacher.push(s.teacherLogprobs !== null && !hasTopK ? 1 : 0);
    p.reward.push(s.reward);
    p.weight.push(s.weight);
    p.stale.push(stale ? 1 : 0);
    if (p.topK) {
      const ids: number[][] = [];
      const lps: number[][] = [];
      for (let t = 0; t < T; t++) {
        const i = t - (P - 1);
        const e = hasTopK && i >= 0 && i < s.responseLength ? s.teacherTopK![i] : null;
        ids.push(e ? e.ids : Array.from({ length: K }, (_, k) => k));
        lps.push(e ? e.logprobs : new Array<number>(K).fill(-30));
      }
      p.topK.ids.push(ids);
      p.topK.lps.push(lps);
      p.topK.has.push(hasTopK ? 1 : 0);
    }
    p.samples.push(s);
  }
  return p;
}

export const fits = (s: Sample, contextLength: number): boolean =>
  s.tokens.length <= contextLength && s.tokens.length === s.promptLength + s.responseLength && s.promptLength >= 1 && s.responseLength >= 1;

export const topKOk = (s: Sample, K: number): boolean =>
  s.teacherTopK !== null && s.teacherTopK.length === s.responseLength && s.teacherTopK.every((e) => e.ids.length === K);

/** One sample's row of the step: the (possibly cut) sequence and its response's per-token data. */

export interface Row {
  sample: Sample;
  stale: boolean;
  seq: SequenceRow;
  targets: number[];
  mask: number[];
  cut: number;
}

export function toRow({ sample: s, stale }: StepSample, maxTokens: number): Row {
  const cut = Math.max(0, s.tokens.length - 1 - maxTokens);
  const head = keptHead(s, cut, maxTokens);
  const ids = [...s.tokens.slice(0, head), ...s.tokens.slice(head + cut, -1)];
  const P = s.promptLength - cut;
  const R = s.responseLength;
  return {
    sample: s,
    stale: stale === true,
    seq: { ids, positions: Array.from({ length: R }, (_, i) => P - 1 + i) },
    targets: s.tokens.slice(s.promptLength, s.promptLength + R),
    mask: Array.from({ length: R }, (_, i) => s.lossMask[i] ?? 0),
    cut,
  };
}

/**
 * Where a sample longer than one pass is cut (docs/design/algorithms.md §10): the whole response
 * is kept, and of the prompt its head (the system message and the first user message: the task,
 * `promptHeadTokens`) and as much of its end as fits; `cut` tokens go from the middle. Without a
 * known head, the first quarter of the pass is kept. A prompt too short to keep its head loses
 * its left instead.
 */
export function keptHead(s: Pick<Sample, 'promptLength' | 'promptHeadTokens'>, cut: number, maxTokens: number): number {
  if (cut === 0) return 0;
  const wanted = s.promptHeadTokens && s.promptHeadTokens > 0 ? s.promptHeadTokens : Math.floor(maxTokens / 4);
  // The last prompt token stays: its logits score the response's first token.
  return Math.max(0, Math.min(wanted, s.promptLength - 1 - cut));
}

/** Per-row [R_i, V] logits → [b, R, V] padded with zero rows, and the picked log-probs [b, R]. */

export function padLogits(logits: tf.Tensor2D[], R: number): tf.Tensor3D {
  return tf.stack(
    logits.map((l) =>
      l.shape[0] === R
        ? l
        : tf.pad(l, [
            [0, R - l.shape[0]],
            [0, 0],
          ]),
    ),
  ) as tf.Tensor3D;
}

export function pick(logits: tf.Tensor3D, targets: tf.Tensor2D, mask: tf.Tensor2D): tf.Tensor2D {
  const V = logits.shape[2];
  const picked = tf.sum(tf.mul(tf.logSoftmax(logits), tf.oneHot(targets, V)), -1) as tf.Tensor2D;
  return tf.where(tf.greater(mask, 0), picked, tf.zerosLike(picked)) as tf.Tensor2D;
}

export const padRow = (v: number[], R: number, fill = 0): number[] => [...v, ...new Array<number>(R - v.length).fill(fill)];

/** What a micro-batch keeps from before the update to after it. */

export type TopKEntries = NonNullable<Sample['teacherTopK']>;

export function topKRows(entries: TopKEntries | null, length: number, R: number, K: number, field: 'ids' | 'lps'): number[][] {
  const out: number[][] = [];
  for (let i = 0; i < R; i++) {
    const e = entries && i < length ? entries[i] : null;
    if (field === 'ids') out.push(e ? e.ids : Array.from({ length: K }, (_, k) => k));
    else out.push(e ? e.logprobs : new Array<number>(K).fill(-30));
  }
  return out;
}

/**
 * Orders a batch by what its samples hold. The step's sums and the reward baseline's updates
 * depend on the order of the samples, and samples from several Kafka partitions arrive in an
 * order of their own: sorted, one set of samples makes one update, however it arrived (in-process
 * and `eval --pipeline` parted on exactly this).
 */
export function byContent(a: StepSample, b: StepSample): number {
  const x = a.sample;
  const y = b.sample;
  const n = Math.min(x.tokens.length, y.tokens.length);
  for (let i = 0; i < n; i++) if (x.tokens[i] !== y.tokens[i]) return x.tokens[i] - y.tokens[i];
  return (
    x.tokens.length - y.tokens.length ||
    x.reward - y.reward ||
    compareStrings(x.userId ?? '', y.userId ?? '') ||
    x.weight - y.weight ||
    x.policyVersion - y.policyVersion ||
    Number(a.stale ?? false) - Number(b.stale ?? false)
  );
}

const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** One PPO/OPD step on `items`, in content order; the policy's variables are updated in place. */
