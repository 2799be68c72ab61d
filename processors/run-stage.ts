/**
 * A stateless stage on the processor runtime: each input becomes at most one output. Quick, pure
 * work (the embedded judge, a sample without a teacher) takes a fetched batch per call; work that
 * calls a model takes one record per call, so records run side by side in the runtime's pool and
 * each commits when it is done. Metrics are added once per call, from a tally: a labelled update
 * costs about as much as the embedded judge.
 */
import type { TopicId } from '../schemas/index.ts';
import { runProcessor, type ProcessorHandle, type TopicValues } from '../streams/index.ts';
import { defaultGroupId, type ServiceOptions } from './service-options.ts';

export type Tally = Map<string, number>;

export interface Stage<In, Out extends TopicId> {
  name: string;
  input: TopicId;
  output: Out;
  /** A fetched batch per call (quick, pure work), else one record per call. */
  batched: boolean;
  /** The output of one input (its key and value), or null; `count` tallies what happened. */
  each(value: In, signal: AbortSignal, count: (what: string) => void): Promise<{ key: string; value: TopicValues[Out] } | null>;
  /** Adds a call's tally to the metrics, once the call succeeded. */
  record(tally: Tally): void;
}

export function runStage<In, Out extends TopicId>(options: ServiceOptions, stage: Stage<In, Out>): Promise<ProcessorHandle> {
  const common = {
    name: stage.name,
    kafka: options.kafka,
    codecs: options.codecs,
    groupId: options.groupId ?? defaultGroupId(stage.name, options.codecs.naming),
    instanceId: options.instanceId,
    concurrency: options.concurrency,
    sessionTimeoutMs: options.sessionTimeoutMs,
    logger: options.logger,
    inputs: [stage.input],
  };
  const call = async (values: unknown[], signal: AbortSignal, emit: (key: string, value: TopicValues[Out]) => void) => {
    const tally: Tally = new Map();
    const count = (what: string) => void tally.set(what, (tally.get(what) ?? 0) + 1);
    for (const v of values) {
      const out = await stage.each(v as In, signal, count);
      if (out) emit(out.key, out.value);
    }
    stage.record(tally);
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
