/**
 * A replay batch's judging: each pair judged, and each judgement built into a sample, with
 * bounded concurrency (an LLM judge is the only bound) and the runtime's handler retry.
 */
import type { Judgement, Sample, TurnPair } from '../schemas/index.ts';
import { buildSample, isTrainable, type Judge, type SampleBuilderOptions } from '../processors/index.ts';
import { retry } from '../core/index.ts';

/** What became of one pair. */
export interface Outcome {
  pair: TurnPair;
  judgement?: Judgement;
  sample?: Sample | null;
  failed?: { stage: 'judge' | 'sample-builder'; error: unknown; attempts: number };
}

export interface JudgeBatchOptions {
  judge: Judge;
  samples?: SampleBuilderOptions;
  /** Judge and teacher calls in flight. */
  concurrency: number;
  /** Judge untokenized (imported) turns too. */
  judgeUntrainable: boolean;
  signal?: AbortSignal;
}

/** Runs `f` over `items` with at most `limit` calls in flight; results in order. */
async function mapLimit<T, R>(items: T[], limit: number, f: (x: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await f(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** The runtime's handler retry (core/retry.ts): a retriable failure is tried again with backoff, up to `attempts`. */
async function attempt<R>(
  f: () => Promise<R>,
  attempts: number,
  signal?: AbortSignal,
): Promise<{ value?: R; error?: unknown; attempts: number }> {
  let n = 0;
  try {
    const value = await retry(
      () => {
        n++;
        return f();
      },
      { attempts, baseMs: 200, maxMs: 5000, signal },
    );
    return { value, attempts: n };
  } catch (error) {
    return { error, attempts: Math.max(1, n) };
  }
}

/** Judges the pairs and builds their samples; a pair whose judge or sample builder keeps failing says so in its outcome. */
export function judgeBatch(pairs: TurnPair[], o: JudgeBatchOptions): Promise<Outcome[]> {
  return mapLimit(pairs, o.concurrency, async (pair): Promise<Outcome> => {
    if (!o.judgeUntrainable && !isTrainable(pair.turn)) return { pair };
    const j = await attempt(() => o.judge.judge(pair, { signal: o.signal }), 5, o.signal);
    if (!j.value) return { pair, failed: { stage: 'judge', error: j.error, attempts: j.attempts } };
    const judgement = j.value;
    const b = await attempt(() => buildSample(judgement, o.samples ?? {}, { signal: o.signal }), 5, o.signal);
    if (!b.value) return { pair, judgement, failed: { stage: 'sample-builder', error: b.error, attempts: b.attempts } };
    return { pair, judgement, sample: b.value.sample };
  });
}
