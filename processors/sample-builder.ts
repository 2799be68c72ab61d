/**
 * The sample builder service: judgements → samples (keyed by session). Teacher calls (OPD) run in
 * the runtime's bounded pool; a teacher that fails retriably is retried with backoff by the
 * runtime, then the judgement goes to the DLQ with the reason. Without a teacher, a fetched batch
 * goes in one call.
 */
import type { Judgement, Sample } from '../schemas/index.ts';
import { counter, runProcessor, type ProcessorHandle } from '../streams/index.ts';
import { buildSample, type SampleBuilderOptions } from './sample-builder/index.ts';
import { defaultGroupId, type ServiceOptions } from './service-options.ts';

export interface SampleBuilderServiceOptions extends ServiceOptions, SampleBuilderOptions {}

const metrics = {
  samples: counter('turnstream_samples_total', 'Samples emitted', ['method', 'kind']),
  skipped: counter('turnstream_samples_skipped_total', 'Judgements that gave no sample', ['reason']),
};

export function startSampleBuilder(options: SampleBuilderServiceOptions): Promise<ProcessorHandle> {
  /** The judgement's sample, or null; counted into `tally` (`kind` or `skip:reason`), which goes to the metrics once the call succeeded. */
  const buildOne = async (judgement: Judgement, signal: AbortSignal, tally: Map<string, number>): Promise<Sample | null> => {
    const { sample, skipped } = await buildSample(judgement, options, { signal });
    const key = sample ? `${sample.method}:${kindOf(sample)}` : `skip:${skipped ?? 'unknown'}`;
    tally.set(key, (tally.get(key) ?? 0) + 1);
    return sample;
  };
  const record = (tally: Map<string, number>) => {
    for (const [key, n] of tally) {
      const [a, b] = key.split(':') as [string, string];
      if (a === 'skip') metrics.skipped.inc({ reason: b }, n);
      else metrics.samples.inc({ method: a, kind: b }, n);
    }
  };
  const common = {
    name: 'sample-builder',
    kafka: options.kafka,
    codecs: options.codecs,
    groupId: options.groupId ?? defaultGroupId('sample-builder', options.codecs.naming),
    instanceId: options.instanceId,
    concurrency: options.concurrency,
    sessionTimeoutMs: options.sessionTimeoutMs,
    logger: options.logger,
    inputs: ['judgements' as const],
  };
  if (!options.teacher) {
    // No teacher call: building is pure and quick, so a fetched batch goes in one call.
    return runProcessor({
      ...common,
      async handleBatch(records, ctx) {
        const tally = new Map<string, number>();
        for (const r of records) {
          const sample = await buildOne(r.value as Judgement, ctx.signal, tally);
          if (sample) ctx.emit('samples', sample.sessionId, sample);
        }
        record(tally);
      },
    });
  }
  // A teacher call per judgement: they run side by side in the runtime's pool.
  return runProcessor({
    ...common,
    async handle(r, ctx) {
      const tally = new Map<string, number>();
      const sample = await buildOne(r.value as Judgement, ctx.signal, tally);
      if (sample) ctx.emit('samples', sample.sessionId, sample);
      record(tally);
    },
  });
}

function kindOf(sample: Sample): string {
  if (sample.lossMask.every((m) => m === 0)) return 'masked';
  if (sample.teacherLogprobs || sample.teacherPromptTokens) return sample.reward !== 0 ? 'both' : 'teacher';
  return 'reward';
}
