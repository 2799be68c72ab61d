/**
 * A stateless stage on the processor runtime: each input becomes at most one output. Quick, pure
 * work (the embedded judge, a sample without a teacher) takes a fetched batch per call; work that
 * calls a model takes one record per call, so records run side by side in the runtime's pool and
 * each commits when it is done. Metrics are added once per call, from a tally: a labelled update
 * costs about as much as the embedded judge.
 */
import type { TopicId } from '../schemas/index.ts';
import { runProcessor, type ProcessorHandle, type TopicValues } from '../streams/index.ts';
import type { Counter, LabelValues } from '../core/index.ts';
import { serviceRuntime, type ServiceOptions } from './service-options.ts';

/** Counter increments of one call, by counter and labels; added once the call succeeded. */
export class Tally {
  private readonly counts = new Map<Counter<string>, Map<string, { labels: LabelValues<string>; n: number }>>();

  count(counter: Counter<string>, labels: LabelValues<string>): void {
    let byLabels = this.counts.get(counter);
    if (!byLabels) this.counts.set(counter, (byLabels = new Map()));
    const key = JSON.stringify(labels);
    const had = byLabels.get(key);
    if (had) had.n++;
    else byLabels.set(key, { labels, n: 1 });
  }

  /** Adds everything counted to the counters. */
  flush(): void {
    for (const [counter, byLabels] of this.counts) for (const { labels, n } of byLabels.values()) counter.inc(labels, n);
  }
}

export interface Stage<In, Out extends TopicId> {
  name: string;
  input: TopicId;
  output: Out;
  /** A fetched batch per call (quick, pure work), else one record per call. */
  batched: boolean;
  /** The output of one input (its key and value), or null; `tally` counts what happened. */
  each(value: In, signal: AbortSignal, tally: Tally): Promise<{ key: string; value: TopicValues[Out] } | null>;
}

export function runStage<In, Out extends TopicId>(options: ServiceOptions, stage: Stage<In, Out>): Promise<ProcessorHandle> {
  const common = {
    ...serviceRuntime(stage.name, options),
    inputs: [stage.input],
  };
  const call = async (values: unknown[], signal: AbortSignal, emit: (key: string, value: TopicValues[Out]) => void) => {
    const tally = new Tally();
    for (const v of values) {
      const out = await stage.each(v as In, signal, tally);
      if (out) emit(out.key, out.value);
    }
    tally.flush();
  };
  if (stage.batched) {
    return runProcessor({
      ...common,
      handleBatch: (records, ctx) =>
        call(
          records.map((r) => r.value),
          ctx.signal,
          (k, v) => ctx.emit(stage.output, k, v),
        ),
    });
  }
  return runProcessor({
    ...common,
    handle: (record, ctx) => call([record.value], ctx.signal, (k, v) => ctx.emit(stage.output, k, v)),
  });
}
